/**
 * Deleting a knowledge base (issue 13, items 1 and 2) against the local runtime with a separate worker
 * (LOCAL_WORKER=off): while no worker runs, the deletion job stays `deleting`, so what the API answers meanwhile is
 * checked without a race; then a worker finishes the job and nothing of the knowledge base is left in the tables,
 * the bucket or the index. And default retrieval: a configured knowledge base that is gone is skipped with a warning
 * (preview `explain`, and the session's system message) instead of failing the run.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDataset, type Dataset, putFile, readyDocument, type UploadLink, zipOf } from '../helpers/fixtures';
import { NOTHING_LEFT } from '../helpers/knowledge-base-remains';
import { pollUntil } from '../helpers/poll';
import { client } from '../helpers/service';
import { serviceAndWorker } from '../helpers/worker';

jest.setTimeout(180_000);

const WORKER_ENV = { PROCESSING_TIMEOUT_SECONDS: '5', WATCHDOG_INTERVAL_SECONDS: '1' };
const harness = serviceAndWorker('aps-kb-delete-', WORKER_ENV);
/** The runtime's first organization's token. */
const call = <T = Record<string, unknown>>(...args: Parameters<ReturnType<typeof client>>) => harness.call<T>(...args);

const basePath = (d: { agentId: string; knowledgeBaseId: string }) =>
  `/dashboard/agents/${d.agentId}/knowledge/bases/${d.knowledgeBaseId}`;

async function secondKnowledgeBase(agentId: string): Promise<string> {
  const kb = await call<{ knowledgeBaseId: string }>('POST', `/dashboard/agents/${agentId}/knowledge/bases`, {
    body: { name: 'Control' },
  });
  return kb.body.knowledgeBaseId;
}

