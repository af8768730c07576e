/**
 * The reindex job of a knowledge base (core/processing/knowledge-base-reindex.ts) against the real stores (DynamoDB on
 * an in-process dynalite, with the tables of lib/tables.ts) and the real embedded index, each message delivered by
 * hand. Documents are processed into one index, which is then replaced by an empty one (what a changed index
 * configuration does); the reindex makes every `ready` document retrievable again from its stored file, leaves what
 * the API shows of it alone, and survives a copy of a page, a page cut off, a lost message, and a delete or a new
 * upload while it writes.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { DynamoZipJobStore } from '#adapters/store/dynamodb/zip-job-store';
import { type DocumentRecord, reservationRecord } from '#core/knowledge/document';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import {
  type KnowledgeBaseReindexDeps,
  runKnowledgeBaseReindexPage,
  startKnowledgeBaseReindex,
} from '#core/processing/knowledge-base-reindex';
import { processDocument } from '#core/processing/process-document';
import { runWatchdog } from '#core/processing/watchdog';
import { NO_METRICS } from '#ports/metrics';
import type { DocumentRef, IndexedChunk, KnowledgeIndex } from '#ports/processing';
import type { ProcessingMessage } from '#ports/services';
import type { KnowledgeBaseRecord } from '#ports/stores';
import { TABLES } from '../../lib/tables';
import { inMemoryBlobStore } from '../helpers/blobs';
import { type LocalDynamo, startDynalite } from '../helpers/dynalite';
import { knowledgeBaseFixture, type QueuedMessage, recordingQueue } from '../helpers/job-harness';

type ReindexMessage = Extract<ProcessingMessage, { kind: 'reindex-knowledge-base' }>;

let dynamo: LocalDynamo;
let dirs: string[] = [];
const indexes: LanceKnowledgeIndex[] = [];
let knowledgeBases: DynamoKnowledgeBaseStore;
let documents: DynamoDocumentStore;
let zipJobs: DynamoZipJobStore;
let kbs = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
  for (const table of ['knowledgeBases', 'documents', 'zipJobs'] as const) {
    await dynamo.createTable(table, TABLES[table]);
  }
  knowledgeBases = new DynamoKnowledgeBaseStore(dynamo.client, 'knowledgeBases');
  documents = new DynamoDocumentStore(dynamo.client, 'documents');
  zipJobs = new DynamoZipJobStore(dynamo.client, 'zipJobs');
});

afterAll(async () => {
  for (const index of indexes) await index.close();
  await dynamo?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});

/** A new, empty index: the first one a document is processed into, or the replacement of it. */
async function freshIndex(): Promise<LanceKnowledgeIndex> {
  const dir = mkdtempSync(join(tmpdir(), 'aps-reindex-'));
  dirs.push(dir);
  const index = await LanceKnowledgeIndex.open(dir, { indexRefreshDelayMs: 0 });
  indexes.push(index);
  return index;
}

interface Harness {
  deps: KnowledgeBaseReindexDeps;
  readonly kb: KnowledgeBaseRecord;
  readonly objects: Map<string, Buffer>;
  readonly queued: QueuedMessage[];
  /** Delivers the oldest queued reindex page; what it answered. */
  deliverNext(): Promise<string>;
  /** Delivers until no reindex page is queued; how many pages that took. */
  deliverAll(): Promise<number>;
  now: Date;
}

