/**
 * Processing of one uploaded version of a document: extract → chunk → embed → index → `ready`, or `failed` with a
 * code. Primary course: the message names (document, uploadId); only while the document still holds that upload
 * and is `uploaded` is there work to do, so a redelivered or stale message is a no-op. Every write is keyed by the
 * uploadId, so a crash at any step is repaired by processing the message again.
 */

import type { DatasetRef, DocumentRecord } from '#core/knowledge/document';
import { documentStatusEvent } from '#core/webhooks/events';
import { type PublishDeps, publishStatusEvent, publishZipImportIfCompleted } from '#core/webhooks/publish';
import { METRIC, type OperationalMetrics } from '#ports/metrics';
import {
  type ChunkGeneration,
  type ChunkMetadata,
  type DocumentRef,
  type Embedder,
  type IndexedChunk,
  type IndexedChunks,
  type KnowledgeIndex,
  type TextExtractor,
  withGeneration,
} from '#ports/processing';
import type { BlobStore, Clock, ProcessingQueue } from '#ports/services';
import type { DocumentStore } from '#ports/stores';
import type { ZipJobStore } from '#ports/zip-jobs';
import { CHUNK_OVERLAP, CHUNK_SIZE, type ChunkSpan, chunkId, chunkSpans } from './chunking';
import { ProcessingError } from './errors';

export interface ProcessingDeps extends PublishDeps {
  readonly documents: DocumentStore;
  readonly blobs: BlobStore;
  readonly queue: ProcessingQueue;
  readonly index: KnowledgeIndex;
  readonly extractor: TextExtractor;
  readonly embedder: Embedder | null;
  readonly clock: Clock;
  readonly settings: ProcessingSettings;
  /** DocumentsReady, DocumentsFailed by errorCode, ProcessingDuration, ChunksIndexed (ports/metrics.ts). */
  readonly metrics: OperationalMetrics;
}

export interface ProcessingSettings {
  /** Largest file processed; a larger one ends `failed` with FILE_TOO_LARGE and its object is deleted. */
  readonly maxFileBytes: number;
  /** How often, and how far apart, an asynchronous index is asked whether the chunks are retrievable yet. */
  readonly confirmAttempts: number;
  readonly confirmDelaySeconds: number;
}

export type ProcessingOutcome = 'ready' | 'failed' | 'pending-index' | 'skipped';

export function chunkMetadataOf(doc: DocumentRecord): ChunkMetadata {
  return {
    label1: doc.label1,
    label2: doc.label2,
    svc_internal_meta1: doc.customMeta1,
    svc_internal_meta2: doc.customMeta2,
    svc_internal_meta3: doc.customMeta3,
    svc_internal_meta4: doc.customMeta4,
  };
}

function sameMetadata(a: ChunkMetadata, b: ChunkMetadata): boolean {
  return (Object.keys(a) as (keyof ChunkMetadata)[]).every((key) => a[key] === b[key]);
}

function refOf(doc: DatasetRef & { documentId: string }): DocumentRef {
  return {
    agentId: doc.agentId,
    environment: doc.environment,
    knowledgeBaseId: doc.knowledgeBaseId,
    documentId: doc.documentId,
  };
}

/**
 * The document while it still waits for this upload's processing; undefined for a stale or finished message. `read`:
 * the record as the caller has just read it (strongly consistent), which is not read a second time.
 */
async function pendingDocument(deps: ProcessingDeps, ref: DocumentRef, uploadId: string, read?: DocumentRecord) {
  const doc = read ?? (await deps.documents.get(ref, ref.documentId));
  if (doc?.status === 'failed' && doc.uploadId === uploadId) await removeChunksOfFailed(deps, ref, doc.indexedChunks);
  if (doc?.status !== 'uploaded' || doc.uploadId !== uploadId) return undefined;
  return doc;
}

/**
 * A failed document has no chunks. Whoever fails it removes them after the status is written; a worker that was
 * indexing the same upload at that moment (its `ready` is then refused), or a message of that upload coming again
 * after a crash between the two writes, removes them too (the watchdog queues one before it fails a document).
 */