it('is a job: gone at once for every caller, the same job on a repeat, then nothing left anywhere', async () => {
  const prod = await createDataset(call, 'production');
  const staging: Dataset = { ...prod, environment: 'staging' };
  const dev: Dataset = { ...prod, environment: 'development' };
  const control: Dataset = { ...prod, knowledgeBaseId: await secondKnowledgeBase(prod.agentId) };

  // Documents in all three environments: one updated (its content under `_versions/`), three from a ZIP import.
  const updated = await readyDocument(call, prod, 'router.txt', 'The router restarts when the power button is held.');
  const update = await call<UploadLink>('POST', '/api/v1/knowledge/documents/update/upload-link', {
    body: { ...prod, s3Key: updated.s3Key, fileName: 'router-v2.txt' },
  });
  await putFile(update.body, 'The router restarts after the reset button is held for ten seconds.');
  expect(
    (
      await call('POST', '/api/v1/knowledge/documents/update/upload-complete', {
        body: { uploadId: update.body.uploadId },
      })
    ).status,
  ).toBe(200);
  await readyDocument(call, staging, 'switch.txt', 'The switch has eight ports.');
  const zipLink = await call<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...dev, fileName: 'batch.zip' },
  });
  await putFile(
    zipLink.body,
    await zipOf({ 'a.txt': 'Alpha manual.', 'b.txt': 'Beta manual.', 'c.txt': 'Gamma manual.' }),
  );
  await call('POST', '/api/v1/knowledge/documents/upload-complete', { body: { uploadId: zipLink.body.uploadId } });
  const zipJobId = zipLink.body.zipJobId as string;
  await pollUntil(
    () => call<{ status: string }>('GET', `/api/v1/knowledge/zip-jobs/${zipJobId}`),
    (r) => r.body.status === 'completed',
    30_000,
  );
  await readyDocument(call, control, 'control.txt', 'The control knowledge base keeps its router manual.');
  // An upload started before the delete, completed after it.
  const late = await call<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...prod, fileName: 'late.txt' },
  });
  await putFile(late.body, 'Arrives too late.');

  // Default retrieval names it in two environments (staging's entry reads production's documents).
  const config = (environment: string) => `/dashboard/agents/${prod.agentId}/retrieval/${environment}`;
  const kbEntry = { knowledgeBaseId: prod.knowledgeBaseId };
  const controlEntry = { knowledgeBaseId: control.knowledgeBaseId };
  for (const [environment, knowledgeBases] of [
    ['production', [kbEntry, controlEntry]],
    ['staging', [{ ...kbEntry, environment: 'production' }]],
    ['development', [controlEntry]],
  ] as const) {
    expect((await call('PUT', config(environment), { body: { enabled: true, knowledgeBases } })).status).toBe(200);
  }
  const before = await harness.engines.remains(prod.agentId, prod.knowledgeBaseId, [zipJobId]);
  expect(before.documents).toEqual({ development: 3, staging: 1, production: 2 });
  expect(before.counters).toBe(3);
  expect(before.objects.some((key) => key.includes('/_versions/'))).toBe(true);
  expect(before.chunks.production).toBeGreaterThan(0);

  // No worker from here: the job waits, so what callers see while it is `deleting` is checked without a race.
  await harness.stopWorker();
  const deleted = await call('DELETE', basePath(prod));
  expect(deleted.status).toBe(202);
  expect(deleted.body).toEqual({
    success: true,
    knowledgeBaseId: prod.knowledgeBaseId,
    agentId: prod.agentId,
    status: 'deleting',
    startedAt: expect.any(String),
    defaultRetrievalChanged: ['staging', 'production'],
  });
  expect((await call('GET', config('production'))).body).toMatchObject({ knowledgeBases: [controlEntry] });
  expect((await call('GET', config('staging'))).body).toMatchObject({ enabled: true, knowledgeBases: [] });
  expect((await call('GET', config('development'))).body).toMatchObject({ knowledgeBases: [controlEntry] });

  const notFound = { success: false, error: { code: 'KNOWLEDGE_BASE_NOT_FOUND' } };
  expect(await call('GET', basePath(prod))).toMatchObject({ status: 404, body: notFound });
  expect(await call('PATCH', basePath(prod), { body: { name: 'Back' } })).toMatchObject({ status: 404 });
  const listed = await call<{ data: { knowledgeBaseId: string }[] }>(
    'GET',
    `/dashboard/agents/${prod.agentId}/knowledge/bases`,
  );
  expect(listed.body.data.map((kb) => kb.knowledgeBaseId)).toEqual([control.knowledgeBaseId]);
  const customerCalls = [
    call('GET', '/api/v1/knowledge/documents', { query: { ...prod, s3Key: updated.s3Key } }),
    call('PATCH', '/api/v1/knowledge/documents/metadata', { body: { ...prod, s3Key: updated.s3Key, label1: 'x:y' } }),
    call('DELETE', '/api/v1/knowledge/documents', { body: { ...prod, s3Key: updated.s3Key } }),
    call('POST', '/api/v1/knowledge/documents/upload-link', { body: { ...prod, fileName: 'new.txt' } }),
    call('POST', '/api/v1/knowledge/documents/upload-complete', { body: { uploadId: late.body.uploadId } }),
    call('POST', `/dashboard/agents/${prod.agentId}/knowledge/production/kb/${prod.knowledgeBaseId}/query`, {
      body: { query: 'router' },
    }),
  ];
  for (const answer of await Promise.all(customerCalls)) expect(answer).toMatchObject({ status: 404, body: notFound });
  const named = await call('PUT', config('production'), { body: { enabled: true, knowledgeBases: [kbEntry] } });
  expect(named.status).toBe(400);
  expect(named.body).toMatchObject({ error: { details: [{ rule: 'knowledgeBase.exists' }] } });
  // Another organization still finds nothing; a repeat finds the same job, not a 404.
  expect((await client(harness.service, harness.service.tokens[1])('DELETE', basePath(prod))).status).toBe(404);
  const again = await call('DELETE', basePath(prod));
  expect(again.status).toBe(202);
  expect(again.body).toEqual(deleted.body);

  // A worker finishes the job: then the row is gone and a DELETE is a plain 404.
  await harness.startWorker();
  const end = await pollUntil(
    () => call('DELETE', basePath(prod)),
    (r) => r.status === 404,
    60_000,
  );
  expect(end).toMatchObject({ status: 404, body: notFound });
  expect(await harness.engines.remains(prod.agentId, prod.knowledgeBaseId, [zipJobId])).toEqual(NOTHING_LEFT);
  expect((await call('GET', `/api/v1/knowledge/zip-jobs/${zipJobId}`)).status).toBe(404);
  // The other knowledge base of the agent is untouched.
  const kept = await harness.engines.remains(control.agentId, control.knowledgeBaseId);
  expect({ documents: kept.documents.production, objects: kept.objects.length, row: kept.knowledgeBaseRow }).toEqual({
    documents: 1,
    objects: 1,
    row: true,
  });
  expect(kept.chunks.production).toBeGreaterThan(0);
});

