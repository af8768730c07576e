/**
 * Processing of one uploaded version of a document: extract → chunk → embed → index → `ready`, or `failed` with a
 * code. Primary course: the message names (document, uploadId); only while the document still holds that upload
 * and is `uploaded` is there work to do, so a redelivered or stale message is a no-op. Every write is keyed by the
 * uploadId, so a crash at any step is repaired by processing the message again.
 */

import type { DatasetRef, DocumentRecord } from '#core/knowledge/document';
import { METRIC, type OperationalMetrics } from '#ports/metrics';
import type {
  ChunkMetadata,
  DocumentRef,
  Embedder,
  IndexedChunk,
  KnowledgeIndex,
  TextExtractor,
} from '#ports/processing';
import type { BlobStore, Clock, ProcessingQueue } from '#ports/services';
import type { DocumentStore } from '#ports/stores';
import { CHUNK_OVERLAP, CHUNK_SIZE, chunkId, chunkText } from './chunking';
import { ProcessingError } from './errors';

export interface ProcessingDeps {
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

/** The document while it still waits for this upload's processing; undefined for a stale or finished message. */
async function pendingDocument(deps: ProcessingDeps, ref: DocumentRef, uploadId: string) {
  const doc = await deps.documents.get(ref, ref.documentId);
  if (doc?.status === 'failed' && doc.uploadId === uploadId) await removeChunksOfFailed(deps, ref);
  if (doc?.status !== 'uploaded' || doc.uploadId !== uploadId) return undefined;
  return doc;
}

/**
 * A failed document has no chunks. Whoever fails it removes them after the status is written; a worker that was
 * indexing the same upload at that moment (its `ready` is then refused), or a message of that upload coming again
 * after a crash between the two writes, removes them too (the watchdog queues one before it fails a document).
 */
async function removeChunksOfFailed(deps: ProcessingDeps, ref: DocumentRef): Promise<void> {
  await deps.index.deleteDocument(ref);
}

/** The chunks of the document's current content, with its current metadata. */
export async function buildChunks(deps: ProcessingDeps, doc: DocumentRecord): Promise<IndexedChunk[]> {
  const head = await deps.blobs.head(doc.objectKey);
  if (!head) throw new ProcessingError('PARSE_ERROR', 'The uploaded file is no longer in storage');
  if (head.size > deps.settings.maxFileBytes) {
    await deps.blobs.delete([doc.objectKey]);
    throw new ProcessingError(
      'FILE_TOO_LARGE',
      `The file is ${head.size} bytes; the limit is ${deps.settings.maxFileBytes} bytes. It was deleted.`,
    );
  }
  const bytes = await deps.blobs.get(doc.objectKey);
  if (!bytes) throw new ProcessingError('PARSE_ERROR', 'The uploaded file is no longer in storage');
  const { text } = await deps.extractor.extract(bytes, { fileName: doc.fileName, contentType: doc.contentType });
  const pieces = chunkText(text, { size: CHUNK_SIZE, overlap: CHUNK_OVERLAP });
  if (pieces.length === 0) throw new ProcessingError('EMPTY_DOCUMENT', 'The file contains no text');
  const vectors = deps.embedder ? await deps.embedder.embed(pieces) : undefined;
  const metadata = chunkMetadataOf(doc);
  return pieces.map((text, position) => ({
    ...refOf(doc),
    ...metadata,
    chunkId: chunkId(doc.documentId, position, text),
    s3Key: doc.s3Key,
    position,
    text,
    ...(vectors ? { vector: vectors[position] } : {}),
  }));
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
  // A failed document is not retrievable: chunks of an earlier version go too, so the status tells the truth.
  await removeChunksOfFailed(deps, refOf(doc));
  return 'failed';
}

/** Ends a stuck document `failed` with INDEXING_FAILED; false when it moved on meanwhile. */
export async function failStuck(deps: ProcessingDeps, doc: DocumentRecord, message: string): Promise<boolean> {
  return (await fail(deps, doc, new ProcessingError('INDEXING_FAILED', message))) === 'failed';
}

/**
 * `ready` once the index serves every chunk; then catches up with metadata changed during processing. ChunksIndexed
 * counts here, on the one `ready` write of an upload: two workers may index the same upload at once (its S3 event and
 * its upload-complete message), and only one of them makes it `ready`.
 */
async function markReady(deps: ProcessingDeps, doc: DocumentRecord, chunkCount: number): Promise<ProcessingOutcome> {
  const ref = refOf(doc);
  const updated = await deps.documents.setStatus(
    doc,
    doc.documentId,
    doc.uploadId,
    'ready',
    null,
    deps.clock.now().toISOString(),
  );
  if (!updated) {
    // Deleted, failed (by the watchdog) or replaced while we worked. A deleted or failed document keeps no chunks;
    // a replaced one is re-indexed by its own message.
    const now = await deps.documents.get(ref, ref.documentId);
    if (!now) await deps.index.deleteDocument(ref);
    else if (now.status === 'failed' && now.uploadId === doc.uploadId) await removeChunksOfFailed(deps, ref);
    return 'skipped';
  }
  deps.metrics.count(METRIC.documentsReady);
  deps.metrics.count(METRIC.chunksIndexed, chunkCount);
  // From the document's last `uploaded` write (upload-complete, or the watchdog's retry) to `ready`.
  deps.metrics.milliseconds(
    METRIC.processingDuration,
    Math.max(0, deps.clock.now().getTime() - Date.parse(doc.updatedAt)),
  );
  if (!sameMetadata(chunkMetadataOf(updated), chunkMetadataOf(doc))) {
    await deps.index.updateDocumentMetadata(ref, chunkMetadataOf(updated));
  }
  return 'ready';
}

/** Message `process-document`. Errors other than ProcessingError are transient: the queue retries them. */
export async function processDocument(
  deps: ProcessingDeps,
  ref: DocumentRef,
  uploadId: string,
): Promise<ProcessingOutcome> {
  const doc = await pendingDocument(deps, ref, uploadId);
  if (!doc) return 'skipped';
  let chunks: IndexedChunk[];
  try {
    chunks = await buildChunks(deps, doc);
  } catch (error) {
    if (error instanceof ProcessingError) return fail(deps, doc, error);
    throw error;
  }
  await deps.index.replaceDocument(ref, chunks);
  if ((await deps.index.countDocumentChunks(ref)) >= chunks.length) return markReady(deps, doc, chunks.length);
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
  const expected = (await buildChunks(deps, doc)).length;
  if ((await deps.index.countDocumentChunks(ref)) >= expected) return markReady(deps, doc, expected);
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
  if (ready) await deps.index.updateDocumentMetadata(ref, chunkMetadataOf(doc));
  // Settled only by a sync that read the change it owes (a change after the read owes its own sync).
  if (owed && (!ready || owed.since <= doc.updatedAt)) {
    await deps.documents.settleOwed(ref, ref.documentId, 'sync-metadata', owed.since);
  }
  return ready ? 'ready' : 'skipped';
}

/**
 * Message `delete-document`: no chunk and no object of a deleted document stays, and the erasure owed since the
 * delete is settled. A document created again under the same id (not merely reserved) is re-indexed by its own
 * processing, which replaces every chunk, so its chunks and its objects are left alone.
 */
export async function deleteDocumentChunks(deps: ProcessingDeps, ref: DocumentRef): Promise<ProcessingOutcome> {
  const owed = await deps.documents.getOwed(ref, ref.documentId, 'delete-document');
  const doc = await deps.documents.get(ref, ref.documentId);
  const recreated = doc !== undefined && doc.status !== 'reserved';
  if (!recreated) {
    await deps.index.deleteDocument(ref);
    // The request removed them already, unless it was cut off between its writes; a reservation's own are kept.
    const objects = (owed?.objectKeys ?? []).filter((key) => key !== doc?.s3Key && key !== doc?.objectKey);
    if (objects.length > 0) await deps.blobs.delete(objects);
  }
  if (owed) await deps.documents.settleOwed(ref, ref.documentId, 'delete-document', owed.since);
  return recreated ? 'skipped' : 'ready';
}