async function harness(pageSize = 3): Promise<Harness> {
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
      blobs: inMemoryBlobStore(objects),
      index: await freshIndex(),
      extractor: new DocumentTextExtractor(),
      embedder: null,
      metrics: NO_METRICS,
      settings: { maxFileBytes: 1_000_000, confirmAttempts: 1, confirmDelaySeconds: 1 },
      queue,
      clock: { now: () => h.now },
      knowledgeBaseReindex: { pageSize },
    },
    async deliverNext() {
      const at = queued.findIndex(({ message }) => message.kind === 'reindex-knowledge-base');
      if (at < 0) throw new Error('no reindex page queued');
      const [{ message }] = queued.splice(at, 1);
      h.now = new Date(h.now.getTime() + 1000);
      return runKnowledgeBaseReindexPage(h.deps, message as ReindexMessage);
    },
    async deliverAll() {
      let delivered = 0;
      while (queued.some(({ message }) => message.kind === 'reindex-knowledge-base')) {
        await h.deliverNext();
        delivered += 1;
        if (delivered > 100) throw new Error('the job does not end');
      }
      return delivered;
    },
  };
  return h;
}

const WORDS = ['router', 'printer', 'scanner', 'modem', 'speaker', 'monitor', 'keyboard', 'camera', 'tablet', 'phone'];

/** The text of document `n`: a word of its own, so a query for that word finds it and no other. */
const textOf = (n: number) =>
  `Hold the reset button of the ${WORDS[n]} for ten seconds to restore its factory settings.`;

/** A document uploaded and processed whole (into the harness's index): `ready`, or left `uploaded`. */
async function addDocument(
  h: Harness,
  environment: Environment,
  n: number,
  status: 'ready' | 'uploaded' | 'reserved' = 'ready',
): Promise<DocumentRecord> {
  const ref: DocumentRef = {
    agentId: h.kb.agentId,
    environment,
    knowledgeBaseId: h.kb.knowledgeBaseId,
    documentId: `doc-${environment}-${n}`,
  };
  const uploadId = `upload-${environment}-${n}`;
  const s3Key = `${ref.agentId}/${environment}/${ref.knowledgeBaseId}/${ref.documentId}/notes.txt`;
  const now = h.now.toISOString();
  expect(
    await documents.reserve(
      reservationRecord({
        ...ref,
        organizationId: h.kb.organizationId,
        customDocumentId: null,
        s3Key,
        fileName: 'notes.txt',
        uploadId,
        reservedUntil: now,
        contentType: 'text/plain',
        createdAt: now,
      }),
      now,
    ),
  ).toBe(true);
  if (status !== 'reserved') {
    h.objects.set(s3Key, Buffer.from(textOf(n)));
    const content = {
      uploadId,
      objectKey: s3Key,
      fileName: 'notes.txt',
      contentType: 'text/plain',
      fileSize: 80,
      updatedAt: now,
    };
    await documents.completeReservation(ref, ref.documentId, content, { label1: `label-${n}` }, now);
    if (status === 'ready') expect(await processDocument(h.deps, ref, uploadId)).toBe('ready');
  }
  return (await documents.get(ref, ref.documentId)) as DocumentRecord;
}

/** The documents of the environment a query for document `n`'s own word finds. */
async function found(h: Harness, environment: Environment, n: number): Promise<string[]> {
  const hits = await h.deps.index.query({
    scope: { agentId: h.kb.agentId, environment, knowledgeBaseId: h.kb.knowledgeBaseId },
    text: WORDS[n],
    filters: [],
    limit: 10,
  });
  return [...new Set(hits.map((hit) => hit.chunk.documentId))];
}

async function chunksOf(h: Harness, environment: Environment): Promise<Omit<IndexedChunk, 'vector'>[]> {
  const dataset = { agentId: h.kb.agentId, environment, knowledgeBaseId: h.kb.knowledgeBaseId };
  return (h.deps.index as LanceKnowledgeIndex).listChunks(dataset);
}

async function jobOf(h: Harness) {
  return (await knowledgeBases.get(h.kb.agentId, h.kb.knowledgeBaseId))?.reindex;
}

