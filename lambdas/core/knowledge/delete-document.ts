/**
 * DELETE /knowledge/documents. Primary course: the record goes first, so the document disappears at once, and the
 * same write records its erasure owed; then its objects, and a queued message removes its chunks and settles the
 * debt. Should that message be lost or dead-lettered, the watchdog queues it again until it is done
 * (core/processing/watchdog.ts): an accepted delete always ends with no chunk and no object left.
 */
import type { Caller } from '#core/tenancy/tenancy';
import type { DatasetRef } from './document';
import { datasetOf, documentNotFound, findDocument } from './find-document';
import type { DocumentIdentifier, KnowledgeDeps } from './knowledge-deps';

/** DELETE /knowledge/documents: the record goes first, so the document disappears at once; then its objects. */
export async function deleteDocument(
  deps: KnowledgeDeps,
  caller: Caller,
  request: DatasetRef & DocumentIdentifier,
): Promise<{ documentId: string; s3Key: string; deleted: true }> {
  const doc = await findDocument(deps, caller, request);
  const removed = await deps.documents.delete(datasetOf(doc), doc.documentId, {
    erasureOwedSince: deps.clock.now().toISOString(),
  });
  if (!removed) throw documentNotFound(request);
  await deps.blobs.delete([...new Set([removed.s3Key, removed.objectKey])]);
  // The record's knowledge of its chunks goes with the message: the worker finds them without searching the index.
  await deps.queue.send({
    kind: 'delete-document',
    ...datasetOf(removed),
    documentId: removed.documentId,
    ...(removed.indexedChunks ? { indexedChunks: removed.indexedChunks } : {}),
  });
  return { documentId: removed.documentId, s3Key: removed.s3Key, deleted: true };
}
