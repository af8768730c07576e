/**
 * POST /knowledge/documents/update/upload-complete. Primary course: the session is checked as for a new upload,
 * the new content replaces the old (the old object is deleted), the document is `uploaded` again and reprocessing is
 * queued; the previous chunks stay retrievable until then.
 */

import { NotFoundError } from '#core/errors';
import { type Caller, requireKnowledgeBase } from '#core/tenancy/tenancy';
import { METRIC } from '#ports/metrics';
import { datasetOf } from './find-document';
import type { KnowledgeDeps } from './knowledge-deps';
import type { UploadCompletion } from './upload-session';
import { completionOf, contentOf, requireNotExpired, requireOpenSession, requireUploadedObject } from './upload-steps';

/** POST /knowledge/documents/update/upload-complete: the new content replaces the old and reprocessing starts. */
export async function completeUpdateUpload(
  deps: KnowledgeDeps,
  caller: Caller,
  uploadId: string,
): Promise<UploadCompletion> {
  const session = await requireOpenSession(deps, caller, uploadId, ['update']);
  if (session.completion) return session.completion;
  // A knowledge base deleted (or being deleted) since upload-link takes no new content: the same 404 as upload-link.
  await requireKnowledgeBase(deps, caller, session.agentId, session.knowledgeBaseId);
  requireNotExpired(deps, session);
  const head = await requireUploadedObject(deps, session);
  const ref = datasetOf(session);
  const documentId = session.documentId as string;
  await deps.blobs.markCompleted(session.objectKey);
  const before = await deps.documents.get(ref, documentId);
  const content = contentOf(session, head.size, deps.clock.now().toISOString());
  let doc = await deps.documents.replaceContent(ref, documentId, content, session.metadata);
  if (doc) deps.metrics.count(METRIC.documentsUploaded);
  if (!doc) {
    const current = await deps.documents.get(ref, documentId);
    if (!current || current.status === 'reserved') {
      await deps.blobs.delete([session.objectKey]);
      throw new NotFoundError('DOCUMENT_NOT_FOUND', `Document ${documentId} was deleted before the update completed`);
    }
    doc = current; // an earlier attempt of this call already applied the update
  } else if (before && before.objectKey !== doc.objectKey) {
    await deps.blobs.delete([before.objectKey]);
  }
  const stored = await deps.uploads.saveCompletion(uploadId, completionOf(doc));
  await deps.queue.send({ kind: 'process-document', ...ref, documentId, uploadId });
  return stored;
}