it('makes every ready document retrievable again from an empty index, page by page, and leaves the documents as they were', async () => {
  const h = await harness();
  const ready: DocumentRecord[] = [];
  for (const environment of ENVIRONMENTS) for (let n = 0; n < 3; n++) ready.push(await addDocument(h, environment, n));
  ready.push(await addDocument(h, 'production', 3));
  const uploaded = await addDocument(h, 'production', 4, 'uploaded');
  await addDocument(h, 'staging', 5, 'reserved');
  expect(await found(h, 'production', 3)).toEqual(['doc-production-3']);

  // The index is replaced: every document is still `ready`, and none is found.
  h.deps = { ...h.deps, index: await freshIndex() };
  for (const environment of ENVIRONMENTS) expect(await chunksOf(h, environment)).toEqual([]);
  expect(await found(h, 'production', 3)).toEqual([]);

  const started = await startKnowledgeBaseReindex(h.deps, h.kb);
  expect(started).toMatchObject({
    started: true,
    view: { knowledgeBaseId: h.kb.knowledgeBaseId, status: 'running', total: 10, reindexed: 0, completedAt: null },
  });
  expect(started.view?.environments).toEqual([...ENVIRONMENTS]);
  const first = h.queued[0].message as ReindexMessage;
  expect(await h.deliverNext()).toBe('ready');
  expect(await jobOf(h)).toMatchObject({ status: 'running', page: 1, reindexed: 3, skipped: 0, failed: 0 });
  // A second start while it runs is refused, and the job is not queued twice.
  expect(await startKnowledgeBaseReindex(h.deps, h.kb)).toMatchObject({ started: false, reason: 'running' });
  // The first page delivered again (SQS delivers at least once): the job has moved past it, nothing happens.
  expect(await runKnowledgeBaseReindexPage(h.deps, first)).toBe('skipped');
  expect(h.queued).toHaveLength(1);

  // development (3: a page, then an empty one that moves on), staging (3 + a reservation), production (5).
  expect(await h.deliverAll()).toBeGreaterThanOrEqual(3);
  const job = await jobOf(h);
  expect(job).toMatchObject({ status: 'completed', cursor: null, total: 10, reindexed: 10, skipped: 1, failed: 0 });
  expect(job?.completedAt).toBe(job?.updatedAt);

  for (const doc of ready) {
    const n = Number(doc.documentId.split('-').pop());
    expect(await found(h, doc.environment, n)).toEqual([doc.documentId]);
    // Status, counts and dates as they were; the labels are on the chunks again.
    expect(await documents.get(doc, doc.documentId)).toEqual(doc);
  }
  const production = await chunksOf(h, 'production');
  expect(production.find((chunk) => chunk.documentId === 'doc-production-3')?.label1).toBe('label-3');
  // The `uploaded` document is its own processing's: the reindex left it alone.
  expect(production.some((chunk) => chunk.documentId === uploaded.documentId)).toBe(false);
  expect((await documents.get(uploaded, uploaded.documentId))?.status).toBe('uploaded');

  // Completed, it can be started again; run again, it writes the same chunks (none twice).
  expect(await startKnowledgeBaseReindex(h.deps, h.kb)).toMatchObject({ started: true });
  const chunksBefore = (await chunksOf(h, 'production')).length;
  await h.deliverAll();
  expect(await jobOf(h)).toMatchObject({ status: 'completed', reindexed: 10 });
  expect((await chunksOf(h, 'production')).length).toBe(chunksBefore);
});

it('reindexes one environment when asked for one', async () => {
  const h = await harness();
  for (const environment of ENVIRONMENTS) await addDocument(h, environment, 0);
  h.deps = { ...h.deps, index: await freshIndex() };
  const started = await startKnowledgeBaseReindex(h.deps, h.kb, ['staging']);
  expect(started.view).toMatchObject({ environments: ['staging'], total: 1 });
  await h.deliverAll();
  expect(await jobOf(h)).toMatchObject({ status: 'completed', reindexed: 1 });
  expect(await found(h, 'staging', 0)).toEqual(['doc-staging-0']);
  expect(await found(h, 'production', 0)).toEqual([]);
  expect(await found(h, 'development', 0)).toEqual([]);
});