async function removeChunksOfFailed(deps: ProcessingDeps, ref: DocumentRef, known: IndexedChunks): Promise<void> {
  await deps.index.deleteDocument(ref, known);
}

/** Both records' knowledge of the chunks: undefined (search the index) when either knows nothing. */
function union(known: IndexedChunks, more: readonly ChunkGeneration[]): IndexedChunks {
  return known === undefined ? undefined : more.reduce(withGeneration, [...known]);
}

/** The object's bytes, or its size when over `maxBytes`: in one read where the store can, else its size first. */
async function readWithin(
  blobs: BlobStore,
  key: string,
  maxBytes: number,
): Promise<{ bytes: Buffer } | { tooLarge: number } | undefined> {
  if (blobs.getWithin) return blobs.getWithin(key, maxBytes);
  const head = await blobs.head(key);
  if (!head) return undefined;
  if (head.size > maxBytes) return { tooLarge: head.size };
  const bytes = await blobs.get(key);
  return bytes ? { bytes } : undefined;
}

/**
 * A document with more chunks than this is written to an index that can stage writes in parts of this many chunks
 * (`replaceDocumentInParts`), so that processing holds one part's chunk objects, vectors and index rows at a time, not
 * the document's; one with fewer is written whole, in a group commit with the documents that finish beside it.
 */
export const CHUNKS_PER_PART = 4096;

/** The chunks of a document, counted, and made (and embedded) a part at a time. */
export interface ChunkPlan {
  readonly count: number;
  /**
   * The chunks in position order, in parts of at most `size`. Read once: the document's text is let go once the last
   * part is made, so that it is not held while the index commits.
   */
  parts(size: number): AsyncGenerator<IndexedChunk[]>;
}

/**
 * The chunks of the document's current content, with its current metadata. A file over the limit is deleted, unless
 * `keepTooLarge` (a reindex of a document that is `ready` leaves its stored content alone).
 */
export async function buildChunks(
  deps: Pick<ProcessingDeps, 'blobs' | 'extractor' | 'embedder' | 'settings'>,
  doc: DocumentRecord,
  options: { keepTooLarge?: boolean } = {},
): Promise<IndexedChunk[]> {
  const plan = await planChunks(deps, doc, options);
  const chunks: IndexedChunk[] = [];
  // One part: one embedding call for the whole document, as before parts.
  for await (const part of plan.parts(Math.max(plan.count, 1))) chunks.push(...part);
  return chunks;
}

/**
 * The document's text, extracted and cut into chunks (their spans only: the text of a chunk is a slice made when its
 * part is). The file's bytes are let go once the text is out: only the text stays, for the parts.
 */
export async function planChunks(
  deps: Pick<ProcessingDeps, 'blobs' | 'extractor' | 'embedder' | 'settings'>,
  doc: DocumentRecord,
  options: { keepTooLarge?: boolean } = {},
): Promise<ChunkPlan> {
  const text = await extractText(deps, doc, options);
  const spans = chunkSpans(text, { size: CHUNK_SIZE, overlap: CHUNK_OVERLAP });
  if (spans.length === 0) throw new ProcessingError('EMPTY_DOCUMENT', 'The file contains no text');
  let source: ChunkSource | undefined = { text, spans };
  return {
    count: spans.length,
    parts: (size) => {
      const taken = source;
      if (!taken) throw new Error("A plan's parts are read once");
      source = undefined;
      return chunkParts(deps, doc, taken, size);
    },
  };
}

/** What a plan's parts are cut from; emptied once its last part is made. */
interface ChunkSource {
  text: string;
  spans: readonly ChunkSpan[];
}

