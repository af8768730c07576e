/**
 * The deletion job of a knowledge base (core/processing/knowledge-base-deletion.ts) against the real stores
 * (DynamoDB on an in-process dynalite, with the tables of lib/tables.ts) and the real embedded index, each message
 * delivered by hand: pages, a copy of a page delivered again, a page cut off half-way, a message lost, processing
 * that indexes a document while the job removes it, an import still reading its archive, and a configuration that
 * names the knowledge base again meanwhile. Each ends with nothing of the knowledge base left.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { DynamoRetrievalConfigStore } from '#adapters/store/dynamodb/retrieval-config-store';
import { DynamoZipJobStore } from '#adapters/store/dynamodb/zip-job-store';
import { type DatasetRef, reservationRecord } from '#core/knowledge/document';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import {
  type KnowledgeBaseDeletionDeps,
  runKnowledgeBaseDeletionPage,
  startKnowledgeBaseDeletion,
} from '#core/processing/knowledge-base-deletion';
import { processDocument } from '#core/processing/process-document';
import { runWatchdog } from '#core/processing/watchdog';
import { NO_METRICS } from '#ports/metrics';
import type { DocumentRef, KnowledgeIndex } from '#ports/processing';
import type { ProcessingMessage } from '#ports/services';
import type { KnowledgeBaseRecord } from '#ports/stores';
import { TABLES } from '../../lib/tables';
import { inMemoryBlobStore } from '../helpers/blobs';
import { NO_METADATA } from '../helpers/chunks';
import { type LocalDynamo, startDynalite } from '../helpers/dynalite';
import { knowledgeBaseFixture, type QueuedMessage, recordingQueue } from '../helpers/job-harness';

let dynamo: LocalDynamo;
let dir: string;
let index: LanceKnowledgeIndex;
let knowledgeBases: DynamoKnowledgeBaseStore;
let documents: DynamoDocumentStore;
let zipJobs: DynamoZipJobStore;
let retrievalConfigs: DynamoRetrievalConfigStore;
let kbs = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
  for (const table of ['knowledgeBases', 'documents', 'zipJobs', 'retrievalConfigs'] as const) {
    await dynamo.createTable(table, TABLES[table]);
  }
  knowledgeBases = new DynamoKnowledgeBaseStore(dynamo.client, 'knowledgeBases');
  documents = new DynamoDocumentStore(dynamo.client, 'documents');
  zipJobs = new DynamoZipJobStore(dynamo.client, 'zipJobs');
  retrievalConfigs = new DynamoRetrievalConfigStore(dynamo.client, 'retrievalConfigs');
  dir = mkdtempSync(join(tmpdir(), 'aps-kb-job-'));
  index = await LanceKnowledgeIndex.open(dir, { indexRefreshDelayMs: 60_000 });
});

afterAll(async () => {
  await index?.close();
  await dynamo?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Harness {
  readonly deps: KnowledgeBaseDeletionDeps;
  readonly kb: KnowledgeBaseRecord;
  readonly objects: Map<string, Buffer>;
  /** Messages queued and not yet delivered, with their delay. */
  readonly queued: QueuedMessage[];
  /** Delivers the oldest queued message; what the job answered. */
  deliverNext(): Promise<string>;
  /** Delivers until the queue is empty; how many messages that took. */
  deliverAll(): Promise<number>;
  now: Date;
}

async function harness(overrides: Partial<KnowledgeBaseDeletionDeps> = {}, pageSize = 3): Promise<Harness> {
  kbs += 1;
  const kb = knowledgeBaseFixture(`kb-${kbs}`);
  await knowledgeBases.put(kb);
  const objects = new Map<string, Buffer>();
  const { queue, queued } = recordingQueue();
  const h: Harness = {
    kb,
    objects,
    queued,
    now: new Date('2026-02-01T00:00:00.000Z'),
    deps: {
      knowledgeBases,
      documents,
      zipJobs,
      retrievalConfigs,
      blobs: inMemoryBlobStore(objects),
      index,
      queue,
      clock: { now: () => h.now },
      knowledgeBaseDeletion: { pageSize, importWaitSeconds: 10 },
      ...overrides,
    },
    async deliverNext() {
      const next = queued.shift();
      if (next?.message.kind !== 'delete-knowledge-base') throw new Error(`no deletion message: ${next?.message.kind}`);
      h.now = new Date(h.now.getTime() + 1000);
      return runKnowledgeBaseDeletionPage(h.deps, next.message);
    },
    async deliverAll() {
      let delivered = 0;
      while (queued.length > 0) {
        await h.deliverNext();
        delivered += 1;
        if (delivered > 100) throw new Error('the job does not end');
      }
      return delivered;
    },
  };
  return h;
}

