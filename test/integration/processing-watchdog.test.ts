/**
 * The watchdog against the real stores (DynamoDB on an in-process dynalite, with the tables of lib/tables.ts) and
 * the real embedded index. With a worker acting on the same document at once: whichever order their writes land
 * in, the document ends `ready` with its chunks or `failed` with none, and a `ready` document is never failed by a
 * watchdog that read it before it was ready (each test forces one order with gates around the real adapters).
 * And ZIP imports: one cut off goes on where it stopped, one the queue gave up on is queued again once, then
 * failed, and none is left `processing` for good.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ZipArchiveImporter } from '#adapters/archive/zip-importer';
import { DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { DynamoZipJobStore } from '#adapters/store/dynamodb/zip-job-store';
import { type DocumentRecord, reservationRecord } from '#core/knowledge/document';
import { buildChunks, type ProcessingDeps, processDocument } from '#core/processing/process-document';
import { runWatchdog } from '#core/processing/watchdog';
import { importZip, ZIP_IMPORT_BATCH } from '#core/processing/zip-job';
import { NO_METRICS } from '#ports/metrics';
import type { DocumentRef, KnowledgeIndex } from '#ports/processing';
import type { BlobStore, ProcessingMessage } from '#ports/services';
import type { DocumentStore } from '#ports/stores';
import type { ZipJobRecord, ZipJobStore } from '#ports/zip-jobs';
import { TABLES } from '../../lib/tables';
import { inMemoryBlobStore } from '../helpers/blobs';
import { type LocalDynamo, startDynalite } from '../helpers/dynalite';
import { zipOf } from '../helpers/fixtures';
import { recordingMetrics } from '../helpers/metrics';

const TEXT = 'The backup runs at midnight and keeps thirty days. '.repeat(40);
const LONG_AGO = '2020-01-01T00:00:00.000Z';

let dynamo: LocalDynamo;
let client: DynamoDBDocumentClient;
let store: DocumentStore;
let zipJobs: ZipJobStore;
let index: LanceKnowledgeIndex;
let dir: string;
let documents = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
  client = dynamo.client;
  await dynamo.createTable('documents', TABLES.documents);
  await dynamo.createTable('zipJobs', TABLES.zipJobs);
  store = new DynamoDocumentStore(client, 'documents');
  zipJobs = new DynamoZipJobStore(client, 'zipJobs');
  dir = mkdtempSync(join(tmpdir(), 'aps-races-'));
  index = await LanceKnowledgeIndex.open(dir, { indexRefreshDelayMs: 60_000 });
});

afterAll(async () => {
  await index?.close();
  await dynamo?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const blobs: BlobStore = {
  ...inMemoryBlobStore(),
  head: async () => ({ size: Buffer.byteLength(TEXT), contentType: 'text/plain' }),
  get: async () => Buffer.from(TEXT),
  put: async () => undefined,
  delete: async () => undefined,
};

function depsWith(
  overrides: Partial<ProcessingDeps> = {},
): ProcessingDeps & { zipJobs: ZipJobStore; sent: ProcessingMessage[] } {
  const sent: ProcessingMessage[] = [];
  return {
    documents: store,
    zipJobs,
    blobs,
    queue: {
      send: async (message) => {
        sent.push(message);
      },
      sendAll: async (messages) => {
        sent.push(...messages);
      },
    },
    index,
    extractor: new DocumentTextExtractor(),
    embedder: null,
    clock: { now: () => new Date() },
    metrics: NO_METRICS,
    settings: { maxFileBytes: 1_000_000, confirmAttempts: 1, confirmDelaySeconds: 1 },
    sent,
    ...overrides,
  };
}

/**
 * A document `uploaded` long ago whose processing the watchdog has already retried once, so the watchdog's next
 * look fails it.
 */
