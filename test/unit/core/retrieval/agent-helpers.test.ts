/**
 * The agent-code helper against real engines in this process: dynalite for the stores, LanceDB for the index.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { DynamoAgentStore } from '#adapters/store/dynamodb/agent-store';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { ValidationError } from '#core/errors';
import { retrieveAndGenerateFromKnowledgeBase, retrieveFromKnowledgeBase } from '#core/retrieval/agent-helpers';
import type { RetrievalDeps } from '#core/retrieval/retrieve';
import { createTableInput } from '../../../../lib/local/engines';
import { TABLES } from '../../../../lib/tables';
import { recordingMetrics } from '../../../helpers/metrics';

const caller = { organizationId: 'org-1', tokenId: 't', scopes: ['dashboard'] };
const agentId = '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10';
const kbA = '7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f';
const kbB = '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b';
let server: Server;
let dir: string;
let deps: RetrievalDeps;
const metrics = recordingMetrics();
let index: LanceKnowledgeIndex;

const chunk = (knowledgeBaseId: string, documentId: string, text: string, label1: string | null = null) => ({
  agentId,
  environment: 'production' as const,
  knowledgeBaseId,
  documentId,
  chunkId: `${documentId}#0#0000000000000000`,
  s3Key: `${agentId}/production/${knowledgeBaseId}/${documentId}/f.txt`,
  position: 0,
  text,
  label1,
  label2: null,
  svc_internal_meta1: 'm1',
  svc_internal_meta2: null,
  svc_internal_meta3: null,
  svc_internal_meta4: null,
});

beforeAll(async () => {
  server = dynalite({ createTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const raw = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
  });
  for (const name of ['agents', 'knowledgeBases'] as const)
    await raw.send(new CreateTableCommand(createTableInput(name, TABLES[name])));
  const client = DynamoDBDocumentClient.from(raw);
  const agents = new DynamoAgentStore(client, 'agents');
  const knowledgeBases = new DynamoKnowledgeBaseStore(client, 'knowledgeBases');
  await agents.put({ organizationId: 'org-1', agentId, displayName: 'A', createdAt: '2026-01-01T00:00:00.000Z' });
  await knowledgeBases.put({
    organizationId: 'org-1',
    agentId,
    knowledgeBaseId: kbA,
    name: 'A',
    description: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  });
  dir = mkdtempSync(join(tmpdir(), 'agent-helpers-'));
  index = await LanceKnowledgeIndex.open(dir);
  await index.replaceDocument({ agentId, environment: 'production', knowledgeBaseId: kbA, documentId: 'd1' }, [
    chunk(kbA, 'd1', 'Passwords are reset from the account page.', 'topic:account'),
  ]);
  deps = { agents, knowledgeBases, index, embedder: null, metrics };
});

afterAll(async () => {
  await index?.close();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const context = { caller, agentId, environment: 'production' as const, memory: { topic: 'topic:account' } };

it('uses the only knowledge base when none is named, and resolves memory in filters', async () => {
  const results = await retrieveFromKnowledgeBase(deps, context, {
    query: 'reset password',
    filters: [{ key: 'label1', operator: 'equals', value: '{state.memory.topic}' }],
  });
  expect(results).toHaveLength(1);
  expect(results[0]).toMatchObject({
    content: expect.stringContaining('reset'),
    metadata: { svc_internal_meta1: 'm1' },
  });
});

it('answers with citations of the retrieved chunks', async () => {
  const outcome = await retrieveAndGenerateFromKnowledgeBase(
    deps,
    context,
    { query: 'How are passwords reset?' },
    null,
  );
  expect(outcome.answer).toContain('account page');
  expect(outcome.citations).toEqual([expect.objectContaining({ resultIndex: 0, documentId: 'd1' })]);
  expect(outcome.results[0].metadata.documentId).toBe('d1');
});

it('asks for knowledgeBaseId once the agent has two knowledge bases', async () => {
  await deps.knowledgeBases.put({
    organizationId: 'org-1',
    agentId,
    knowledgeBaseId: kbB,
    name: 'B',
    description: null,
    createdAt: '2026-01-02T00:00:00.000Z',
    updatedAt: '2026-01-02T00:00:00.000Z',
  });
  await expect(retrieveFromKnowledgeBase(deps, context, { query: 'password' })).rejects.toBeInstanceOf(ValidationError);
  expect(await retrieveFromKnowledgeBase(deps, context, { query: 'password', knowledgeBaseId: kbA })).toHaveLength(1);
  expect(await retrieveFromKnowledgeBase(deps, context, { query: 'password', knowledgeBaseId: kbB })).toEqual([]);
});

it('reports each retrieval: its latency, its results, and whether it found nothing', async () => {
  metrics.clear();
  // The agent has two knowledge bases by now (the test above): A holds the password chunk, B nothing.
  expect(await retrieveFromKnowledgeBase(deps, context, { query: 'password', knowledgeBaseId: kbA })).toHaveLength(1);
  expect(await retrieveFromKnowledgeBase(deps, context, { query: 'password', knowledgeBaseId: kbB })).toEqual([]);
  const latencies = metrics.recorded.filter((r) => r.name === 'QueryLatency');
  expect(latencies).toHaveLength(2);
  for (const latency of latencies) expect(latency).toMatchObject({ unit: 'milliseconds', dimensions: {} });
  expect(metrics.sum('Results')).toBe(1);
  expect(metrics.sum('EmptyResults')).toBe(1);
});

it('never crosses into another organization', async () => {
  const stranger = { ...context, caller: { ...caller, organizationId: 'org-2' } };
  await expect(
    retrieveFromKnowledgeBase(deps, stranger, { query: 'password', knowledgeBaseId: kbA }),
  ).rejects.toMatchObject({
    code: 'AGENT_NOT_FOUND',
  });
});