async function extractText(
  deps: Pick<ProcessingDeps, 'blobs' | 'extractor' | 'settings'>,
  doc: DocumentRecord,
  options: { keepTooLarge?: boolean },
): Promise<string> {
  const content = await readWithin(deps.blobs, doc.objectKey, deps.settings.maxFileBytes);
  if (!content) throw new ProcessingError('PARSE_ERROR', 'The uploaded file is no longer in storage');
  if ('tooLarge' in content) {
    const tooLarge = `The file is ${content.tooLarge} bytes; the limit is ${deps.settings.maxFileBytes} bytes.`;
    if (options.keepTooLarge) throw new ProcessingError('FILE_TOO_LARGE', tooLarge);
    await deps.blobs.delete([doc.objectKey]);
    throw new ProcessingError('FILE_TOO_LARGE', `${tooLarge} It was deleted.`);
  }
  return (await deps.extractor.extract(content.bytes, { fileName: doc.fileName, contentType: doc.contentType })).text;
}

async function* chunkParts(
  deps: Pick<ProcessingDeps, 'embedder'>,
  doc: DocumentRecord,
  source: ChunkSource,
  size: number,
): AsyncGenerator<IndexedChunk[]> {
  const metadata = chunkMetadataOf(doc);
  const ref = refOf(doc);
  const { spans } = source;
  // Plain loops, no closures: a closure over the text would keep it in a context that the generator object, held
  // by the index until its commit is done, still references after its last part.
  for (let first = 0; first < spans.length; first += size) {
    const pieces: string[] = [];
    for (let position = first; position < Math.min(first + size, spans.length); position++) {
      pieces.push(source.text.slice(spans[position].start, spans[position].end));
    }
    // The last part's pieces are all that is left of the text: the text goes with them (a 50 MB text, 50 MB).
    if (first + size >= spans.length) {
      source.text = '';
      source.spans = [];
    }
    const vectors = deps.embedder ? await deps.embedder.embed(pieces) : undefined;
    const part: IndexedChunk[] = [];
    for (let i = 0; i < pieces.length; i++) {
      part.push({
        ...ref,
        ...metadata,
        chunkId: chunkId(doc.documentId, first + i, pieces[i]),
        s3Key: doc.s3Key,
        position: first + i,
        text: pieces[i],
        ...(vectors ? { vector: vectors[i] } : {}),
      });
    }
    yield part;
  }
}

async function fail(deps: ProcessingDeps, doc: DocumentRecord, error: ProcessingError): Promise<ProcessingOutcome> {
  // The status first, and only while the document still waits for this upload: a worker that made it `ready`
  // meanwhile is not overruled (the watchdog may have read it before), and one still indexing it finds its own
  // `ready` refused and removes what it wrote.
  const updated = await deps.documents.setStatus(
    doc,
    doc.documentId,
    doc.uploadId,
    'failed',
    { code: error.code, message: error.message },
    deps.clock.now().toISOString(),
  );
  if (!updated) return 'skipped';
  deps.metrics.count(METRIC.documentsFailed, 1, { errorCode: error.code });
  await publishStatusEvents(deps, updated, 'failed');
  // A failed document is not retrievable: chunks of an earlier version go too, so the status tells the truth.
  await removeChunksOfFailed(deps, refOf(doc), updated.indexedChunks);
  return 'failed';
}

/**
 * The status webhooks of a status just written: `document.ready` / `document.failed`, and `zip_import.completed` when
 * the document was the last unfinished one of its ZIP import.
 */
async function publishStatusEvents(
  deps: ProcessingDeps,
  doc: DocumentRecord,
  status: 'ready' | 'failed',
  chunkCount?: number,
): Promise<void> {
  if (!deps.statusEvents) return;
  await publishStatusEvent(deps, statusEventOf(doc, status, chunkCount));
  // The worker's deps hold the ZIP imports' store (ZipImportDeps); deps without it publish no ZIP completion.
  const { zipJobs } = deps as { zipJobs?: Pick<ZipJobStore, 'get'> };
  if (doc.zipJobId !== undefined && doc.uploadId === doc.zipJobId) {
    await publishZipImportIfCompleted(
      { ...pickPublish(deps), zipJobs, documents: deps.documents, queue: deps.queue, clock: deps.clock },
      doc.zipJobId,
      doc.documentId,
    );
  }
}