async function stuckDocument(): Promise<DocumentRef & { uploadId: string }> {
  documents += 1;
  const ref: DocumentRef = {
    agentId: 'agent-1',
    environment: 'production',
    knowledgeBaseId: 'kb-1',
    documentId: `doc-${documents}`,
  };
  const uploadId = `upload-${documents}`;
  const s3Key = `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/${ref.documentId}/notes.txt`;
  await store.reserve(
    reservationRecord({
      ...ref,
      organizationId: 'org-1',
      customDocumentId: null,
      s3Key,
      fileName: 'notes.txt',
      uploadId,
      reservedUntil: LONG_AGO,
      contentType: 'text/plain',
      createdAt: LONG_AGO,
    }),
    LONG_AGO,
  );
  const content = {
    uploadId,
    objectKey: s3Key,
    fileName: 'notes.txt',
    contentType: 'text/plain',
    fileSize: Buffer.byteLength(TEXT),
    updatedAt: LONG_AGO,
  };
  expect(await store.completeReservation(ref, ref.documentId, content, {}, LONG_AGO)).toBe(true);
  expect(await store.recordWatchdogRetry(ref, ref.documentId, uploadId, 1, LONG_AGO)).toBeDefined();
  return { ...ref, uploadId };
}

/** Status and chunk count must agree: `ready` with chunks, `failed` with none. */
async function outcome(ref: DocumentRef) {
  const doc = (await store.get(ref, ref.documentId)) as DocumentRecord;
  return { status: doc.status, code: doc.error?.code ?? null, chunks: await index.countDocumentChunks(ref) };
}

function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

/** Waits for `promise`, at most 10 s: a gate nobody opens fails the test instead of hanging it. */
function atMost<T>(promise: Promise<T>, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} did not happen within 10 s`)), 10_000)),
  ]);
}

it('a document the watchdog fails while a worker indexes it ends failed without chunks', async () => {
  const doc = await stuckDocument();
  const watchdogDeleted = gate();
  const workerDone = gate();
  // The watchdog removes the chunks and then, before it writes the status, the worker indexes and finishes.
  const watchdogIndex: KnowledgeIndex = Object.assign(Object.create(index) as LanceKnowledgeIndex, {
    deleteDocument: async (ref: DocumentRef) => {
      await index.deleteDocument(ref);
      watchdogDeleted.open();
      await atMost(workerDone.opened, 'the worker finishing');
    },
  });
  const workerIndex: KnowledgeIndex = Object.assign(Object.create(index) as LanceKnowledgeIndex, {
    replaceDocument: async (...[ref, chunks]: Parameters<KnowledgeIndex['replaceDocument']>) => {
      await atMost(watchdogDeleted.opened, "the watchdog's delete");
      await index.replaceDocument(ref, chunks);
    },
  });
  const worker = processDocument(depsWith({ index: workerIndex }), doc, doc.uploadId).finally(workerDone.open);
  const report = await runWatchdog(depsWith({ index: watchdogIndex }), { timeoutSeconds: 1 });
  await worker;

  expect(report).toMatchObject({ retried: 0, failed: 1 });
  expect(await outcome(doc)).toEqual({ status: 'failed', code: 'INDEXING_FAILED', chunks: 0 });
});

it('a watchdog killed between the failed status and the removal of chunks leaves a message that removes them', async () => {
  const doc = await stuckDocument();
  // A worker killed mid-indexing left the document's chunks, and the document `uploaded`.
  const record = (await store.get(doc, doc.documentId)) as DocumentRecord;
  await index.replaceDocument(doc, await buildChunks(depsWith(), record));
  expect(await index.countDocumentChunks(doc)).toBeGreaterThan(0);
  // The watchdog process dies as it starts removing them, after the status is written.
  const dying: KnowledgeIndex = Object.assign(Object.create(index) as LanceKnowledgeIndex, {
    deleteDocument: async () => {
      throw new Error('watchdog killed');
    },
  });
  const deps = depsWith({ index: dying });
  await expect(runWatchdog(deps, { timeoutSeconds: 1 })).rejects.toThrow('watchdog killed');
  expect(await outcome(doc)).toMatchObject({ status: 'failed', code: 'INDEXING_FAILED' });
  expect(await index.countDocumentChunks(doc)).toBeGreaterThan(0);
  // The message it queued before failing the document is processed: it finds the document failed and cleans up.
  const queued = deps.sent.filter((m) => m.kind === 'process-document' && m.documentId === doc.documentId);
  expect(queued).toHaveLength(1);
  expect(await processDocument(depsWith(), doc, doc.uploadId)).toBe('skipped');
  expect(await outcome(doc)).toEqual({ status: 'failed', code: 'INDEXING_FAILED', chunks: 0 });
});

it('a watchdog that read the document before a worker made it ready leaves it ready', async () => {
  const doc = await stuckDocument();
  const workerDone = gate();
  // The watchdog reads the document while it is still `uploaded`, then acts only after the worker has finished.
  const staleStore: DocumentStore = Object.assign(Object.create(store) as DocumentStore, {
    get: async (...args: Parameters<DocumentStore['get']>) => {
      const read = await store.get(...args);
      await atMost(workerDone.opened, 'the worker finishing');
      return read;
    },
  });
  const watchdog = runWatchdog(depsWith({ documents: staleStore }), { timeoutSeconds: 1 });
  await processDocument(depsWith(), doc, doc.uploadId).finally(workerDone.open);
  const report = await watchdog;

  expect(report).toMatchObject({ retried: 0, failed: 0 });
  expect(await outcome(doc)).toMatchObject({ status: 'ready', code: null });
  expect((await outcome(doc)).chunks).toBeGreaterThan(0);
});

it('a message for a document that failed meanwhile removes the chunks a crash may have left', async () => {
  // A worker died after the document was failed and before its chunks were removed; its message comes again.
  const doc = await stuckDocument();
  await processDocument(depsWith(), doc, doc.uploadId);
  const leftover = await index.countDocumentChunks(doc);
  expect(leftover).toBeGreaterThan(0);
  const ready = (await store.get(doc, doc.documentId)) as DocumentRecord;
  expect(ready.status).toBe('ready');
  // Failed by hand, as the watchdog's status write would have done, with the chunks still there.
  await client.send(
    new UpdateCommand({
      TableName: 'documents',
      Key: { tenantKey: `${doc.agentId}#${doc.environment}#${doc.knowledgeBaseId}`, documentId: doc.documentId },
      UpdateExpression: 'SET #s = :failed, #e = :error',
      ExpressionAttributeNames: { '#s': 'status', '#e': 'error' },
      ExpressionAttributeValues: { ':failed': 'failed', ':error': { code: 'INDEXING_FAILED', message: 'stuck' } },
    }),
  );

  expect(await processDocument(depsWith(), doc, doc.uploadId)).toBe('skipped');
  expect(await outcome(doc)).toEqual({ status: 'failed', code: 'INDEXING_FAILED', chunks: 0 });
});

