/**
 * The agent deletion job (core/processing/agent-deletion.ts) page by page, against the DynamoDB stores on dynalite
 * (the tables of lib/tables.ts), each queue message delivered by hand: what a page removes, a copy of a page, the
 * wait for the knowledge bases' own jobs, the row last, and the watchdog's resume of a job whose message was lost.
 */
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoAgentStore } from '#adapters/store/dynamodb/agent-store';
import { DynamoDefinitionStore, DynamoSessionStore } from '#adapters/store/dynamodb/flow-stores';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { DynamoRetrievalConfigStore } from '#adapters/store/dynamodb/retrieval-config-store';
import {
  type AgentDeletionDeps,
  resumeStuckAgentDeletions,
  runAgentDeletionPage,
  startAgentDeletion,
} from '#core/processing/agent-deletion';
import type { ProcessingMessage } from '#ports/services';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';
import { RecordingQueue, SettableClock } from '../../../helpers/in-memory-ports';

const ORG = 'org-a';
const CALLER = { organizationId: ORG, tokenId: 'token-a', scopes: ['dashboard'] };
let dynamo: LocalDynamo;
let deps: AgentDeletionDeps & { queue: RecordingQueue; clock: SettableClock };
let agentCount = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
  for (const table of ['agents', 'knowledgeBases', 'retrievalConfigs', 'agentDefinitions', 'sessions'] as const) {
    await dynamo.createTable(table, TABLES[table]);
  }
});
afterAll(() => dynamo.stop());

beforeEach(() => {
  deps = {
    agents: new DynamoAgentStore(dynamo.client, 'agents'),
    knowledgeBases: new DynamoKnowledgeBaseStore(dynamo.client, 'knowledgeBases'),
    retrievalConfigs: new DynamoRetrievalConfigStore(dynamo.client, 'retrievalConfigs'),
    definitions: new DynamoDefinitionStore(dynamo.client, 'agentDefinitions'),
    sessions: new DynamoSessionStore(dynamo.client, 'sessions'),
    queue: new RecordingQueue(),
    clock: new SettableClock(),
  };
});

/** An agent with a knowledge base, a definition and a configuration in production, and `sessions` sessions. */
async function seededAgent(sessions: number): Promise<string> {
  agentCount += 1;
  const agentId = `agent-${agentCount}`;
  const at = deps.clock.now().toISOString();
  await deps.agents.put({ organizationId: ORG, agentId, displayName: 'Doomed', createdAt: at });
  await deps.knowledgeBases.put({
    organizationId: ORG,
    agentId,
    knowledgeBaseId: `kb-${agentCount}`,
    name: 'Docs',
    description: null,
    createdAt: at,
    updatedAt: at,
  });
  await deps.definitions.put({
    agentId,
    environment: 'production',
    organizationId: ORG,
    definition: { flows: [] } as never,
    version: 1,
    updatedAt: at,
    hasSchedule: false,
  });
  await deps.retrievalConfigs.put({
    agentId,
    environment: 'production',
    enabled: true,
    knowledgeBases: [],
    updatedAt: at,
  } as never);
  for (let i = 0; i < sessions; i++) {
    const environment = i % 2 === 0 ? 'production' : 'staging';
    await dynamo.client.send(
      new PutCommand({
        TableName: 'sessions',
        Item: { sessionKey: `${agentId}#${environment}`, sessionId: `s-${String(i).padStart(4, '0')}` },
      }),
    );
  }
  return agentId;
}

const countOf = async (table: string, belongs: (item: Record<string, unknown>) => boolean) =>
  ((await dynamo.client.send(new ScanCommand({ TableName: table }))).Items ?? []).filter(belongs).length;

const sessionsOf = (agentId: string) =>
  countOf('sessions', (item) => String(item.sessionKey).startsWith(`${agentId}#`));

function lastMessage(): Extract<ProcessingMessage, { kind: 'delete-agent' }> {
  const message = deps.queue.messages.at(-1);
  if (message?.kind !== 'delete-agent') throw new Error(`expected delete-agent, got ${message?.kind}`);
  return message;
}