const TEXT = 'Hold the reset button of the router for ten seconds to restore its factory settings.';

/** A `ready` document with its object and its chunks (or `uploaded`, waiting for processing, without chunks). */
async function addDocument(h: Harness, environment: Environment, n: number, status: 'ready' | 'uploaded' = 'ready') {
  const ref: DocumentRef = {
    agentId: h.kb.agentId,
    environment,
    knowledgeBaseId: h.kb.knowledgeBaseId,
    documentId: `doc-${environment}-${n}`,
  };
  const uploadId = `upload-${environment}-${n}`;
  const s3Key = `${ref.agentId}/${environment}/${ref.knowledgeBaseId}/${ref.documentId}/notes.txt`;
  const now = h.now.toISOString();
  const reservation = reservationRecord({
    ...ref,
    organizationId: h.kb.organizationId,
    customDocumentId: null,
    s3Key,
    fileName: 'notes.txt',
    uploadId,
    reservedUntil: now,
    contentType: 'text/plain',
    createdAt: now,
  });
  expect(await documents.reserve(reservation, now)).toBe(true);
  h.objects.set(s3Key, Buffer.from(TEXT));
  const content = {
    uploadId,
    objectKey: s3Key,
    fileName: 'notes.txt',
    contentType: 'text/plain',
    fileSize: 80,
    updatedAt: now,
  };
  await documents.completeReservation(ref, ref.documentId, content, {}, now);
  if (status === 'ready') {
    await index.replaceDocument(ref, [
      {
        ...ref,
        chunkId: `${ref.documentId}#0#abc`,
        s3Key,
        position: 0,
        text: TEXT,
        ...NO_METADATA,
      },
    ]);
    await documents.setStatus(ref, ref.documentId, uploadId, 'ready', null, now);
  }
  return { ...ref, uploadId, s3Key };
}

async function remains(h: Harness) {
  let records = 0;
  let chunks = 0;
  for (const environment of ENVIRONMENTS) {
    const dataset: DatasetRef = { agentId: h.kb.agentId, environment, knowledgeBaseId: h.kb.knowledgeBaseId };
    for await (const _ of documents.listDataset(dataset)) records += 1;
    chunks += (await index.listChunks(dataset)).length;
  }
  const prefix = `${h.kb.agentId}/`;
  const objects = [...h.objects.keys()].filter((key) => key.startsWith(prefix) && key.includes(h.kb.knowledgeBaseId));
  const row = await knowledgeBases.get(h.kb.agentId, h.kb.knowledgeBaseId);
  const jobs = await zipJobs.listOfKnowledgeBase(h.kb.agentId, h.kb.knowledgeBaseId);
  return { records, chunks, objects: objects.length, row: row !== undefined, jobs: jobs.length };
}

const NOTHING = { records: 0, chunks: 0, objects: 0, row: false, jobs: 0 };

it('removes documents of every environment page by page, the row last; a copy of a page does nothing', async () => {
  const h = await harness();
  for (const environment of ENVIRONMENTS) for (let n = 0; n < 3; n++) await addDocument(h, environment, n);
  await addDocument(h, 'production', 3);
  expect(await remains(h)).toEqual({ records: 10, chunks: 10, objects: 10, row: true, jobs: 0 });

  const job = await startKnowledgeBaseDeletion(h.deps, h.kb);
  expect(job).toMatchObject({ status: 'deleting', defaultRetrievalChanged: [] });
  const first = h.queued[0].message;
  expect(await h.deliverNext()).toBe('ready');
  expect((await remains(h)).records).toBe(7);
  // The first page delivered again (SQS delivers at least once): the job has moved on, nothing happens.
  expect(
    await runKnowledgeBaseDeletionPage(h.deps, first as Extract<ProcessingMessage, { kind: 'delete-knowledge-base' }>),
  ).toBe('skipped');
  expect(h.queued).toHaveLength(1);
  // 10 documents in pages of 3: three more pages, then the last message removes the row.
  expect(await h.deliverAll()).toBe(4);
  expect(await remains(h)).toEqual(NOTHING);
  // A second start after the end finds nothing.
  expect(await startKnowledgeBaseDeletion(h.deps, h.kb)).toBeUndefined();
});

