/**
 * Uploads nobody completed. Primary course: an upload session ends (`expiresAt`) without upload-complete; whatever
 * its URL wrote then belongs to no document, so the watchdog deletes it, and no file (of any size) parks in the
 * bucket past its session. In AWS the bucket's lifecycle rule removes such objects too, a day later, should this
 * never run. An object is kept when a document holds it as its content: the same key can be written again by a
 * later upload of the same custom document id and file name, once the first reservation expired.
 */
import type { BlobStore, Clock } from '#ports/services';
import type { DocumentStore, UploadSessionStore } from '#ports/stores';
import type { ZipJobStore } from '#ports/zip-jobs';

export interface AbandonedUploadDeps {
  readonly uploads: UploadSessionStore;
  readonly documents: DocumentStore;
  readonly zipJobs: ZipJobStore;
  readonly blobs: BlobStore;
  readonly clock: Clock;
}

/**
 * An upload-complete that passed its time check just before the session ended may still be writing: sessions are
 * left this long after they end (an API call lasts at most 29 s in AWS).
 */
export const DEFAULT_GRACE_SECONDS = 60;

export async function removeAbandonedUploads(
  deps: AbandonedUploadDeps,
  options: { batch?: number; graceSeconds?: number } = {},
) {
  const grace = options.graceSeconds ?? DEFAULT_GRACE_SECONDS;
  const endedBefore = new Date(deps.clock.now().getTime() - grace * 1000).toISOString();
  let removed = 0;
  for (const uploadId of await deps.uploads.listOpenEndedBefore(endedBefore, options.batch ?? 100)) {
    const session = await deps.uploads.get(uploadId);
    if (session && session.completion === null && !(await isInUse(deps, session))) {
      await deps.blobs.delete([session.objectKey]);
      removed += 1;
    }
    await deps.uploads.markSwept(uploadId);
  }
  return { removed };
}

async function isInUse(
  deps: AbandonedUploadDeps,
  session: NonNullable<Awaited<ReturnType<UploadSessionStore['get']>>>,
): Promise<boolean> {
  if (session.kind === 'zip')
    return session.zipJobId !== null && (await deps.zipJobs.get(session.zipJobId)) !== undefined;
  if (session.documentId === null) return false;
  const doc = await deps.documents.get(session, session.documentId);
  return doc !== undefined && doc.status !== 'reserved' && doc.objectKey === session.objectKey;
}
