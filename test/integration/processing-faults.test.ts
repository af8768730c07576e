/**
 * Processing under redelivery and crashes, against the real local queue: the same message twice leaves one set of
 * chunks and a true status, and a ZIP import's message coming again after the import leaves the job `completed`; a
 * runtime killed with work queued (fauxqs keeps its messages in memory, so they are lost) is repaired after restart
 * by the watchdog, and the document still ends `ready`, indexed once; an import the queue dead-lettered is queued
 * again by the watchdog of a separate worker process (`bin/worker.ts`, one per data folder) and completes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { createDataset, type Dataset, putFile, type UploadLink, uploadDocument, zipOf } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';
import { startWorker } from '../helpers/worker';

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
  let sqs: SQSClient;
  let queueUrl: string | undefined;
  beforeAll(async () => {
    service = await startService();
    sqs = new SQSClient({
      endpoint: /SQS at (http:\/\/[^\s,]+)/.exec(service.output())?.[1],
      region: 'us-east-1',
      credentials: service.engineCredentials ?? undefined,
      useQueueUrlAsEndpoint: false,
    });
    queueUrl = (await sqs.send(new GetQueueUrlCommand({ QueueName: 'processing' }))).QueueUrl;
  });
  /** Messages in the processing queue, waiting or received and not yet deleted: 0 once the worker is done with all. */
  const depth = async () => {
    const { Attributes = {} } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return Number(Attributes.ApproximateNumberOfMessages) + Number(Attributes.ApproximateNumberOfMessagesNotVisible);
  };

  afterAll(async () => {
    sqs?.destroy();
    await service?.stop();
  });

  it('processes duplicate messages into one set of chunks', async () => {
    const call = client(service);
    const dataset = await createDataset(call);
    const { link } = await uploadDocument(call, dataset, { fileName: 'backups.txt' }, TEXT);
    const QueueUrl = queueUrl;
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
    // The late copies consumed and deleted: whatever they did is done.
    expect(await pollUntil(depth, (n) => n === 0, 30_000)).toBe(0);
    expect(await index.countDocumentChunks(ref)).toBe(expected);
    const hits = await index.query({ scope: dataset, text: 'backups midnight restores', filters: [], limit: 100 });
    const ids = hits.filter((h) => h.chunk.documentId === ref.documentId).map((h) => h.chunk.chunkId);
    expect(new Set(ids).size).toBe(ids.length);
    expect((await call('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } })).body).toMatchObject({
      status: 'ready',
    });
  });

  it('leaves a ZIP import completed when its message comes again after the import', async () => {
    // As SQS may deliver a message twice, or a worker may die after the import and before deleting the message.
    const call = client(service);
    const dataset = await createDataset(call);
    const link = await call<UploadLink>('POST', `${DOCS}/upload-link`, { body: { ...dataset, fileName: 'twice.zip' } });
    await putFile(link.body, await zipOf({ 'a.txt': 'Alpha manual.', 'b.txt': 'Beta manual.' }));
    expect((await call('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.body.uploadId } })).status).toBe(
      200,
    );
    const jobPath = `/api/v1/knowledge/zip-jobs/${link.body.zipJobId}`;
    const job = () => call<{ status: string; error: unknown; files: { status: string }[] }>('GET', jobPath);
    const finished = (r: Awaited<ReturnType<typeof job>>) =>
      r.body.status === 'completed' || r.body.status === 'failed';
    expect((await pollUntil(job, finished, 30_000)).body.status).toBe('completed');

    const message = { kind: 'process-zip', ...dataset, zipJobId: link.body.zipJobId, uploadId: link.body.uploadId };
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(message) }));
    // Once the worker has consumed (and deleted) the copy, the job must still be what it was.
    expect(await pollUntil(depth, (n) => n === 0, 30_000)).toBe(0);
    const after = await job();
    expect(after.body).toMatchObject({ status: 'completed', error: null });
    expect(after.body.files.map((f) => f.status)).toEqual(['ready', 'ready']);
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

    // The documents are older than the timeout by the time the second runtime is up, so its watchdog re-queues them
    // beside their queued messages (what "indexed once" is about). A document it still finds `uploaded` one timeout
    // later is failed: 1 s left the worker 2 s after start and failed documents on a loaded 2-core CI machine.
    const second = await startService({
      dataDir,
      env: { PROCESSING_TIMEOUT_SECONDS: '3', WATCHDOG_INTERVAL_SECONDS: '1' },
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

describe('a ZIP import the queue gave up on', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'aps-dlq-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('is imported after the watchdog queues it again, by a separate worker process', async () => {
    const service = await startService({
      dataDir,
      env: { LOCAL_WORKER: 'off', PROCESSING_VISIBILITY_TIMEOUT_SECONDS: '1' },
    });
    const sqs = new SQSClient({
      endpoint: /SQS at (http:\/\/[^\s,]+)/.exec(service.output())?.[1],
      region: 'us-east-1',
      credentials: service.engineCredentials ?? undefined,
      useQueueUrlAsEndpoint: false,
    });
    try {
      const call = client(service);
      const dataset = await createDataset(call);
      const link = await call<UploadLink>('POST', `${DOCS}/upload-link`, {
        body: { ...dataset, fileName: 'lost.zip' },
      });
      await putFile(link.body, await zipOf({ 'a.txt': 'Alpha manual.', 'b.txt': 'Beta manual.' }));
      expect((await call('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.body.uploadId } })).status).toBe(
        200,
      );

      // A consumer that takes the import and dies before finishing, five times: the queue then dead-letters it.
      const queue = (await sqs.send(new GetQueueUrlCommand({ QueueName: 'processing' }))).QueueUrl;
      const deadLetters = (await sqs.send(new GetQueueUrlCommand({ QueueName: 'processing-dlq' }))).QueueUrl;
      const dlqDepth = async () =>
        Number(
          (
            await sqs.send(
              new GetQueueAttributesCommand({ QueueUrl: deadLetters, AttributeNames: ['ApproximateNumberOfMessages'] }),
            )
          ).Attributes?.ApproximateNumberOfMessages,
        );
      const deadline = Date.now() + 30_000;
      while ((await dlqDepth()) === 0 && Date.now() < deadline) {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
        );
        for (const message of Messages) {
          if (JSON.parse(message.Body ?? '{}').kind === 'process-zip') continue; // dies with it
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queue, ReceiptHandle: message.ReceiptHandle }));
        }
      }
      expect(await dlqDepth()).toBe(1);
      const jobPath = `/api/v1/knowledge/zip-jobs/${link.body.zipJobId}`;
      const job = () => call<{ status: string; files: { status: string }[] }>('GET', jobPath);
      expect((await job()).body).toMatchObject({ status: 'uploaded', files: [] });

      // 3 s, not 1: the import's documents must be processed within one timeout of being queued, or the same
      // watchdog fails them (as it did on a loaded CI machine).
      const worker = await startWorker(dataDir, { PROCESSING_TIMEOUT_SECONDS: '3', WATCHDOG_INTERVAL_SECONDS: '1' });
      try {
        // One worker per data folder: a second one is refused while the first lives.
        await expect(startWorker(dataDir)).rejects.toThrow(/already runs the processing worker/);
        const done = await pollUntil(job, (r) => r.body.status === 'completed' || r.body.status === 'failed', 30_000);
        expect(done.body.status).toBe('completed');
        expect(done.body.files.map((f) => f.status)).toEqual(['ready', 'ready']);
        expect(worker.output()).toMatch(/"importsRetried":1/);
      } finally {
        await worker.stop();
      }
    } finally {
      sqs.destroy();
      await service.stop();
    }
  });
});
