/**
 * Owed work against the real stores (DynamoDB on an in-process dynalite, with the tables of lib/tables.ts) and the
 * real embedded index: a delete or a metadata change whose queue message is lost (or dead-lettered) is queued again
 * by the watchdog until the worker has done it, so a deleted document's chunks and objects always go and a changed
 * document's chunks always follow; a document created again under the same id keeps its own chunks and objects; a
 * sync that read an older change leaves the later one owed.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { DynamoZipJobStore } from '#adapters/store/dynamodb/zip-job-store';
import { type DocumentRecord, reservationRecord } from '#core/knowledge/document';
import { runWork } from '#core/processing/dispatch';
import { type ProcessingDeps, processDocument } from '#core/processing/process-document';
import { runWatchdog } from '#core/processing/watchdog';
import { METRIC } from '#ports/metrics';
import type { DocumentRef, KnowledgeIndex } from '#ports/processing';
import type { ProcessingMessage } from '#ports/services';
import type { DocumentStore } from '#ports/stores';
import type { ZipJobStore } from '#ports/zip-jobs';
import { TABLES } from '../../lib/tables';
import { inMemoryBlobStore } from '../helpers/blobs';
import { type LocalDynamo, startDynalite } from '../helpers/dynalite';
import { recordingMetrics } from '../helpers/metrics';

const TEXT = 'The backup runs at midnight and keeps thirty days. '.repeat(40);
const TIMEOUT_SECONDS = 900;
const T0 = '2030-01-01T00:00:00.000Z';
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000);

let dynamo: LocalDynamo;
let store: DocumentStore;
let zipJobs: ZipJobStore;
let index: LanceKnowledgeIndex;
let dir: string;
let documents = 0;
const blobs = inMemoryBlobStore();

beforeAll(async () => {
  dynamo = await startDynalite();
  await dynamo.createTable('documents', TABLES.documents);
  await dynamo.createTable('zipJobs', TABLES.zipJobs);
  store = new DynamoDocumentStore(dynamo.client, 'documents');
  zipJobs = new DynamoZipJobStore(dynamo.client, 'zipJobs');
  dir = mkdtempSync(join(tmpdir(), 'aps-owed-'));
  index = await LanceKnowledgeIndex.open(dir);
});

afterAll(async () => {
  await index?.close();
  await dynamo?.stop();
  rmSync(dir, { recursive: true, force: true });
});

type Deps = Parameters<typeof runWork>[0] & Parameters<typeof runWatchdog>[0] & { sent: ProcessingMessage[] };

/** The worker's and the watchdog's dependencies, on the real stores; the queue records what is sent (nothing runs). */
function depsWith(overrides: Partial<ProcessingDeps> = {}): Deps {
  const sent: ProcessingMessage[] = [];
  const unused = () => {
    throw new Error('not used by these tests');
  };
  return {
    documents: store,
    zipJobs,
    blobs,
    queue: {
      send: async (message: ProcessingMessage) => {
        sent.push(message);
      },
      sendAll: async (messages: readonly ProcessingMessage[]) => {
        sent.push(...messages);
      },
    },
    index,
    extractor: new DocumentTextExtractor(),
    embedder: null,
    clock: { now: () => new Date() },
    metrics: recordingMetrics(),
    settings: { maxFileBytes: 1_000_000, confirmAttempts: 1, confirmDelaySeconds: 1 },
    archives: unused as never,
    knowledgeBases: unused as never,
    retrievalConfigs: unused as never,
    agents: unused as never,
    agentDefinitions: unused as never,
    sessions: unused as never,
    knowledgeBaseDeletion: { pageSize: 10, importWaitSeconds: 1 },
    agentDeletion: unused as never,
    sent,
    ...overrides,
  } as unknown as Deps;
}

/** The watchdog at `now`, looking at documents and owed work only. */
function watchdogAt(now: Date, overrides: Partial<ProcessingDeps> = {}) {
  const deps = depsWith({ clock: { now: () => now }, ...overrides });
  const { knowledgeBases: _kb, agents: _agents, ...watched } = deps;
  return { deps, run: () => runWatchdog(watched, { timeoutSeconds: TIMEOUT_SECONDS }) };
}

