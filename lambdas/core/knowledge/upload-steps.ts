/**
 * The steps both uploads share (a new document and an update): the upload session, the pre-signed URL, the
 * checks of upload-complete (owner, endpoint, time, the object itself).
 */

import { ConflictError, GoneError, NotFoundError, ValidationError } from '#core/errors';
import { type Caller, ownsRecord } from '#core/tenancy/tenancy';
import type { ContentFields } from '#ports/stores';
import { contentTypeFor, isZipFileName } from './content-types';
import type { DocumentRecord } from './document';
import type { KnowledgeDeps } from './knowledge-deps';
import type { UploadCompletion, UploadKind, UploadSession } from './upload-session';

export interface UploadLinkResponse {
  readonly uploadId: string;
  readonly uploadUrl: string;
  readonly expiresIn: number;
  readonly s3Key: string;
  /** The document's id; absent for a ZIP import, which is no document (the spec types it as a string). */
  readonly documentId?: string;
  readonly zipJobId?: string;
  readonly requiredHeaders: Record<string, string>;
}

export function addSeconds(date: Date, seconds: number): string {
  return new Date(date.getTime() + seconds * 1000).toISOString();
}

export async function issueUploadUrl(deps: KnowledgeDeps, session: UploadSession): Promise<UploadLinkResponse> {
  await deps.uploads.put(session);
  const { uploadUrlTtlSeconds } = deps.settings;
  const presigned = await deps.blobs.presignPut(
    session.objectKey,
    { contentType: session.contentType, contentLength: session.declaredSize ?? undefined },
    uploadUrlTtlSeconds,
  );
  return {
    uploadId: session.uploadId,
    uploadUrl: presigned.url,
    expiresIn: uploadUrlTtlSeconds,
    s3Key: session.s3Key,
    ...(session.documentId !== null ? { documentId: session.documentId } : {}),
    ...(session.zipJobId ? { zipJobId: session.zipJobId } : {}),
    requiredHeaders: presigned.headers,
  };
}

/**
 * A declared size is checked against the limit of what is uploaded, a document or an archive, before any URL is
 * issued: the caller learns it at once, and the URL (which signs the size) could not carry more anyway.
 */
export function requireDeclaredSizeWithinLimit(
  deps: KnowledgeDeps,
  fileName: string,
  fileSize: number | undefined,
): void {
  if (fileSize === undefined) return;
  const archive = isZipFileName(fileName);
  const limit = archive ? deps.settings.maxArchiveBytes : deps.settings.maxFileBytes;
  if (fileSize <= limit) return;
  throw new ValidationError(
    [
      {
        field: 'fileSize',
        rule: 'fileSize.max',
        message: `fileSize must be at most ${limit} bytes, the largest ${archive ? 'ZIP archive' : 'document'} accepted`,
      },
    ],
    `The file is too large: ${fileSize} bytes, the limit is ${limit} bytes`,
  );
}

export function newSession(
  deps: KnowledgeDeps,
  caller: Caller,
  fields: Omit<
    UploadSession,
    'uploadId' | 'organizationId' | 'createdAt' | 'urlExpiresAt' | 'expiresAt' | 'completion' | 'contentType'
  > & { uploadId: string },
): UploadSession {
  const now = deps.clock.now();
  const { uploadUrlTtlSeconds, uploadSessionTtlSeconds } = deps.settings;
  return {
    ...fields,
    organizationId: caller.organizationId,
    contentType: contentTypeFor(fields.fileName),
    createdAt: now.toISOString(),
    urlExpiresAt: addSeconds(now, uploadUrlTtlSeconds),
    expiresAt: addSeconds(now, Math.max(uploadSessionTtlSeconds, uploadUrlTtlSeconds)),
    completion: null,
  };
}

/** The session an upload-complete names, checked for owner, endpoint and time. */
export async function requireOpenSession(
  deps: KnowledgeDeps,
  caller: Caller,
  uploadId: string,
  kinds: readonly UploadKind[],
): Promise<UploadSession> {
  const session = await deps.uploads.get(uploadId);
  if (!session || !ownsRecord(caller, session)) {
    throw new NotFoundError('UPLOAD_NOT_FOUND', `Upload ${uploadId} was not found`);
  }
  if (!kinds.includes(session.kind)) {
    const endpoint = session.kind === 'update' ? 'update/upload-complete' : 'upload-complete';
    throw new ValidationError(
      [{ field: 'uploadId', rule: 'uploadKind', message: `uploadId belongs to ${endpoint}` }],
      `Upload ${uploadId} must be completed with POST /knowledge/documents/${endpoint}`,
    );
  }
  return session;
}

export async function requireUploadedObject(deps: KnowledgeDeps, session: UploadSession) {
  const head = await deps.blobs.head(session.objectKey);
  if (!head) {
    throw new ConflictError(
      'UPLOAD_NOT_RECEIVED',
      `No file has been uploaded for upload ${session.uploadId}: PUT the file to uploadUrl first`,
    );
  }
  return head;
}

export function requireNotExpired(deps: KnowledgeDeps, session: UploadSession): void {
  if (deps.clock.now().toISOString() > session.expiresAt) {
    throw new GoneError(
      'UPLOAD_EXPIRED',
      `Upload ${session.uploadId} expired at ${session.expiresAt}; request a new upload link`,
    );
  }
}

export function completionOf(
  doc: Pick<DocumentRecord, 's3Key' | 'documentId' | 'createdAt' | 'updatedAt'>,
): UploadCompletion {
  return {
    type: 'document',
    s3Key: doc.s3Key,
    documentId: doc.documentId,
    status: 'uploaded',
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}

/** The fields an upload's content brings to its document. */
export function contentOf(session: UploadSession, fileSize: number, updatedAt: string): ContentFields {
  return {
    uploadId: session.uploadId,
    objectKey: session.objectKey,
    fileName: session.fileName,
    contentType: session.contentType,
    fileSize,
    updatedAt,
  };
}