function pickPublish(deps: ProcessingDeps): PublishDeps {
  return { statusEvents: deps.statusEvents, onPublishError: deps.onPublishError };
}

function statusEventOf(doc: DocumentRecord, status: 'ready' | 'failed', chunkCount?: number) {
  return documentStatusEvent({
    organizationId: doc.organizationId,
    agentId: doc.agentId,
    environment: doc.environment,
    knowledgeBaseId: doc.knowledgeBaseId,
    documentId: doc.documentId,
    uploadId: doc.uploadId,
    fileName: doc.fileName,
    customDocumentId: doc.customDocumentId,
    status,
    error: doc.error,
    ...(chunkCount !== undefined ? { chunkCount } : {}),
    updatedAt: doc.updatedAt,
  });
}

/** Ends a stuck document `failed` with INDEXING_FAILED; false when it moved on meanwhile. */
export async function failStuck(deps: ProcessingDeps, doc: DocumentRecord, message: string): Promise<boolean> {
  return (await fail(deps, doc, new ProcessingError('INDEXING_FAILED', message))) === 'failed';
}

/**
 * `ready` once the index serves every chunk; then catches up with metadata changed during processing. ChunksIndexed
 * counts here, on the one `ready` write of an upload: two workers may index the same upload at once (its S3 event and
 * its upload-complete message), and only one of them makes it `ready`. `narrow`: the index holds no other upload's
 * chunks now, so the same write narrows `indexedChunks` to this upload's (indexChunks' last step, not written apart).
 */
async function markReady(
  deps: ProcessingDeps,
  doc: DocumentRecord,
  chunkCount: number,
  narrow = false,
): Promise<ProcessingOutcome> {
  const ref = refOf(doc);
  const generation: ChunkGeneration = { uploadId: doc.uploadId, count: chunkCount };
  const updated = await deps.documents.setStatus(
    doc,
    doc.documentId,
    doc.uploadId,
    'ready',
    null,
    deps.clock.now().toISOString(),
    // Processing read `doc` itself a moment ago: the store answers from it unless the metadata changed meanwhile.
    narrow ? { indexedChunks: [generation], seen: doc } : {},
  );
  if (!updated) {
    // Deleted, failed (by the watchdog) or replaced while we worked. A deleted or failed document keeps no chunks;
    // a replaced one is re-indexed by its own message. What this worker indexed is known to it even when the record
    // is gone (its deletion may have read the record before this upload was written to it).
    const now = await deps.documents.get(ref, ref.documentId);
    if (!now) await deps.index.deleteDocument(ref, union(doc.indexedChunks, [generation]));
    else if (now.status === 'failed' && now.uploadId === doc.uploadId) {
      await removeChunksOfFailed(deps, ref, union(now.indexedChunks, [generation]));
    } else if (now.uploadId !== doc.uploadId && deps.index.deleteUploads) {
      // Replaced: the newer upload's processing removes the uploads its record lists, maybe before this one's chunks
      // arrived. This upload's chunks are removed by their upload, which leaves the newer one's.
      await deps.index.deleteUploads(ref, [generation]);
    }
    return 'skipped';
  }
  deps.metrics.count(METRIC.documentsReady);
  deps.metrics.count(METRIC.chunksIndexed, chunkCount);
  await publishStatusEvents(deps, updated, 'ready', chunkCount);
  // From the document's last `uploaded` write (upload-complete, or the watchdog's retry) to `ready`.
  deps.metrics.milliseconds(
    METRIC.processingDuration,
    Math.max(0, deps.clock.now().getTime() - Date.parse(doc.updatedAt)),
  );
  if (!sameMetadata(chunkMetadataOf(updated), chunkMetadataOf(doc))) {
    await deps.index.updateDocumentMetadata(ref, chunkMetadataOf(updated), {
      uploadId: updated.uploadId,
      indexed: updated.indexedChunks,
    });
  }
  return 'ready';
}