/** A `ready` document with chunks, labelled `label1`, its object in the blob store. */
async function readyDocument(
  label1 = 'old',
  documentId = `doc-${++documents}`,
): Promise<DocumentRef & { s3Key: string }> {
  const ref: DocumentRef = { agentId: 'agent-1', environment: 'production', knowledgeBaseId: 'kb-1', documentId };
  const uploadId = `upload-${documentId}-${Date.now()}-${Math.random()}`;
  const s3Key = `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/${ref.documentId}/notes.txt`;
  const now = new Date().toISOString();
  expect(
    await store.reserve(
      reservationRecord({
        ...ref,
        organizationId: 'org-1',
        customDocumentId: documentId,
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
  await blobs.put(s3Key, Buffer.from(TEXT), 'text/plain');
  const content = {
    uploadId,
    objectKey: s3Key,
    fileName: 'notes.txt',
    contentType: 'text/plain',
    fileSize: Buffer.byteLength(TEXT),
    updatedAt: now,
  };
  expect(await store.completeReservation(ref, documentId, content, { label1 }, now)).toBe(true);
  expect(await processDocument(depsWith(), ref, uploadId)).toBe('ready');
  expect(await index.countDocumentChunks(ref)).toBeGreaterThan(0);
  return { ...ref, s3Key };
}

/** The labels the document's indexed chunks carry (one per distinct value). */
async function chunkLabels(ref: DocumentRef): Promise<(string | null)[]> {
  const hits = await index.query({ scope: ref, text: 'backup midnight', filters: [], limit: 100 });
  return [...new Set(hits.filter((hit) => hit.chunk.documentId === ref.documentId).map((hit) => hit.chunk.label1))];
}

function requeued(deps: Deps, work: string): number {
  const metrics = deps.metrics as ReturnType<typeof recordingMetrics>;
  return metrics.recorded
    .filter((m) => m.name === METRIC.documentWorkRequeued && m.dimensions.work === work)
    .reduce((sum, m) => sum + m.value, 0);
}

describe('a delete whose message is lost', () => {
  it('is erased by the work the watchdog queues again: no chunk, no object, nothing owed', async () => {
    const doc = await readyDocument();
    // The request's write: the record goes, the erasure is owed. Its message (and, cut off, its object removal) is lost.
    const removed = (await store.delete(doc, doc.documentId, { erasureOwedSince: T0 })) as DocumentRecord;
    expect(removed.documentId).toBe(doc.documentId);
    expect(await store.get(doc, doc.documentId)).toBeUndefined();
    expect(await store.getOwed(doc, doc.documentId, 'delete-document')).toMatchObject({
      since: T0,
      retries: 0,
      objectKeys: [doc.s3Key],
    });
    // The record of owed work is no document: the knowledge base deletion's listing does not see it.
    const listed: string[] = [];
    for await (const record of store.listDataset(doc)) listed.push(record.documentId);
    expect(listed.some((id) => id.startsWith('#'))).toBe(false);
    expect(await index.countDocumentChunks(doc)).toBeGreaterThan(0);

    // Within the timeout the watchdog waits; past it, it queues the work again, once per timeout.
    const early = watchdogAt(at(TIMEOUT_SECONDS - 1));
    expect(await early.run()).toMatchObject({ erasuresRequeued: 0 });
    expect(early.deps.sent).toEqual([]);
    const late = watchdogAt(at(TIMEOUT_SECONDS + 1));
    expect(await late.run()).toMatchObject({ erasuresRequeued: 1, metadataSyncsRequeued: 0 });
    expect(late.deps.sent).toEqual([{ kind: 'delete-document', ...refOf(doc) }]);
    expect(requeued(late.deps, 'delete-document')).toBe(1);
    expect(requeued(late.deps, 'sync-metadata')).toBe(0);
    expect(await watchdogAt(at(TIMEOUT_SECONDS + 2)).run()).toMatchObject({ erasuresRequeued: 0 });

    expect(await runWork(depsWith(), { kind: 'message', message: late.deps.sent[0] })).toBe('ready');
    expect(await index.countDocumentChunks(doc)).toBe(0);
    expect(blobs.objects.has(doc.s3Key)).toBe(false);
    expect(await store.getOwed(doc, doc.documentId, 'delete-document')).toBeUndefined();
    expect(await watchdogAt(at(10 * TIMEOUT_SECONDS)).run()).toMatchObject({ erasuresRequeued: 0 });
  });

  it('is queued again every timeout while its work keeps failing, until it succeeds', async () => {
    const doc = await readyDocument();
    await store.delete(doc, doc.documentId, { erasureOwedSince: T0 });
    const failing: KnowledgeIndex = Object.assign(Object.create(index) as LanceKnowledgeIndex, {
      deleteDocument: async () => {
        throw new Error('the index is unavailable');
      },
    });
    for (let round = 1; round <= 3; round++) {
      const watchdog = watchdogAt(at(round * (TIMEOUT_SECONDS + 1)));
      expect(await watchdog.run()).toMatchObject({ erasuresRequeued: 1 });
      const message = { kind: 'message' as const, message: watchdog.deps.sent[0] };
      if (round < 3) {
        await expect(runWork(depsWith({ index: failing }), message)).rejects.toThrow('the index is unavailable');
        expect(await store.getOwed(doc, doc.documentId, 'delete-document')).toMatchObject({ retries: round });
      } else {
        expect(await runWork(depsWith(), message)).toBe('ready');
      }
    }
    expect(await index.countDocumentChunks(doc)).toBe(0);
    expect(await store.getOwed(doc, doc.documentId, 'delete-document')).toBeUndefined();
  });
});

describe('a document created again under the id of a deleted one', () => {
  it('keeps its own chunks and object when the old erasure comes late, and the debt is settled', async () => {
    const first = await readyDocument('old');
    await store.delete(first, first.documentId, { erasureOwedSince: T0 });
    const again = await readyDocument('new', first.documentId);
    expect(again.s3Key).toBe(first.s3Key);
    expect(await runWork(depsWith(), { kind: 'message', message: { kind: 'delete-document', ...refOf(first) } })).toBe(
      'skipped',
    );
    expect(await index.countDocumentChunks(again)).toBeGreaterThan(0);
    expect(await chunkLabels(again)).toEqual(['new']);
    expect(blobs.objects.has(again.s3Key)).toBe(true);
    expect(await store.getOwed(first, first.documentId, 'delete-document')).toBeUndefined();
  });

  it('merely reserved, does not keep the deleted content retrievable; its own object key is left to its upload', async () => {
    const first = await readyDocument();
    await store.delete(first, first.documentId, { erasureOwedSince: T0 });
    const now = new Date().toISOString();
    await store.reserve(
      reservationRecord({
        ...refOf(first),
        organizationId: 'org-1',
        customDocumentId: first.documentId,
        s3Key: first.s3Key,
        fileName: 'notes.txt',
        uploadId: 'upload-reserved',
        reservedUntil: new Date(Date.now() + 60_000).toISOString(),
        contentType: 'text/plain',
        createdAt: now,
      }),
      now,
    );
    expect(await runWork(depsWith(), { kind: 'message', message: { kind: 'delete-document', ...refOf(first) } })).toBe(
      'ready',
    );
    expect(await index.countDocumentChunks(first)).toBe(0);
    expect(blobs.objects.has(first.s3Key)).toBe(true);
    expect(await store.getOwed(first, first.documentId, 'delete-document')).toBeUndefined();
  });
});

describe('what retrieval may return', () => {
  it('is the documents uploaded or ready: never a deleted one nor a failed one, read in batches of 100', async () => {
    const live = await readyDocument();
    const deleted = await readyDocument();
    await store.delete(deleted, deleted.documentId, { erasureOwedSince: T0 });
    const failed = await readyDocument();
    const record = (await store.get(failed, failed.documentId)) as DocumentRecord;
    // Failed for its upload: a new upload of it, then the failure.
    const content = {
      uploadId: 'upload-broken',
      objectKey: record.objectKey,
      fileName: record.fileName,
      contentType: record.contentType,
      fileSize: 10,
      updatedAt: T0,
    };
    expect(await store.replaceContent(failed, failed.documentId, content, {})).toBeDefined();
    const error = { code: 'PARSE_ERROR', message: 'unreadable' };
    expect(await store.setStatus(failed, failed.documentId, 'upload-broken', 'failed', error, T0)).toBeDefined();
    const unknown = Array.from({ length: 150 }, (_, i) => `nobody-${i}`);
    const found = await store.retrievable(live, [...unknown, live.documentId, deleted.documentId, failed.documentId]);
    expect([...found]).toEqual([live.documentId]);
    // The chunks of the deleted document are still in the index: retrieval drops them by this answer.
    expect(await index.countDocumentChunks(deleted)).toBeGreaterThan(0);
    await runWork(depsWith(), { kind: 'message', message: { kind: 'delete-document', ...refOf(deleted) } });
    expect(await index.countDocumentChunks(deleted)).toBe(0);
  });
});

describe('a metadata change whose message is lost', () => {
  it('reaches the chunks through the sync the watchdog queues again', async () => {
    const doc = await readyDocument('old');
    expect(await store.patchMetadata(doc, doc.documentId, { label1: 'new' }, T0)).toMatchObject({ label1: 'new' });
    expect(await store.getOwed(doc, doc.documentId, 'sync-metadata')).toMatchObject({ since: T0 });
    expect(await chunkLabels(doc)).toEqual(['old']);

    const watchdog = watchdogAt(at(TIMEOUT_SECONDS + 1));
    expect(await watchdog.run()).toMatchObject({ metadataSyncsRequeued: 1 });
    expect(watchdog.deps.sent).toEqual([{ kind: 'sync-metadata', ...refOf(doc) }]);
    expect(await runWork(depsWith(), { kind: 'message', message: watchdog.deps.sent[0] })).toBe('ready');
    expect(await chunkLabels(doc)).toEqual(['new']);
    expect(await store.getOwed(doc, doc.documentId, 'sync-metadata')).toBeUndefined();
  });

  it('a sync that read the document before a later change leaves that change owed', async () => {
    const doc = await readyDocument('one');
    await store.patchMetadata(doc, doc.documentId, { label1: 'two' }, T0);
    const later = at(5).toISOString();
    // The second change lands just after the sync of the first read the document.
    const racing: DocumentStore = Object.assign(Object.create(store) as DocumentStore, {
      get: async (ref: DocumentRef, documentId: string) => {
        const read = await store.get(ref, documentId);
        await store.patchMetadata(ref, documentId, { label1: 'three' }, later);
        return read;
      },
    });
    expect(
      await runWork(depsWith({ documents: racing }), {
        kind: 'message',
        message: { kind: 'sync-metadata', ...refOf(doc) },
      }),
    ).toBe('ready');
    expect(await chunkLabels(doc)).toEqual(['two']);
    expect(await store.getOwed(doc, doc.documentId, 'sync-metadata')).toMatchObject({ since: later });

    // Its own message lost too: the watchdog queues it, and the chunks end with the last change.
    const watchdog = watchdogAt(at(TIMEOUT_SECONDS + 10));
    expect(await watchdog.run()).toMatchObject({ metadataSyncsRequeued: 1 });
    await runWork(depsWith(), { kind: 'message', message: watchdog.deps.sent[0] });
    expect(await chunkLabels(doc)).toEqual(['three']);
    expect(await store.getOwed(doc, doc.documentId, 'sync-metadata')).toBeUndefined();
  });

  it('owes nothing once the document is deleted: the sync settles without touching the index', async () => {
    const doc = await readyDocument();
    await store.patchMetadata(doc, doc.documentId, { label1: 'gone' }, T0);
    await store.delete(doc, doc.documentId, { erasureOwedSince: T0 });
    expect(await runWork(depsWith(), { kind: 'message', message: { kind: 'sync-metadata', ...refOf(doc) } })).toBe(
      'skipped',
    );
    expect(await store.getOwed(doc, doc.documentId, 'sync-metadata')).toBeUndefined();
    expect(await store.getOwed(doc, doc.documentId, 'delete-document')).toBeDefined();
  });
});

function refOf(doc: DocumentRef): DocumentRef {
  return {
    agentId: doc.agentId,
    environment: doc.environment,
    knowledgeBaseId: doc.knowledgeBaseId,
    documentId: doc.documentId,
  };
}
