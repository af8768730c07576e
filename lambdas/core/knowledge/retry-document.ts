/**
 * POST /knowledge/documents/retry. Primary course: a `failed` document goes back to `uploaded` (its error cleared)
 * and its stored file is queued for processing again, ending `ready` or `failed` as any upload does. A document that
 * is not `failed` is a 409 DOCUMENT_NOT_FAILED, and nothing changes; a file a ZIP import refused (a failed document
 * without content) is a 409 DOCUMENT_NOT_RETRYABLE. If the message cannot be sent, the document
 * stays `uploaded` and the watchdog queues it again past its time limit: nothing is lost.
 */
import { ConflictError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import { type DatasetRef, type DocumentRecord, type DocumentView, documentView } from './document';
import { datasetOf, findDocument } from './find-document';
import type { DocumentIdentifier, KnowledgeDeps } from './knowledge-deps';

function notFailed(doc: DocumentRecord): ConflictError {
  return new ConflictError('DOCUMENT_NOT_FAILED', `Only a failed document can be retried; this one is ${doc.status}`, [
    { field: 'status', rule: 'failed', message: `status is ${doc.status}` },
  ]);
}

/** A failed document a ZIP import made of a file its archive rules refused, not replaced since: it has no content. */
function refusedByZipImport(doc: DocumentRecord): boolean {
  return doc.refusedByImport === true && doc.zipJobId === doc.uploadId;
}

/** POST /knowledge/documents/retry */
export async function retryDocument(
  deps: KnowledgeDeps,
  caller: Caller,
  request: DatasetRef & DocumentIdentifier,
): Promise<DocumentView> {
  const doc = await findDocument(deps, caller, request);
  if (doc.status !== 'failed') throw notFailed(doc);
  if (refusedByZipImport(doc)) {
    throw new ConflictError(
      'DOCUMENT_NOT_RETRYABLE',
      `Its ZIP import refused this file (${doc.error?.code}), so nothing of it is stored to process again; upload it again`,
      [
        {
          field: 'error.code',
          rule: 'zipImport.refused',
          message: `the ZIP import refused the file: ${doc.error?.code}`,
        },
      ],
    );
  }
  const ref = datasetOf(doc);
  const retried = await deps.documents.retryFailed(ref, doc.documentId, doc.uploadId, deps.clock.now().toISOString());
  // Another request retried it, or an update replaced its upload, between the read and the write.
  if (!retried) throw notFailed((await deps.documents.get(ref, doc.documentId)) ?? doc);
  await deps.queue.send({ kind: 'process-document', ...ref, documentId: doc.documentId, uploadId: doc.uploadId });
  return documentView(retried);
}