/**
 * Indexes the chunks of the document's upload, keeping its record true about what the index may hold: the upload is
 * written to `indexedChunks` before its chunks are sent, and once the index has removed every other upload's chunks,
 * it is left alone there. False when the document moved on before its chunks were sent (nothing was indexed).
 * A record without `indexedChunks` (older than it) is not written first: the index searches for what it holds.
 * `narrow: false` leaves the narrowing to the caller (processing writes it with `ready`: markReady).
 */
/**
 * What indexChunks writes: the chunks, made and embedded whole before anything is written; or, for a document of
 * more than a part when the index can stage writes, the plan, whose parts are made and embedded as they are written.
 */
async function chunksToWrite(deps: ProcessingDeps, plan: ChunkPlan): Promise<IndexedChunk[] | ChunkPlan> {
  if (plan.count > CHUNKS_PER_PART && deps.index.replaceDocumentInParts) return plan;
  const chunks: IndexedChunk[] = [];
  for await (const part of plan.parts(Math.max(plan.count, 1))) chunks.push(...part);
  return chunks;
}

async function indexChunks(
  deps: ProcessingDeps,
  doc: DocumentRecord,
  content: IndexedChunk[] | ChunkPlan,
  whileUploaded = true,
  narrow = true,
): Promise<boolean> {
  const ref = refOf(doc);
  const count = Array.isArray(content) ? content.length : content.count;
  const generation: ChunkGeneration = { uploadId: doc.uploadId, count };
  const previous = doc.indexedChunks;
  if (previous !== undefined) {
    const ahead = withGeneration(previous, generation);
    const written = await deps.documents.recordIndexedChunks(ref, ref.documentId, doc.uploadId, ahead, whileUploaded);
    if (!written) return false;
  }
  const known = { uploadId: doc.uploadId, previous };
  if (Array.isArray(content)) await deps.index.replaceDocument(ref, content, known);
  else if (deps.index.replaceDocumentInParts) {
    // A staged commit: one part's chunks at a time, visible together when the last part is written.
    await deps.index.replaceDocumentInParts(ref, content.parts(CHUNKS_PER_PART), known);
  } else throw new Error('The index cannot write a document in parts');
  if (narrow) await narrowIndexedChunks(deps, doc, generation);
  return true;
}

/** `indexedChunks` down to this upload's, only while the document still holds it (a newer one wrote its own). */
async function narrowIndexedChunks(deps: ProcessingDeps, doc: DocumentRecord, generation: ChunkGeneration) {
  // A record that knew of no chunks (a new document) holds exactly this upload's already, written ahead: no write.
  if (doc.indexedChunks?.length === 0) return;
  await deps.documents.recordIndexedChunks(refOf(doc), doc.documentId, doc.uploadId, [generation], false);
}

/**
 * Message `process-document`. Errors other than ProcessingError are transient: the queue retries them. `read`: the
 * document's record as the caller has just read it (an S3 event's dispatch), so it is not read again.
 */
export async function processDocument(
  deps: ProcessingDeps,
  ref: DocumentRef,
  uploadId: string,
  read?: DocumentRecord,
): Promise<ProcessingOutcome> {
  const doc = await pendingDocument(deps, ref, uploadId, read);
  if (!doc) return 'skipped';
  let plan: ChunkPlan;
  let content: IndexedChunk[] | ChunkPlan;
  try {
    plan = await planChunks(deps, doc);
    content = await chunksToWrite(deps, plan);
  } catch (error) {
    if (error instanceof ProcessingError) return fail(deps, doc, error);
    throw error;
  }
  if (!(await indexChunks(deps, doc, content, true, false))) return 'skipped';
  const generation: ChunkGeneration = { uploadId, count: plan.count };
  // The narrowing of `indexedChunks` rides on the `ready` write: one write, not two. A `ready` refused (the document
  // moved on) leaves the record listing this upload beside the others it listed: more than the index holds, which
  // only makes a later removal search for chunks that are gone, never miss one.
  if ((await deps.index.countDocumentChunks(ref, generation)) >= plan.count) {
    return markReady(deps, doc, plan.count, true);
  }
  await narrowIndexedChunks(deps, doc, generation);
  await deps.queue.send(
    { kind: 'confirm-indexed', ...ref, uploadId, attempt: 1 },
    { delaySeconds: deps.settings.confirmDelaySeconds },
  );
  return 'pending-index';
}

