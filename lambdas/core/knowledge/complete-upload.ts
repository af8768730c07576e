/**
 * POST /knowledge/documents/upload-complete. Primary course: the session is the caller's, open and its object
 * uploaded; the reservation becomes an `uploaded` document (or the ZIP import job is recorded) and its processing is
 * queued. A repeated call answers what the first answered.
 */

import { GoneError } from '#core/errors';
import { type Caller, requireKnowledgeBase } from '#core/tenancy/tenancy';
import { METRIC } from '#ports/metrics';
import { datasetOf } from './find-document';
import type { KnowledgeDeps } from './knowledge-deps';
import type { UploadCompletion } from './upload-session';
import { completionOf, contentOf, requireNotExpired, requireOpenSession, requireUploadedObject } from './upload-steps';

/** POST /knowledge/documents/upload-complete */
export async function completeUpload(deps: KnowledgeDeps, caller: Caller, uploadId: string): Promise<UploadCompletion> {
  const session = await requireOpenSession(deps, caller, uploadId, ['create', 'zip']);
  if (session.completion) return session.completion;
  // A knowledge base deleted (or being deleted) since upload-link takes no new content: the same 404 as upload-link.
  await requireKnowledgeBase(deps, caller, session.agentId, session.knowledgeBaseId);
  requireNotExpired(deps, session);
  const head = await requireUploadedObject(deps, session);
  const ref = datasetOf(session);
  const now = deps.clock.now().toISOString();

  if (session.kind === 'zip' && session.zipJobId) {
    await deps.zipJobs.create({
      ...ref,
      zipJobId: session.zipJobId,
      organizationId: session.organizationId,
      uploadId,
      s3Key: session.s3Key,
      label1: session.metadata.label1 ?? null,
      label2: session.metadata.label2 ?? null,
      // Every file of the archive inherits these, as it inherits the labels.
      customMeta1: session.metadata.customMeta1 ?? null,
      customMeta2: session.metadata.customMeta2 ?? null,
      customMeta3: session.metadata.customMeta3 ?? null,
      customMeta4: session.metadata.customMeta4 ?? null,
      status: 'uploaded',
      error: null,
      fileCount: null,
      createdAt: now,
      updatedAt: now,
    });
    const completion: UploadCompletion = {
      type: 'zip_import',
      s3Key: session.s3Key,
      zipJobId: session.zipJobId,
      status: 'uploaded',
      createdAt: now,
      updatedAt: now,
    };
    const stored = await deps.uploads.saveCompletion(uploadId, completion);
    await deps.queue.send({ kind: 'process-zip', ...ref, zipJobId: session.zipJobId, uploadId });
    return stored;
  }

  const documentId = session.documentId as string;
  // The document's content from now on: no longer an abandoned upload for the bucket's lifecycle rule. (A ZIP
  // archive keeps the tag: it is deleted once imported, and the rule removes it if it ever is not.)
  await deps.blobs.markCompleted(session.objectKey);
  const content = contentOf(session, head.size, now);
  let completion: UploadCompletion;
  if (await deps.documents.completeReservation(ref, documentId, content, session.metadata, now)) {
    deps.metrics.count(METRIC.documentsUploaded);
    // What the write made of the reservation (its s3Key is the session's): no need to read it back.
    completion = completionOf({ s3Key: session.s3Key, documentId, createdAt: now, updatedAt: now });
  } else {
    // Either an earlier attempt of this same call already completed it (answer as it did), or the reservation
    // expired and was taken by another upload.
    const current = await deps.documents.get(ref, documentId);
    if (!current || current.uploadId !== uploadId || current.status === 'reserved') {
      throw new GoneError('UPLOAD_EXPIRED', `Upload ${uploadId} expired and its documentId was reused`);
    }
    completion = completionOf(current);
  }
  const stored = await deps.uploads.saveCompletion(uploadId, completion);
  await deps.queue.send({ kind: 'process-document', ...ref, documentId, uploadId });
  return stored;
}
