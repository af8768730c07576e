/**
 * DELETE /dashboard/agents/:agentId against the local runtime with its worker in a process of its own
 * (LOCAL_WORKER=off): while no worker runs, the job stays `deleting`, so what the API answers meanwhile is checked
 * without a race; then a worker finishes it, and the engines are read past the API: nothing of the agent is left
 * (knowledge bases in every environment, documents, objects, chunks, definitions, sessions, retrieval
 * configurations, its row) but its analytics events, and another agent of the organization is untouched.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { ENVIRONMENTS } from '#core/knowledge/fields';
import { createDataset, type Dataset, readyDocument } from '../helpers/fixtures';
import { helloAndTicketDefinition as definition } from '../helpers/flow-definitions';
import { NOTHING_LEFT } from '../helpers/knowledge-base-remains';
import { pollUntil } from '../helpers/poll';
import { client } from '../helpers/service';
import { serviceAndWorker } from '../helpers/worker';

const WORKER_ENV = { PROCESSING_TIMEOUT_SECONDS: '5', WATCHDOG_INTERVAL_SECONDS: '1' };
const harness = serviceAndWorker('aps-agent-delete-', WORKER_ENV);
/** The runtime's first organization's token. */
const call = <T = Record<string, unknown>>(...args: Parameters<ReturnType<typeof client>>) => harness.call<T>(...args);

/** Items of `table` whose key attribute `key` starts with the agent's id (read past the API). */
async function itemsOf(table: string, key: string, agentId: string): Promise<number> {
  const { Items = [] } = await harness.engines.dynamo.send(new ScanCommand({ TableName: table }));
  return Items.filter((item) => String(item[key]).startsWith(agentId)).length;
}

it('is a job: gone at once for every caller, the same job on a repeat, then nothing left but its analytics', async () => {
  const production = await createDataset(call);
  const { agentId } = production;
  const second = await call<{ knowledgeBaseId: string }>('POST', `/dashboard/agents/${agentId}/knowledge/bases`, {
    body: { name: 'Second' },
  });
  const staging: Dataset = { ...production, environment: 'staging', knowledgeBaseId: second.body.knowledgeBaseId };
  await readyDocument(call, production, 'guide.txt');
  await readyDocument(call, staging, 'notes.txt');
  for (const environment of ['production', 'development'] as const) {
    const stored = await call('PUT', `/dashboard/agents/${agentId}/definition/${environment}`, { body: definition });
    expect(stored.status).toBe(200);
  }
  const run = await call<{ sessionId: string; status: string }>(
    'POST',
    `/api/v1/webhooks/${agentId}/production/Start`,
    { body: { message: 'Hello' } },
  );
  expect(run.body.status).toBe('completed');
  const config = await call('PUT', `/dashboard/agents/${agentId}/retrieval/production`, {
    body: { enabled: true, knowledgeBases: [{ knowledgeBaseId: production.knowledgeBaseId }] },
  });
  expect(config.status).toBe(200);
  const control = await createDataset(call);
  await readyDocument(call, control, 'control.txt');
  expect(await itemsOf('sessions', 'sessionKey', agentId)).toBe(1);
  expect(await itemsOf('agentDefinitions', 'agentId', agentId)).toBe(2);
  expect(await itemsOf('retrievalConfigs', 'agentId', agentId)).toBe(1);
  expect(await itemsOf('agents', 'agentId', agentId)).toBe(1);
  const events = await itemsOf('analytics', 'agentId', agentId);
  expect(events).toBeGreaterThan(0);

  // No worker from here: the job waits, so what callers see while it is `deleting` is checked without a race.
  await harness.stopWorker();
  const deleted = await call('DELETE', `/dashboard/agents/${agentId}`);
  expect(deleted.status).toBe(202);
  expect(deleted.body).toEqual({ success: true, agentId, status: 'deleting', startedAt: expect.any(String) });

  const notFound = { status: 404, body: { success: false, error: { code: 'AGENT_NOT_FOUND' } } };
  for (const answer of await Promise.all([
    call('GET', `/dashboard/agents/${agentId}`),
    call('PATCH', `/dashboard/agents/${agentId}`, { body: { displayName: 'Back' } }),
    call('GET', `/dashboard/agents/${agentId}/knowledge/bases`),
    call('GET', '/api/v1/knowledge/documents/list', { query: { ...production } }),
    call('POST', '/api/v1/knowledge/documents/upload-link', { body: { ...production, fileName: 'late.txt' } }),
    call('POST', `/api/v1/webhooks/${agentId}/production/Start`, { body: { message: 'Still there?' } }),
    call('GET', `/dashboard/agents/${agentId}/definition/production`),
  ])) {
    expect(answer).toMatchObject(notFound);
  }
  const listed = await call<{ data: { agentId: string }[] }>('GET', '/dashboard/agents');
  expect(listed.body.data.map((agent) => agent.agentId)).not.toContain(agentId);
  expect(listed.body.data.map((agent) => agent.agentId)).toContain(control.agentId);
  // Another organization finds nothing; a repeat answers the same job.
  expect(
    (await client(harness.service, harness.service.tokens[1])('DELETE', `/dashboard/agents/${agentId}`)).status,
  ).toBe(404);
  const again = await call('DELETE', `/dashboard/agents/${agentId}`);
  expect(again.status).toBe(202);
  expect(again.body).toEqual(deleted.body);

  // A worker finishes the job: then the row is gone and a DELETE is a plain 404.
  await harness.startWorker();
  const end = await pollUntil(
    () => call('DELETE', `/dashboard/agents/${agentId}`),
    (r) => r.status === 404,
    90_000,
  );
  expect(end).toMatchObject(notFound);
  for (const knowledgeBaseId of [production.knowledgeBaseId, staging.knowledgeBaseId]) {
    expect(await harness.engines.remains(agentId, knowledgeBaseId)).toEqual(NOTHING_LEFT);
  }
  expect(await itemsOf('sessions', 'sessionKey', agentId)).toBe(0);
  expect(await itemsOf('agentDefinitions', 'agentId', agentId)).toBe(0);
  expect(await itemsOf('retrievalConfigs', 'agentId', agentId)).toBe(0);
  expect(await itemsOf('agents', 'agentId', agentId)).toBe(0);
  // Its analytics events stay until their retention ends.
  expect(await itemsOf('analytics', 'agentId', agentId)).toBe(events);

  // The other agent of the organization is untouched.
  const kept = await harness.engines.remains(control.agentId, control.knowledgeBaseId);
  expect({ documents: kept.documents.production, row: kept.knowledgeBaseRow }).toEqual({ documents: 1, row: true });
  expect((await call('GET', `/dashboard/agents/${control.agentId}`)).status).toBe(200);
  for (const environment of ENVIRONMENTS)
    expect(kept.documents[environment]).toBe(environment === 'production' ? 1 : 0);
});