/** Message `confirm-indexed`: an asynchronous index (Bedrock) reports the chunks retrievable, or time runs out. */
export async function confirmIndexed(
  deps: ProcessingDeps,
  ref: DocumentRef,
  uploadId: string,
  attempt: number,
): Promise<ProcessingOutcome> {
  const doc = await pendingDocument(deps, ref, uploadId);
  if (!doc) return 'skipped';
  // The record says how many chunks the upload gave. One that does not was indexed by a deployment older than
  // `indexedChunks` (under the index's older ids): its file is chunked again and the index searches for its chunks.
  const known = doc.indexedChunks?.find((generation) => generation.uploadId === uploadId);
  const expected = known ? known.count : (await planChunks(deps, doc)).count;
  if ((await deps.index.countDocumentChunks(ref, known)) >= expected) return markReady(deps, doc, expected);
  if (attempt >= deps.settings.confirmAttempts) {
    return fail(
      deps,
      doc,
      new ProcessingError('INDEXING_FAILED', `The index did not report the chunks retrievable after ${attempt} checks`),
    );
  }
  await deps.queue.send(
    { kind: 'confirm-indexed', ...ref, uploadId, attempt: attempt + 1 },
    { delaySeconds: deps.settings.confirmDelaySeconds },
  );
  return 'pending-index';
}

/**
 * Message `sync-metadata`: the indexed chunks get the document's current labels and custom metadata, and the sync
 * owed since the change is settled. A document not `ready` is owed nothing: while `uploaded`, processing indexes the
 * current metadata itself (and catches up when it finishes); a failed or deleted one has no chunks.
 */
export async function syncMetadata(deps: ProcessingDeps, ref: DocumentRef): Promise<ProcessingOutcome> {
  const owed = await deps.documents.getOwed(ref, ref.documentId, 'sync-metadata');
  const doc = await deps.documents.get(ref, ref.documentId);
  const ready = doc?.status === 'ready';
  if (ready) {
    await deps.index.updateDocumentMetadata(ref, chunkMetadataOf(doc), {
      uploadId: doc.uploadId,
      indexed: doc.indexedChunks,
    });
  }
  // Settled only by a sync that read the change it owes (a change after the read owes its own sync).
  if (owed && (!ready || owed.since <= doc.updatedAt)) {
    await deps.documents.settleOwed(ref, ref.documentId, 'sync-metadata', owed.since);
  }
  return ready ? 'ready' : 'skipped';
}

/**
 * Message `delete-document`: no chunk and no object of a deleted document stays, and the erasure owed since the
 * delete is settled. `known` is what the deleted record knew of its chunks (undefined, as in a message the watchdog
 * queued again: the index searches for them). A document created again under the same id (not merely reserved) is
 * re-indexed by its own processing: an index that keeps chunks by document loses the deleted one's to that
 * processing, which replaces them all; one that names them by upload (Bedrock) gets the deleted one's removed here by
 * upload, which leaves the new one's (upload ids are never reused). Its objects are left alone.
 */