it('goes on after a page cut off half-way, and resumes a job whose message was lost', async () => {
  let failOnce = true;
  let deletes = 0;
  const flaky: KnowledgeIndex = Object.assign(Object.create(index) as LanceKnowledgeIndex, {
    deleteDocument: async (ref: DocumentRef) => {
      deletes += 1;
      if (failOnce && deletes === 2) {
        failOnce = false;
        throw new Error('worker killed');
      }
      await index.deleteDocument(ref);
    },
  });
  const h = await harness({ index: flaky });
  for (let n = 0; n < 5; n++) await addDocument(h, 'staging', n);
  await startKnowledgeBaseDeletion(h.deps, h.kb);
  const page0 = h.queued[0];
  await expect(h.deliverNext()).rejects.toThrow('worker killed');
  expect(h.queued).toHaveLength(0);
  // Redelivered: the page is done from what is left.
  h.queued.push(page0);
  expect(await h.deliverNext()).toBe('ready');
  expect((await remains(h)).records).toBe(2);

  // The next page's message is lost. Before the timeout the watchdog leaves the job alone; after it, it moves the
  // job on and queues the next page itself, and a late copy of the lost one then does nothing.
  const lost = h.queued.shift();
  const watchdog = () =>
    runWatchdog(
      {
        ...h.deps,
        extractor: new DocumentTextExtractor(),
        embedder: null,
        metrics: NO_METRICS,
        settings: { maxFileBytes: 1_000_000, confirmAttempts: 1, confirmDelaySeconds: 1 },
      },
      { timeoutSeconds: 60 },
    );
  expect((await watchdog()).deletionsResumed).toBe(0);
  h.now = new Date(h.now.getTime() + 61_000);
  expect((await watchdog()).deletionsResumed).toBe(1);
  expect(h.queued).toHaveLength(1);
  if (lost?.message.kind !== 'delete-knowledge-base') throw new Error('no lost page');
  expect(await runKnowledgeBaseDeletionPage(h.deps, lost.message)).toBe('skipped');
  await h.deliverAll();
  expect(await remains(h)).toEqual(NOTHING);
});

it('leaves no chunk of a document that processing indexes while the job removes it', async () => {
  const h = await harness();
  const doc = await addDocument(h, 'development', 0, 'uploaded');
  const processingDeps = {
    documents,
    blobs: h.deps.blobs,
    queue: h.deps.queue,
    index,
    extractor: new DocumentTextExtractor(),
    embedder: null,
    clock: h.deps.clock,
    settings: { maxFileBytes: 1_000_000, confirmAttempts: 1, confirmDelaySeconds: 1 },
    metrics: NO_METRICS,
  };
  // The job has removed the chunks (there were none yet); before it removes the object and the record, the upload's
  // processing runs whole: it indexes and writes `ready`.
  let raced = false;
  const blobs = h.deps.blobs;
  const racingBlobs = {
    ...blobs,
    delete: async (keys: readonly string[]) => {
      if (!raced && keys.includes(doc.s3Key)) {
        raced = true;
        expect(await processDocument(processingDeps, doc, doc.uploadId)).toBe('ready');
        expect(await index.countDocumentChunks(doc)).toBeGreaterThan(0);
      }
      await blobs.delete(keys);
    },
  };
  const deps = { ...h.deps, blobs: racingBlobs };
  await startKnowledgeBaseDeletion(deps, h.kb);
  for (let next = h.queued.shift(); next; next = h.queued.shift()) {
    if (next.message.kind === 'delete-knowledge-base') await runKnowledgeBaseDeletionPage(deps, next.message);
  }
  expect(raced).toBe(true);
  expect(await remains(h)).toEqual(NOTHING);
});

