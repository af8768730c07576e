/**
 * POST /knowledge/documents/upload-link. Primary course: the knowledge base is the caller's; the documentId (the
 * customDocumentId when given) is reserved, an upload session recorded and a pre-signed PUT URL issued. A `.zip` name
 * reserves no document: the session names a ZIP import job instead.
 */
import { ConflictError, ValidationError } from '#core/errors';
import { type Caller, requireKnowledgeBase } from '#core/tenancy/tenancy';
import { isZipFileName } from './content-types';
import { type DatasetRef, reservationRecord } from './document';
import { type MetadataChanges, pickMetadataChanges } from './fields';
import { datasetOf } from './find-document';
import type { KnowledgeDeps } from './knowledge-deps';
import { documentS3Key, zipObjectKey } from './object-keys';
import { issueUploadUrl, newSession, requireDeclaredSizeWithinLimit, type UploadLinkResponse } from './upload-steps';

export interface UploadLinkRequest extends DatasetRef, MetadataChanges {
  readonly fileName: string;
  /** The exact size of the file to come, when the caller knows it (it is then signed into the URL). */
  readonly fileSize?: number;
  readonly customDocumentId?: string;
}

/** POST /knowledge/documents/upload-link */
export async function createUploadLink(
  deps: KnowledgeDeps,
  caller: Caller,
  request: UploadLinkRequest,
): Promise<UploadLinkResponse> {
  requireDeclaredSizeWithinLimit(deps, request.fileName, request.fileSize);
  await requireKnowledgeBase(deps, caller, request.agentId, request.knowledgeBaseId);
  const ref = datasetOf(request);
  const uploadId = deps.ids.uuid();
  const metadata = pickMetadataChanges(request);

  if (isZipFileName(request.fileName)) {
    if (request.customDocumentId !== undefined) {
      throw new ValidationError([
        {
          field: 'customDocumentId',
          rule: 'customDocumentId.notForZip',
          message: 'customDocumentId cannot be given for a ZIP import: the archive is not a document',
        },
      ]);
    }
    const zipJobId = deps.ids.uuid();
    const objectKey = zipObjectKey(ref, zipJobId, request.fileName);
    const session = newSession(deps, caller, {
      ...ref,
      uploadId,
      kind: 'zip',
      documentId: null,
      zipJobId,
      customDocumentId: null,
      s3Key: objectKey,
      objectKey,
      fileName: request.fileName,
      declaredSize: request.fileSize ?? null,
      metadata,
    });
    return issueUploadUrl(deps, session);
  }

  const documentId = request.customDocumentId ?? deps.ids.uuid();
  const s3Key = documentS3Key(ref, documentId, request.fileName);
  const session = newSession(deps, caller, {
    ...ref,
    uploadId,
    kind: 'create',
    documentId,
    zipJobId: null,
    customDocumentId: request.customDocumentId ?? null,
    s3Key,
    objectKey: s3Key,
    fileName: request.fileName,
    declaredSize: request.fileSize ?? null,
    metadata,
  });
  const reserved = await deps.documents.reserve(
    reservationRecord({
      ...ref,
      organizationId: caller.organizationId,
      documentId,
      customDocumentId: session.customDocumentId,
      s3Key,
      fileName: request.fileName,
      uploadId,
      reservedUntil: session.expiresAt,
      contentType: session.contentType,
      createdAt: session.createdAt,
    }),
    session.createdAt,
  );
  if (!reserved) {
    throw new ConflictError(
      'DUPLICATE_CUSTOM_DOCUMENT_ID',
      `customDocumentId ${documentId} is already used in this knowledge base and environment`,
      [{ field: 'customDocumentId', rule: 'unique', message: 'customDocumentId is already used' }],
    );
  }
  return issueUploadUrl(deps, session);
}