describe('a ZIP import whose archive is never read through', () => {
  let jobs = 0;
  async function unreadJob(): Promise<ZipJobRecord> {
    jobs += 1;
    const job: ZipJobRecord = {
      agentId: 'agent-1',
      environment: 'production',
      knowledgeBaseId: 'kb-1',
      zipJobId: `zip-job-${jobs}`,
      organizationId: 'org-1',
      uploadId: `zip-upload-${jobs}`,
      s3Key: `agent-1/production/kb-1/_zip/zip-job-${jobs}/batch.zip`,
      label1: null,
      label2: null,
      status: 'uploaded',
      error: null,
      fileCount: null,
      createdAt: LONG_AGO,
      updatedAt: LONG_AGO,
    };
    await zipJobs.create(job);
    return job;
  }
  const watchdog = (deps = depsWith()) => runWatchdog(deps, { timeoutSeconds: 1 });

  it('is queued again once, then failed with IMPORT_FAILED, and then left alone', async () => {
    const job = await unreadJob();
    const deps = depsWith();
    expect(await watchdog(deps)).toMatchObject({ importsRetried: 1, importsFailed: 0 });
    expect(deps.sent).toEqual([
      {
        kind: 'process-zip',
        agentId: job.agentId,
        environment: job.environment,
        knowledgeBaseId: job.knowledgeBaseId,
        zipJobId: job.zipJobId,
        uploadId: job.uploadId,
      },
    ]);
    // The retry restarted its clock: nothing to do until another timeout has passed.
    expect(await watchdog()).toMatchObject({ importsRetried: 0, importsFailed: 0 });
    expect(await zipJobs.get(job.zipJobId)).toMatchObject({ status: 'uploaded', watchdogRetries: 1 });

    await zipJobs.recordWatchdogRetry(job.zipJobId, 1, LONG_AGO); // as if that timeout had passed
    expect(await watchdog()).toMatchObject({ importsRetried: 0, importsFailed: 1 });
    expect(await zipJobs.get(job.zipJobId)).toMatchObject({ status: 'failed', error: { code: 'IMPORT_FAILED' } });
    expect(await watchdog()).toMatchObject({ importsRetried: 0, importsFailed: 0 });
    // An import attempt starting late does not bring a failed job back.
    await zipJobs.setStatus(job.zipJobId, 'processing', null, new Date().toISOString());
    expect(await zipJobs.get(job.zipJobId)).toMatchObject({ status: 'failed', error: { code: 'IMPORT_FAILED' } });
  });

  it('is not watched once read through, nor once failed by its own import', async () => {
    const read = await unreadJob();
    await zipJobs.markRead(read.zipJobId, 2, [], LONG_AGO);
    const invalid = await unreadJob();
    await zipJobs.setStatus(invalid.zipJobId, 'failed', { code: 'INVALID_ARCHIVE', message: 'x' }, LONG_AGO);
    const deps = depsWith();
    expect(await watchdog(deps)).toMatchObject({ importsRetried: 0, importsFailed: 0 });
    expect(deps.sent).toEqual([]);
    expect(await zipJobs.listPending(new Date().toISOString(), 100)).toEqual([]);
  });
});