interface Preview {
  systemMessage: string | null;
  results: { knowledgeBaseId: string; content: string }[];
  explain: { warnings: { code: string; knowledgeBaseId: string; environment: string; message: string }[] };
}

it('skips a configured knowledge base that is gone, with a warning, and the run completes', async () => {
  await harness.startWorker();
  const dataset = await createDataset(call, 'production');
  await readyDocument(call, dataset, 'warranty.txt', 'The warranty of every Acme router lasts three years.');
  // A configuration that names a knowledge base that no longer exists (written before deletes removed them from
  // configurations, or by a PUT that raced the delete): stored as such, past the API's own check.
  const ghost = '0b9a3f0e-4d7c-4c51-9a7e-1f2d3c4b5a69';
  await harness.engines.dynamo.send(
    new PutCommand({
      TableName: 'retrievalConfigs',
      Item: {
        agentId: dataset.agentId,
        environment: 'production',
        enabled: true,
        knowledgeBases: [{ knowledgeBaseId: ghost }, { knowledgeBaseId: dataset.knowledgeBaseId }],
        updatedAt: new Date().toISOString(),
      },
    }),
  );
  const base = `/dashboard/agents/${dataset.agentId}`;
  const preview = await call<Preview>('POST', `${base}/retrieval/production/preview`, {
    body: { query: 'How long is the router warranty?' },
  });
  expect(preview.status).toBe(200);
  expect(preview.body.results.map((r) => r.knowledgeBaseId)).toEqual([dataset.knowledgeBaseId]);
  expect(preview.body.explain.warnings).toEqual([
    {
      code: 'KNOWLEDGE_BASE_NOT_FOUND',
      knowledgeBaseId: ghost,
      environment: 'production',
      message: expect.stringContaining(ghost),
    },
  ]);
  expect(preview.body.systemMessage).toMatch(
    new RegExp(`three years\\.\\nNot searched: knowledge base ${ghost} \\(production\\) no longer exists\\.$`),
  );

  const definition = {
    flows: [
      {
        name: 'faq',
        nodes: [
          { name: 'Question', type: 'trigger', triggerType: 'webhook' },
          { name: 'Answer', type: 'promptNode', displayName: 'Answer', prompt: 'Answer the question.' },
        ],
        edges: [{ from: 'Question', to: 'Answer', type: 'stepForward' }],
      },
    ],
  };
  expect((await call('PUT', `${base}/definition/production`, { body: definition })).status).toBe(200);
  const run = await call<{ status: string; sessionId: string; error: unknown }>(
    'POST',
    `/api/v1/webhooks/${dataset.agentId}/production/Question`,
    { body: { message: 'How long is the router warranty?' } },
  );
  expect({ status: run.body.status, error: run.body.error }).toEqual({ status: 'completed', error: null });
  const session = await call<{ messages: { role: string; content: string }[] }>(
    'GET',
    `${base}/sessions/production/${run.body.sessionId}`,
  );
  const system = session.body.messages.find((m) => m.role === 'system');
  expect(system?.content).toContain('three years');
  expect(system?.content).toContain(`Not searched: knowledge base ${ghost} (production) no longer exists.`);
});