it('goes on after a page cut off half-way, counts a document whose file is gone, and resumes after a lost message', async () => {
  const h = await harness(2);
  for (let n = 0; n < 5; n++) await addDocument(h, 'production', n);
  const gone = await addDocument(h, 'production', 5);
  h.objects.delete(gone.objectKey);
  const replaced = await freshIndex();
  let writes = 0;
  let failOnce = true;
  h.deps = {
    ...h.deps,
    index: Object.assign(Object.create(replaced) as LanceKnowledgeIndex, {
      replaceDocument: async (...args: Parameters<KnowledgeIndex['replaceDocument']>) => {
        writes += 1;
        if (failOnce && writes === 2) {
          failOnce = false;
          throw new Error('worker killed');
        }
        return replaced.replaceDocument(args[0], args[1]);
      },
    }),
  };
  await startKnowledgeBaseReindex(h.deps, h.kb, ['production']);
  const page0 = h.queued[0];
  await expect(h.deliverNext()).rejects.toThrow('worker killed');
  expect(await jobOf(h)).toMatchObject({ page: 0, reindexed: 0 });
  // Redelivered: the page is done again from the same cursor, the document written before the cut written again.
  h.queued.push(page0);
  expect(await h.deliverNext()).toBe('ready');
  expect(await jobOf(h)).toMatchObject({ page: 1, reindexed: 2 });

  // The next page's message is lost. Before the timeout the watchdog leaves the job alone; after it, it moves the
  // job on and queues the next page itself, and a late copy of the lost one then does nothing.
  const lost = h.queued.shift()?.message as ReindexMessage;
  const watchdog = () => runWatchdog({ ...h.deps, zipJobs }, { timeoutSeconds: 60 });
  expect((await watchdog()).reindexesResumed).toBe(0);
  h.now = new Date(h.now.getTime() + 61_000);
  expect((await watchdog()).reindexesResumed).toBe(1);
  // (The watchdog retries an `uploaded` document of an earlier test as well: the tables are shared.)
  expect(h.queued.filter(({ message }) => message.kind === 'reindex-knowledge-base')).toEqual([
    { message: { ...lost, page: 2 } },
  ]);
  expect(await runKnowledgeBaseReindexPage(h.deps, lost)).toBe('skipped');
  await h.deliverAll();

  const job = await jobOf(h);
  expect(job).toMatchObject({ status: 'completed', total: 6, reindexed: 5, skipped: 0, failed: 1 });
  expect(job?.failures).toEqual([
    {
      environment: 'production',
      documentId: gone.documentId,
      code: 'PARSE_ERROR',
      message: 'The uploaded file is no longer in storage',
    },
  ]);
  for (let n = 0; n < 5; n++) expect(await found(h, 'production', n)).toEqual([`doc-production-${n}`]);
  // The document whose file is gone stays as it was.
  expect((await documents.get(gone, gone.documentId))?.status).toBe('ready');
});

it('leaves no chunk of a document deleted while its chunks are written', async () => {
  const h = await harness();
  const doc = await addDocument(h, 'development', 0);
  const replaced = await freshIndex();
  h.deps = {
    ...h.deps,
    index: Object.assign(Object.create(replaced) as LanceKnowledgeIndex, {
      replaceDocument: async (...args: Parameters<KnowledgeIndex['replaceDocument']>) => {
        await replaced.replaceDocument(args[0], args[1]);
        // The API's delete lands between the write and the reindex's second look at the record.
        await documents.delete(doc, doc.documentId);
      },
    }),
  };
  await startKnowledgeBaseReindex(h.deps, h.kb, ['development']);
  await h.deliverAll();
  expect(await documents.get(doc, doc.documentId)).toBeUndefined();
  expect(await chunksOf(h, 'development')).toEqual([]);
  expect(await jobOf(h)).toMatchObject({ status: 'completed', reindexed: 0, skipped: 1 });
});