describe('a ZIP import cut off half-way', () => {
  it('goes on after the files it listed, and lists every file once', async () => {
    // Files are stored ZIP_IMPORT_BATCH at a time and listed once all of them are queued: two windows here.
    const window = ZIP_IMPORT_BATCH;
    const names = Array.from({ length: window + 4 }, (_, i) => `file-${String(i).padStart(2, '0')}.txt`);
    const objects = new Map<string, Buffer>();
    const job: ZipJobRecord = {
      agentId: 'agent-1',
      environment: 'production',
      knowledgeBaseId: 'kb-2',
      zipJobId: 'zip-cut-off',
      organizationId: 'org-1',
      uploadId: 'zip-cut-off-upload',
      s3Key: 'agent-1/production/kb-2/_zip/zip-cut-off/batch.zip',
      label1: 'source:zip',
      label2: null,
      status: 'uploaded',
      error: null,
      fileCount: null,
      createdAt: LONG_AGO,
      updatedAt: LONG_AGO,
    };
    objects.set(job.s3Key, await zipOf(Object.fromEntries(names.map((name) => [name, `Text of ${name}.`]))));
    await zipJobs.create(job);
    const sent: string[] = [];
    const metrics = recordingMetrics();
    const deps = (failAfter = Number.POSITIVE_INFINITY) => ({
      documents: store,
      zipJobs,
      archives: new ZipArchiveImporter(),
      clock: { now: () => new Date() },
      metrics,
      blobs: inMemoryBlobStore(objects),
      queue: {
        send: async () => {
          throw new Error('the import queues in batches');
        },
        sendAll: async (messages: readonly ProcessingMessage[]) => {
          // The worker dies while queueing: the messages before the one after `failAfter` are queued.
          for (const message of messages) {
            if (sent.length >= failAfter) throw new Error('worker killed');
            if (message.kind === 'process-document') sent.push(message.documentId);
          }
        },
      },
    });
    const message = { ...job, zipJobId: job.zipJobId, uploadId: job.uploadId };

    // The worker dies in the second window, after queueing two of its files.
    await expect(importZip(deps(window + 2), message)).rejects.toThrow('worker killed');
    expect((await zipJobs.listFiles(job.zipJobId)).map((f) => f.fileName)).toEqual(names.slice(0, window));
    expect(await importZip(deps(), message)).toBe('ready');

    // The second attempt queued only the files the first did not list (two of them were created and queued by the
    // first before it died: they are found and queued again, and a message processed twice does nothing the second
    // time). Every file's processing queued, none of the listed files' again.
    const files = await zipJobs.listFiles(job.zipJobId);
    expect(files.map((f) => f.fileName)).toEqual(names);
    const ids = files.map((f) => f.documentId);
    expect(new Set(sent).size).toBe(names.length);
    expect(sent).toHaveLength(names.length + 2);
    expect(sent.slice(window + 2).sort()).toEqual(ids.slice(window).sort());
    expect(ids.slice(0, window).every((id) => sent.slice(0, window + 2).includes(id as string))).toBe(true);
    expect(files.every((f) => f.documentId !== null && f.error === null)).toBe(true);
    expect(await zipJobs.get(job.zipJobId)).toMatchObject({ fileCount: names.length });
    expect(objects.has(job.s3Key)).toBe(false);
    // Counted once, when the archive was read through: the files of the cut-off attempt with those of the second.
    expect(metrics.recorded.filter((r) => r.name === 'ZipFilesImported')).toEqual([
      { name: 'ZipFilesImported', value: names.length, unit: 'count', dimensions: {} },
    ]);
    // A copy of the message after the import counts nothing more.
    expect(await importZip(deps(), message)).toBe('skipped');
    expect(metrics.sum('ZipFilesImported')).toBe(names.length);
  });

  /** A ZIP job of `names` (each file a line of text) waiting for its import, with the archive in `objects`. */
  async function waitingImport(zipJobId: string, knowledgeBaseId: string, names: readonly string[]) {
    const job: ZipJobRecord = {
      agentId: 'agent-1',
      environment: 'production',
      knowledgeBaseId,
      zipJobId,
      organizationId: 'org-1',
      uploadId: `${zipJobId}-upload`,
      s3Key: `agent-1/production/${knowledgeBaseId}/_zip/${zipJobId}/batch.zip`,
      label1: null,
      label2: null,
      status: 'uploaded',
      error: null,
      fileCount: null,
      createdAt: LONG_AGO,
      updatedAt: LONG_AGO,
    };
    const objects = new Map([[job.s3Key, await zipOf(Object.fromEntries(names.map((n) => [n, `Text of ${n}.`])))]]);
    await zipJobs.create(job);
    return { job, objects };
  }

  /** Import deps whose queue dies (a worker killed) once it has queued more than `budget` messages. */
  function dyingAfter(objects: Map<string, Buffer>, budget: number) {
    let left = budget;
    return {
      ...depsWith(),
      archives: new ZipArchiveImporter(),
      blobs: inMemoryBlobStore(objects),
      queue: {
        send: async () => undefined,
        sendAll: async (messages: readonly ProcessingMessage[]) => {
          left -= messages.length;
          if (left < 0) throw new Error('worker killed');
        },
      },
    };
  }

  it('after an attempt cut off in its first window, the next goes one file at a time, each listed at once', async () => {
    const names = Array.from({ length: ZIP_IMPORT_BATCH + 4 }, (_, i) => `one-${String(i).padStart(2, '0')}.txt`);
    const { job, objects } = await waitingImport('zip-one-by-one', 'kb-4', names);
    // The first attempt dies in its first window: nothing is listed.
    await expect(importZip(dyingAfter(objects, 3), { ...job })).rejects.toThrow('worker killed');
    expect(await zipJobs.listFiles(job.zipJobId)).toHaveLength(0);
    // The next found the job `processing`: it stores and lists one file at a time, and dies after three.
    await expect(importZip(dyingAfter(objects, 3), { ...job })).rejects.toThrow('worker killed');
    expect((await zipJobs.listFiles(job.zipJobId)).map((f) => f.fileName)).toEqual(names.slice(0, 3));
    expect(await importZip(dyingAfter(objects, Number.POSITIVE_INFINITY), { ...job })).toBe('ready');
    expect((await zipJobs.listFiles(job.zipJobId)).map((f) => f.fileName)).toEqual(names);
  });

  it('is not failed by the watchdog while each attempt gets further, however often it is cut off', async () => {
    // The watchdog re-queued the import once; that attempt lists a window and dies. The job got further, so the
    // watchdog's next look queues it again instead of failing it (a worker killed every few seconds, as in the
    // fault-injection proof, cuts off most attempts of a large archive).
    const window = ZIP_IMPORT_BATCH;
    const names = Array.from({ length: window + 4 }, (_, i) => `part-${String(i).padStart(2, '0')}.txt`);
    const { job, objects } = await waitingImport('zip-progress', 'kb-3', names);
    expect(await zipJobs.recordWatchdogRetry(job.zipJobId, 1, LONG_AGO)).toBe(true);
    await expect(importZip(dyingAfter(objects, window), { ...job })).rejects.toThrow('worker killed');
    expect(await zipJobs.listFiles(job.zipJobId)).toHaveLength(window);
    const after = await zipJobs.get(job.zipJobId);
    expect(after?.watchdogRetries).toBeUndefined();

    const later = depsWith({ clock: { now: () => new Date(Date.now() + 60_000) } });
    expect(await runWatchdog(later, { timeoutSeconds: 1 })).toMatchObject({ importsRetried: 1, importsFailed: 0 });
    // (The documents the attempt created and queued are re-queued too: they are `uploaded` as long ago.)
    expect(later.sent.filter((m) => m.kind === 'process-zip')).toEqual([
      expect.objectContaining({ zipJobId: job.zipJobId }),
    ]);
    expect(await zipJobs.get(job.zipJobId)).toMatchObject({ status: 'processing', watchdogRetries: 1, error: null });
  });
});
