/**
 * The tenancy check's one read on DynamoDB (adapters/store/dynamodb/tenancy-reads.ts) against dynalite: the agent and
 * the knowledge base of a request in one BatchGetItem, each as its own store reads it (internal index keys left out),
 * and a missing one answered as undefined.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoAgentStore } from '#adapters/store/dynamodb/agent-store';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { DynamoTenancyReads } from '#adapters/store/dynamodb/tenancy-reads';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

let dynamo: LocalDynamo;
let reads: DynamoTenancyReads;
let agents: DynamoAgentStore;
let knowledgeBases: DynamoKnowledgeBaseStore;

const AT = '2026-01-01T00:00:00.000Z';

beforeAll(async () => {
  dynamo = await startDynalite();
  const agentsTable = await dynamo.createTable('agents', TABLES.agents);
  const knowledgeBasesTable = await dynamo.createTable('knowledgeBases', TABLES.knowledgeBases);
  reads = new DynamoTenancyReads(dynamo.client, agentsTable, knowledgeBasesTable);
  agents = new DynamoAgentStore(dynamo.client, agentsTable);
  knowledgeBases = new DynamoKnowledgeBaseStore(dynamo.client, knowledgeBasesTable);
  await agents.put({ organizationId: 'org-a', agentId: 'agent-1', displayName: 'One', createdAt: AT });
  await dynamo.client.send(
    new PutCommand({
      TableName: knowledgeBasesTable,
      // A row in the reindex index carries keys of its own, which no reader sees.
      Item: {
        organizationId: 'org-a',
        agentId: 'agent-1',
        knowledgeBaseId: 'kb-1',
        name: 'Manuals',
        description: null,
        createdAt: AT,
        updatedAt: AT,
        reindexKey: 'reindexing',
        reindexUpdatedAt: AT,
      },
    }),
  );
});

afterAll(() => dynamo?.stop());

it('reads the agent and the knowledge base together, as their stores read them', async () => {
  const both = await reads.agentAndKnowledgeBase('org-a', 'agent-1', 'kb-1');

  expect(both.agent).toEqual(await agents.get('org-a', 'agent-1'));
  expect(both.knowledgeBase).toEqual(await knowledgeBases.get('agent-1', 'kb-1'));
  expect(both.knowledgeBase).not.toHaveProperty('reindexKey');
  expect(both.knowledgeBase).toMatchObject({ organizationId: 'org-a', name: 'Manuals' });
});

it('answers a missing agent or knowledge base as undefined', async () => {
  expect(await reads.agentAndKnowledgeBase('org-a', 'agent-1', 'kb-nowhere')).toEqual({
    agent: expect.objectContaining({ agentId: 'agent-1' }),
    knowledgeBase: undefined,
  });
  expect(await reads.agentAndKnowledgeBase('org-b', 'agent-1', 'kb-1')).toEqual({
    agent: undefined,
    knowledgeBase: expect.objectContaining({ knowledgeBaseId: 'kb-1' }),
  });
});