export async function deleteDocumentChunks(
  deps: ProcessingDeps,
  ref: DocumentRef,
  known?: IndexedChunks,
): Promise<ProcessingOutcome> {
  const owed = await deps.documents.getOwed(ref, ref.documentId, 'delete-document');
  const doc = await deps.documents.get(ref, ref.documentId);
  const recreated = doc !== undefined && doc.status !== 'reserved';
  let removedOld = false;
  if (!recreated) {
    await deps.index.deleteDocument(ref, known);
    // The request removed them already, unless it was cut off between its writes; a reservation's own are kept.
    const objects = (owed?.objectKeys ?? []).filter((key) => key !== doc?.s3Key && key !== doc?.objectKey);
    if (objects.length > 0) await deps.blobs.delete(objects);
  } else if (known !== undefined && doc.indexedChunks !== undefined && deps.index.deleteUploads) {
    const own = new Set(doc.indexedChunks.map((generation) => generation.uploadId));
    const old = known.filter((generation) => !own.has(generation.uploadId));
    if (old.length > 0) {
      await deps.index.deleteUploads(ref, old);
      removedOld = true;
    }
  }
  if (owed) await deps.documents.settleOwed(ref, ref.documentId, 'delete-document', owed.since);
  return recreated && !removedOld ? 'skipped' : 'ready';
}

/** How often a reindex follows a document whose content changed while its chunks were written (then gives up). */
const REINDEX_FOLLOWS = 3;

/**
 * A reindex of one document (core/processing/knowledge-base-reindex.ts): the chunks of its stored content are
 * built again and written to the index in place of whatever it holds of them, the way processing writes them
 * (`indexedChunks` ahead, then the index, then narrowed), and its status, counts and `updatedAt` are left alone.
 * Only a `ready` document is reindexed: one `uploaded` is indexed by its own processing, a failed one has no chunks.
 * Throws ProcessingError when its stored object cannot be chunked (its record and chunks stay as they were).
 *
 * Processing, a delete or a metadata change may run at the same time. After the write the record is read again:
 * deleted or failed meanwhile, what was written is removed; metadata changed meanwhile, it is set on the chunks; new
 * content meanwhile, an index that names chunks by upload (Bedrock) removes this upload's, and one that keeps chunks
 * by document (whose new content's chunks this write may have replaced) gets the new content's chunks written
 * again, which its processing would write too.
 */
export async function reindexDocument(deps: ProcessingDeps, ready: DocumentRecord): Promise<'reindexed' | 'skipped'> {
  const ref = refOf(ready);
  let doc = ready;
  if (doc.status !== 'ready') return 'skipped';
  for (let follow = 0; follow < REINDEX_FOLLOWS; follow++) {
    const plan = await planChunks(deps, doc, { keepTooLarge: true });
    if (!(await indexChunks(deps, doc, await chunksToWrite(deps, plan), false))) {
      // It moved on before the chunks were sent: nothing was written.
      const now = await deps.documents.get(ref, ref.documentId);
      if (now?.status !== 'ready' || deps.index.deleteUploads) return 'skipped';
      doc = now;
      continue;
    }
    const generation: ChunkGeneration = { uploadId: doc.uploadId, count: plan.count };
    const now = await deps.documents.get(ref, ref.documentId);
    if (!now || now.status === 'reserved') {
      await deps.index.deleteDocument(ref, union(doc.indexedChunks, [generation]));
      return 'skipped';
    }
    if (now.uploadId === doc.uploadId) {
      if (now.status === 'failed') {
        await removeChunksOfFailed(deps, ref, union(now.indexedChunks, [generation]));
        return 'skipped';
      }
      if (!sameMetadata(chunkMetadataOf(now), chunkMetadataOf(doc))) {
        await deps.index.updateDocumentMetadata(ref, chunkMetadataOf(now), {
          uploadId: now.uploadId,
          indexed: now.indexedChunks,
        });
      }
      return doc === ready ? 'reindexed' : 'skipped';
    }
    if (deps.index.deleteUploads) {
      await deps.index.deleteUploads(ref, [generation]);
      return 'skipped';
    }
    if (now.status === 'failed') {
      await removeChunksOfFailed(deps, ref, union(now.indexedChunks, [generation]));
      return 'skipped';
    }
    // New content (`uploaded` or `ready`) in an index that keeps chunks by document: its chunks are written again.
    doc = now;
  }
  return 'skipped';
}
