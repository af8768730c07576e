/**
 * Processing under redelivery and crashes, against the real local queue: the same message twice leaves one set of
 * chunks and a true status; a runtime killed with work queued (fauxqs keeps its messages in memory, so they are
 * lost) is repaired after restart by the watchdog, and the document still ends `ready`, indexed once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { LanceKnowledgeIndex } from '../../lambdas/adapters/local/lancedb-index';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

const DOCS = '/api/v1/knowledge/documents';
const TEXT = 'Backups run at midnight. Restores take about ten minutes. '.repeat(60);

async function readyStatus(call: ReturnType<typeof client>, dataset: Dataset, s3Key: string) {
  return pollUntil(
    () => call<{ status: string }>('GET', DOCS, { query: { ...dataset, s3Key } }),
    (r) => r.body?.status === 'ready' || r.body?.status === 'failed',
    30_000,
  );
}

describe('redelivery', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(() => service?.stop());

  it('processes duplicate messages into one set of chunks', async () => {
    const call = client(service);
    const dataset = await createDataset(call);
    const { link } = await uploadDocument(call, dataset, { fileName: 'backups.txt' }, TEXT);
    const sqs = new SQSClient({
      endpoint: /SQS at (http:\/\/[^\s,]+)/.exec(service.output())?.[1],
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      useQueueUrlAsEndpoint: false,
    });
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: 'processing' }));
    const message = JSON.stringify({
      kind: 'process-document',
      ...dataset,
      documentId: link.documentId,
      uploadId: link.uploadId,
    });
    await Promise.all([1, 2, 3].map(() => sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: message }))));

    expect((await readyStatus(call, dataset, link.s3Key)).body.status).toBe('ready');
    // Later copies of the message find nothing left to do.
    await Promise.all([1, 2].map(() => sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: message }))));
    const index = await LanceKnowledgeIndex.open(join(service.dataDir as string, 'index'));
    const ref = { ...dataset, documentId: link.documentId as string };
    const expected = await pollUntil(
      () => index.countDocumentChunks(ref),
      (n) => n > 1,
    );
    await new Promise((resolve) => setTimeout(resolve, 1500)); // let the late copies be consumed
    expect(await index.countDocumentChunks(ref)).toBe(expected);
    const hits = await index.query({ scope: dataset, text: 'backups midnight restores', filters: [], limit: 100 });
    const ids = hits.filter((h) => h.chunk.documentId === ref.documentId).map((h) => h.chunk.chunkId);
    expect(new Set(ids).size).toBe(ids.length);
    expect((await call('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } })).body).toMatchObject({
      status: 'ready',
    });
    sqs.destroy();
  });
});

describe('a crash with work queued', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'aps-crash-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('ends every document ready after restart, indexed once', async () => {
    const first = await startService({ dataDir, env: { LOCAL_WORKER: 'off' } });
    const call1 = client(first);
    const dataset = await createDataset(call1);
    const uploads = await Promise.all(
      [1, 2, 3].map((n) => uploadDocument(call1, dataset, { fileName: `crash-${n}.txt` }, `${TEXT} Document ${n}.`)),
    );
    for (const { link } of uploads) {
      expect((await call1('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } })).body).toMatchObject({
        status: 'uploaded',
      });
    }
    await first.kill();

    const second = await startService({
      dataDir,
      env: { PROCESSING_TIMEOUT_SECONDS: '1', WATCHDOG_INTERVAL_SECONDS: '1' },
    });
    try {
      const call2 = client(second);
      for (const { link } of uploads) {
        expect((await readyStatus(call2, dataset, link.s3Key)).body.status).toBe('ready');
      }
      const index = await LanceKnowledgeIndex.open(join(dataDir, 'index'));
      for (const { link } of uploads) {
        const count = await index.countDocumentChunks({ ...dataset, documentId: link.documentId as string });
        expect(count).toBeGreaterThan(1);
        expect(count).toBeLessThan(10);
      }
    } finally {
      await second.stop();
    }
  });
});