it('removes the flows first, starts the knowledge bases\u2019 jobs, sessions a page at a time, and the row last', async () => {
  const agentId = await seededAgent(150);
  const view = await startAgentDeletion(deps, CALLER, agentId);
  expect(view).toEqual({ agentId, status: 'deleting', startedAt: deps.clock.now().toISOString() });
  const page0 = lastMessage();
  expect(page0).toEqual({ kind: 'delete-agent', organizationId: ORG, agentId, page: 0 });

  expect(await runAgentDeletionPage(deps, page0)).toBe('ready');
  expect(await deps.definitions.get(agentId, 'production')).toBeUndefined();
  expect(await deps.retrievalConfigs.get(agentId, 'production')).toBeUndefined();
  expect((await deps.knowledgeBases.get(agentId, `kb-${agentCount}`))?.status).toBe('deleting');
  expect(deps.queue.messages.filter((m) => m.kind === 'delete-knowledge-base')).toHaveLength(1);
  expect(await sessionsOf(agentId)).toBe(50);
  const page1 = lastMessage();
  expect(page1.page).toBe(1);

  // A copy of page 0 does nothing once the job has moved past it.
  const sent = deps.queue.sent.length;
  expect(await runAgentDeletionPage(deps, page0)).toBe('skipped');
  expect(deps.queue.sent).toHaveLength(sent);

  expect(await runAgentDeletionPage(deps, page1)).toBe('ready');
  expect(await sessionsOf(agentId)).toBe(0);
  // No session left, the knowledge base still being deleted by its own job: the next page waits for it.
  const page2 = lastMessage();
  expect(await runAgentDeletionPage(deps, page2)).toBe('ready');
  expect(deps.queue.sent.at(-1)).toMatchObject({ message: { page: 3 }, delaySeconds: 5 });
  expect(await deps.agents.get(ORG, agentId)).toMatchObject({ status: 'deleting' });
  // Its knowledge base's job started only once.
  expect(deps.queue.messages.filter((m) => m.kind === 'delete-knowledge-base')).toHaveLength(1);

  // The knowledge base's job ends with its row; then the agent's row goes.
  expect(await deps.knowledgeBases.removeDeleted(agentId, `kb-${agentCount}`)).toBe(true);
  expect(await runAgentDeletionPage(deps, lastMessage())).toBe('ready');
  expect(await deps.agents.get(ORG, agentId)).toBeUndefined();
  expect(await startAgentDeletion(deps, CALLER, agentId).catch((e: Error) => e.name)).toBe('NotFoundError');
});

it('answers the running job again, and refuses a token restricted to agents', async () => {
  const agentId = await seededAgent(0);
  const first = await startAgentDeletion(deps, CALLER, agentId);
  deps.clock.set('2026-01-01T00:01:00.000Z');
  expect(await startAgentDeletion(deps, CALLER, agentId)).toEqual(first);
  expect(deps.queue.messages.filter((m) => m.kind === 'delete-agent')).toHaveLength(1);
  expect(await deps.agents.list(ORG).then((agents) => agents.map((a) => a.agentId))).not.toContain(agentId);
  const restricted = { ...CALLER, agentIds: [agentId] };
  const other = await seededAgent(0);
  await expect(startAgentDeletion(deps, restricted, other)).rejects.toMatchObject({ status: 403 });
  await expect(startAgentDeletion(deps, { ...CALLER, organizationId: 'org-b' }, other)).rejects.toMatchObject({
    status: 404,
  });
});

it('resumes a job whose message was lost, once it has not moved for the timeout', async () => {
  const stuck = await seededAgent(0);
  await startAgentDeletion(deps, CALLER, stuck);
  deps.queue.sent.length = 0;
  deps.clock.set('2026-01-01T00:00:30.000Z');
  expect(await resumeStuckAgentDeletions(deps, { timeoutSeconds: 60 })).toBe(0);
  deps.clock.set('2026-01-01T00:05:00.000Z');
  const fresh = await seededAgent(0);
  await startAgentDeletion(deps, CALLER, fresh);
  deps.queue.sent.length = 0;
  // (An agent of the test before, still `deleting`, is resumed too: the watchdog looks across organizations.)
  expect(await resumeStuckAgentDeletions(deps, { timeoutSeconds: 60 })).toBeGreaterThanOrEqual(1);
  expect(deps.queue.messages).toContainEqual({ kind: 'delete-agent', organizationId: ORG, agentId: stuck, page: 1 });
  expect(deps.queue.messages.some((m) => m.kind === 'delete-agent' && m.agentId === fresh)).toBe(false);
  // The lost page 0, delivered late, does nothing.
  expect(await runAgentDeletionPage(deps, { kind: 'delete-agent', organizationId: ORG, agentId: stuck, page: 0 })).toBe(
    'skipped',
  );
});
