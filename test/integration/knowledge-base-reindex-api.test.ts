/**
 * Reindexing a knowledge base through the API (issue 36), against the local runtime with a separate worker
 * (LOCAL_WORKER=off). The index loses the documents' chunks (what an index replacement does), so retrieval finds
 * nothing though every document is `ready`; POST …/reindex starts the job (202), a second POST while it waits is a 409
 * REINDEX_RUNNING, GET …/reindex follows it to `completed`, and retrieval finds every document again, each still
 * `ready` with its dates unchanged. And `npm run reindex`, which starts one for every knowledge base of the stage.
 */
import { join } from 'node:path';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { main as reindexScript } from '../../scripts/reindex';
import { createDataset, type Dataset, readyDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client } from '../helpers/service';
import { serviceAndWorker } from '../helpers/worker';

jest.setTimeout(180_000);

const harness = serviceAndWorker('aps-kb-reindex-', {
  PROCESSING_TIMEOUT_SECONDS: '5',
  WATCHDOG_INTERVAL_SECONDS: '1',
});
const call = <T = Record<string, unknown>>(...args: Parameters<ReturnType<typeof client>>) => harness.call<T>(...args);

const reindexPath = (d: { agentId: string; knowledgeBaseId: string }) =>
  `/dashboard/agents/${d.agentId}/knowledge/bases/${d.knowledgeBaseId}/reindex`;

const FILES = {
  'router.txt': 'The router restarts when its reset button is held for ten seconds.',
  'printer.txt': 'The printer takes paper of up to 120 grams per square metre.',
  'scanner.txt': 'The scanner saves each page as a searchable PDF file.',
};

async function found(dataset: Dataset, query: string): Promise<string[]> {
  const answer = await call<{ results: { metadata: { documentId: string } }[] }>(
    'POST',
    `/dashboard/agents/${dataset.agentId}/knowledge/${dataset.environment}/kb/${dataset.knowledgeBaseId}/query`,
    { body: { query, numberOfResults: 1 } },
  );
  expect(answer.status).toBe(200);
  return answer.body.results.map((hit) => hit.metadata.documentId);
}

/** The index loses every chunk of the datasets (what an index replacement does), written from a process of its own. */
async function loseChunks(datasets: readonly Dataset[]): Promise<void> {
  const index = await LanceKnowledgeIndex.open(join(harness.dataDir, 'index'));
  try {
    for (const dataset of datasets) {
      for (const chunk of await index.listChunks(dataset)) await index.deleteDocument(chunk);
      expect(await index.listChunks(dataset)).toEqual([]);
    }
  } finally {
    await index.close();
  }
}

