/**
 * PATCH /knowledge/documents/metadata. Primary course: at least one field changes; the document's labels and
 * custom metadata are written (with the sync of its chunks recorded owed, in the same write), and its indexed chunks
 * follow asynchronously without re-embedding.
 */
import { ValidationError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import { type DatasetRef, type DocumentView, documentView } from './document';
import { METADATA_FIELDS, type MetadataChanges, pickMetadataChanges } from './fields';
import { datasetOf, documentNotFound, findDocument } from './find-document';
import type { DocumentIdentifier, KnowledgeDeps } from './knowledge-deps';

export interface PatchMetadataRequest extends DatasetRef, DocumentIdentifier, MetadataChanges {}

/** PATCH /knowledge/documents/metadata: labels and custom metadata change; the file is not re-uploaded. */
export async function patchMetadata(
  deps: KnowledgeDeps,
  caller: Caller,
  request: PatchMetadataRequest,
): Promise<DocumentView> {
  const changes = pickMetadataChanges(request);
  if (Object.keys(changes).length === 0) {
    throw new ValidationError(
      [{ field: '', rule: 'atLeastOneOf', message: `give at least one of ${METADATA_FIELDS.join(', ')}` }],
      `Nothing to change: give at least one of ${METADATA_FIELDS.join(', ')} (null clears a field)`,
    );
  }
  const doc = await findDocument(deps, caller, request);
  const updated = await deps.documents.patchMetadata(
    datasetOf(doc),
    doc.documentId,
    changes,
    deps.clock.now().toISOString(),
  );
  if (!updated) throw documentNotFound(request);
  // The indexed chunks follow asynchronously, without re-embedding. The write above recorded the sync owed, so a
  // message lost or dead-lettered is queued again by the watchdog.
  await deps.queue.send({ kind: 'sync-metadata', ...datasetOf(doc), documentId: doc.documentId });
  return documentView(updated);
}