it('waits for an import still reading its archive, deleting the archive, then removes what it added and the job', async () => {
  const h = await harness();
  const zipJobId = `zip-${h.kb.knowledgeBaseId}`;
  const archive = `${h.kb.agentId}/production/${h.kb.knowledgeBaseId}/_imports/${zipJobId}/batch.zip`;
  h.objects.set(archive, Buffer.from('PK'));
  const now = h.now.toISOString();
  await zipJobs.create({
    agentId: h.kb.agentId,
    environment: 'production',
    knowledgeBaseId: h.kb.knowledgeBaseId,
    zipJobId,
    organizationId: h.kb.organizationId,
    uploadId: 'upload-zip',
    s3Key: archive,
    label1: null,
    label2: null,
    status: 'processing',
    error: null,
    fileCount: null,
    createdAt: now,
    updatedAt: now,
  });
  // And one the watchdog gave up on: `failed`, its archive left in the bucket.
  const failedArchive = `${h.kb.agentId}/staging/${h.kb.knowledgeBaseId}/_imports/zip-failed/old.zip`;
  h.objects.set(failedArchive, Buffer.from('PK'));
  await zipJobs.create({
    agentId: h.kb.agentId,
    environment: 'staging',
    knowledgeBaseId: h.kb.knowledgeBaseId,
    zipJobId: `zip-failed-${h.kb.knowledgeBaseId}`,
    organizationId: h.kb.organizationId,
    uploadId: 'upload-zip-failed',
    s3Key: failedArchive,
    label1: null,
    label2: null,
    status: 'failed',
    error: { code: 'IMPORT_FAILED', message: 'not imported in time' },
    fileCount: null,
    createdAt: now,
    updatedAt: now,
  });
  await zipJobs.putFile(zipJobId, 1, {
    fileName: 'a.txt',
    documentId: 'doc-production-0',
    s3Key: null,
    label1: null,
    label2: null,
    error: null,
  });
  await startKnowledgeBaseDeletion(h.deps, h.kb);
  expect(await h.deliverNext()).toBe('ready');
  // No document yet, but the import is reading: its archive goes, and the job looks again later.
  expect(h.objects.has(archive)).toBe(false);
  expect(h.queued.map((q) => q.delaySeconds)).toEqual([10]);
  expect(await h.deliverNext()).toBe('ready');
  expect(h.queued.map((q) => q.delaySeconds)).toEqual([10]);
  // The import finishes from its own copy of the archive: it added a document, and it is read through.
  await addDocument(h, 'production', 0);
  await zipJobs.markRead(zipJobId, 1, [], h.now.toISOString());
  expect(h.objects.has(failedArchive)).toBe(true);
  await h.deliverAll();
  expect(await remains(h)).toEqual(NOTHING);
  expect(h.objects.has(failedArchive)).toBe(false);
  expect(await zipJobs.listFiles(zipJobId)).toEqual([]);
});

it('takes the knowledge base out of every default retrieval configuration, also one written meanwhile', async () => {
  const h = await harness();
  const config = (environment: Environment, ids: string[]) => ({
    agentId: h.kb.agentId,
    environment,
    enabled: true,
    knowledgeBases: ids.map((knowledgeBaseId) => ({ knowledgeBaseId })),
    updatedAt: '2026-01-15T00:00:00.000Z',
  });
  await retrievalConfigs.put(config('production', [h.kb.knowledgeBaseId, 'other-kb']));
  await retrievalConfigs.put(config('development', ['other-kb']));
  const job = await startKnowledgeBaseDeletion(h.deps, h.kb);
  expect(job?.defaultRetrievalChanged).toEqual(['production']);
  expect((await retrievalConfigs.get(h.kb.agentId, 'production'))?.knowledgeBases).toEqual([
    { knowledgeBaseId: 'other-kb' },
  ]);
  expect((await knowledgeBases.get(h.kb.agentId, h.kb.knowledgeBaseId))?.deletion?.defaultRetrievalChanged).toEqual([
    'production',
  ]);
  // A PUT that checked the knowledge base just before it was marked writes it back.
  await retrievalConfigs.put(config('staging', [h.kb.knowledgeBaseId]));
  await h.deliverAll();
  expect((await retrievalConfigs.get(h.kb.agentId, 'staging'))?.knowledgeBases).toEqual([]);
  expect((await retrievalConfigs.get(h.kb.agentId, 'development'))?.knowledgeBases).toEqual([
    { knowledgeBaseId: 'other-kb' },
  ]);
  expect(await remains(h)).toEqual(NOTHING);
});