async function documentOf(dataset: Dataset, s3Key: string) {
  return (await call('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key } })).body;
}

it('writes every ready document to an index that lost them, as a job with a status, one at a time', async () => {
  const dataset = await createDataset(call, 'production');
  const keys: Record<string, string> = {};
  const ids: Record<string, string> = {};
  for (const [fileName, text] of Object.entries(FILES)) {
    const link = await readyDocument(call, dataset, fileName, text);
    keys[fileName] = link.s3Key;
    ids[fileName] = link.documentId as string;
  }
  expect(await found(dataset, 'printer paper grams')).toEqual([ids['printer.txt']]);
  const before = await Promise.all(Object.values(keys).map((s3Key) => documentOf(dataset, s3Key)));

  // Never reindexed: 404 REINDEX_NOT_FOUND.
  expect(await call('GET', reindexPath(dataset))).toMatchObject({
    status: 404,
    body: { success: false, error: { code: 'REINDEX_NOT_FOUND' } },
  });

  // No worker from here; the index loses the knowledge base's chunks.
  await harness.stopWorker();
  await loseChunks([dataset]);
  expect(
    await pollUntil(
      () => found(dataset, 'printer paper grams'),
      (hits) => hits.length === 0,
    ),
  ).toEqual([]);

  const started = await call('POST', reindexPath(dataset), { body: { environment: 'production' } });
  expect(started).toMatchObject({
    status: 202,
    body: {
      success: true,
      knowledgeBaseId: dataset.knowledgeBaseId,
      status: 'running',
      environments: ['production'],
      total: 3,
      reindexed: 0,
      skipped: 0,
      failed: 0,
      failures: [],
      completedAt: null,
    },
  });
  const again = await call('POST', reindexPath(dataset));
  expect(again).toMatchObject({
    status: 409,
    body: {
      success: false,
      error: { code: 'REINDEX_RUNNING', details: [{ field: 'knowledgeBaseId', rule: 'reindex.running' }] },
    },
  });
  expect((await call('GET', reindexPath(dataset))).body).toEqual(started.body);

  await harness.startWorker();
  const done = await pollUntil(
    () => call<{ status: string }>('GET', reindexPath(dataset)),
    (r) => r.body.status === 'completed',
    60_000,
  );
  expect(done.body).toMatchObject({ status: 'completed', total: 3, reindexed: 3, skipped: 0, failed: 0 });
  expect(
    await pollUntil(
      () => found(dataset, 'printer paper grams'),
      (hits) => hits.length > 0,
    ),
  ).toEqual([ids['printer.txt']]);
  expect(await found(dataset, 'router reset button')).toEqual([ids['router.txt']]);
  expect(await found(dataset, 'scanner searchable PDF')).toEqual([ids['scanner.txt']]);
  // What the API shows of each document did not change.
  expect(await Promise.all(Object.values(keys).map((s3Key) => documentOf(dataset, s3Key)))).toEqual(before);
  // Completed: it can be started again.
  expect((await call('POST', reindexPath(dataset))).status).toBe(202);
});

it('answers 404 for a knowledge base of another organization or none, 400 for an environment that is none', async () => {
  const dataset = await createDataset(call, 'staging');
  expect(await client(harness.service, harness.service.tokens[1])('POST', reindexPath(dataset))).toMatchObject({
    status: 404,
    body: { error: { code: 'AGENT_NOT_FOUND' } },
  });
  const unknown = { ...dataset, knowledgeBaseId: '00000000-0000-4000-8000-000000000000' };
  expect(await call('POST', reindexPath(unknown))).toMatchObject({
    status: 404,
    body: { error: { code: 'KNOWLEDGE_BASE_NOT_FOUND' } },
  });
  expect(await call('POST', reindexPath(dataset), { body: { environment: 'test' } })).toMatchObject({
    status: 400,
    body: { success: false, error: { code: 'VALIDATION_ERROR', details: [{ field: 'environment' }] } },
  });
  expect(await call('POST', reindexPath(dataset), { body: { environments: ['staging'] } })).toMatchObject({
    status: 400,
  });
});

it('npm run reindex starts a reindex of every knowledge base of the stage, once, and follows them', async () => {
  // Two agents' knowledge bases (and those of the tests above), each with a document; the index loses them all.
  const first = await createDataset(call, 'development');
  const second = await createDataset(call, 'development');
  const firstDoc = await readyDocument(
    call,
    first,
    'kettle.txt',
    'The kettle switches itself off when the water boils.',
  );
  const secondDoc = await readyDocument(call, second, 'toaster.txt', 'The toaster browns bread on six levels.');
  await harness.stopWorker();
  await loseChunks([first, second]);
  expect(
    await pollUntil(
      () => found(first, 'kettle water boils'),
      (hits) => hits.length === 0,
    ),
  ).toEqual([]);

  const lines: string[] = [];
  expect(
    await reindexScript(['--local', harness.dataDir, '--environment', 'development'], (line) => lines.push(line)),
  ).toBe(0);
  expect(lines).toContain(`${first.agentId}/${first.knowledgeBaseId}: started, 1 ready documents`);
  expect(lines).toContain(`${second.agentId}/${second.knowledgeBaseId}: started, 1 ready documents`);
  // Run again before the worker took them: none is started twice.
  const again: string[] = [];
  expect(await reindexScript(['--local', harness.dataDir, '--agent', first.agentId], (line) => again.push(line))).toBe(
    0,
  );
  expect(again).toEqual([
    `${first.agentId}/${first.knowledgeBaseId}: a reindex is running already`,
    '0 started, 1 already running, 0 left alone; follow them with --status',
  ]);
  const usage = jest.spyOn(console, 'error').mockImplementation(() => {});
  expect(await reindexScript(['--local', harness.dataDir, '--environment', 'test'], () => {})).toBe(2);
  expect(usage).toHaveBeenCalledWith(expect.stringContaining('--environment must be one of'));
  usage.mockRestore();

  await harness.startWorker();
  for (const dataset of [first, second]) {
    const done = await pollUntil(
      () => call<{ status: string }>('GET', reindexPath(dataset)),
      (r) => r.body.status === 'completed',
      60_000,
    );
    expect(done.body).toMatchObject({ environments: ['development'], total: 1, reindexed: 1 });
  }
  expect(
    await pollUntil(
      () => found(first, 'kettle water boils'),
      (hits) => hits.length > 0,
    ),
  ).toEqual([firstDoc.documentId]);
  expect(await found(second, 'toaster bread levels')).toEqual([secondDoc.documentId]);
  const status: string[] = [];
  expect(
    await reindexScript(['--local', harness.dataDir, '--agent', second.agentId, '--status'], (line) =>
      status.push(line),
    ),
  ).toBe(0);
  expect(status).toEqual([
    `${second.agentId}/${second.knowledgeBaseId}: completed (development): 1 reindexed, 0 skipped, 0 failed of 1`,
    '0 running',
  ]);
});