it('ends with the new content only when a new upload is processed while the old one is written again', async () => {
  const h = await harness();
  const doc = await addDocument(h, 'staging', 0);
  const replaced = await freshIndex();
  let raced = false;
  const upload2 = 'upload-staging-0-v2';
  const reindexIndex: KnowledgeIndex = Object.assign(Object.create(replaced) as LanceKnowledgeIndex, {
    replaceDocument: async (...args: Parameters<KnowledgeIndex['replaceDocument']>) => {
      if (!raced) {
        raced = true;
        // Before the reindex's write lands, new content is uploaded and processed whole into the same index.
        const now = h.now.toISOString();
        h.objects.set(`${doc.objectKey}.v2`, Buffer.from(textOf(7)));
        const content = {
          uploadId: upload2,
          objectKey: `${doc.objectKey}.v2`,
          fileName: 'notes.txt',
          contentType: 'text/plain',
          fileSize: 80,
          updatedAt: now,
        };
        expect(await documents.replaceContent(doc, doc.documentId, content, {})).toBeTruthy();
        expect(await processDocument({ ...h.deps, index: replaced }, doc, upload2)).toBe('ready');
      }
      return replaced.replaceDocument(args[0], args[1]);
    },
  });
  h.deps = { ...h.deps, index: reindexIndex };
  await startKnowledgeBaseReindex(h.deps, h.kb, ['staging']);
  await h.deliverAll();
  expect(raced).toBe(true);
  expect(await found(h, 'staging', 7)).toEqual([doc.documentId]);
  expect(await found(h, 'staging', 0)).toEqual([]);
  expect(await documents.get(doc, doc.documentId)).toMatchObject({ status: 'ready', uploadId: upload2 });
});

it('passes over a document that fails every attempt once the watchdog resumed the job, and counts it', async () => {
  const h = await harness(3);
  for (let n = 0; n < 4; n++) await addDocument(h, 'development', n);
  const poison = 'doc-development-1';
  const extractor = new DocumentTextExtractor();
  h.deps = {
    ...h.deps,
    index: await freshIndex(),
    extractor: {
      extract: async (bytes, hints) => {
        // Not a ProcessingError: to the page it looks transient, so the page fails every delivery.
        if (bytes.toString().includes(WORDS[1])) throw new Error('extractor crashed');
        return extractor.extract(bytes, hints);
      },
    },
  };
  await startKnowledgeBaseReindex(h.deps, h.kb, ['development']);
  const page0 = h.queued.shift() as QueuedMessage;
  for (let delivery = 0; delivery < 5; delivery++) {
    h.queued.push(page0);
    await expect(h.deliverNext()).rejects.toThrow('extractor crashed');
  }
  // Dead-lettered. The watchdog resumes the job: the span of the page that stalled (3 documents) is gone through one
  // document a page, and the crash counts as a failure; then pages are whole again.
  h.now = new Date(h.now.getTime() + 61_000);
  expect((await runWatchdog({ ...h.deps, zipJobs }, { timeoutSeconds: 60 })).reindexesResumed).toBe(1);
  expect(await jobOf(h)).toMatchObject({ slowPages: 3, reindexed: 0 });
  expect(await h.deliverNext()).toBe('ready');
  expect(await jobOf(h)).toMatchObject({ reindexed: 1, failed: 0, slowPages: 2 });
  expect(await h.deliverNext()).toBe('ready');
  expect(await jobOf(h)).toMatchObject({ reindexed: 1, failed: 1, slowPages: 1 });
  await h.deliverAll();
  const job = await jobOf(h);
  expect(job).toMatchObject({ status: 'completed', total: 4, reindexed: 3, failed: 1, slowPages: 0 });
  expect(job?.failures).toEqual([
    {
      environment: 'development',
      documentId: poison,
      code: 'REINDEX_ERROR',
      message: 'The document could not be indexed again',
    },
  ]);
  for (const n of [0, 2, 3]) expect(await found(h, 'development', n)).toEqual([`doc-development-${n}`]);
});
