/**
 * POST /knowledge/documents/update/upload-link. Primary course: the document is found, and a session and a
 * pre-signed URL are issued for its new content, in an object of its own; nothing changes yet.
 */
import { ValidationError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import { isZipFileName } from './content-types';
import type { DatasetRef } from './document';
import { type MetadataChanges, pickMetadataChanges } from './fields';
import { datasetOf, findDocument } from './find-document';
import type { DocumentIdentifier, KnowledgeDeps } from './knowledge-deps';
import { versionObjectKey } from './object-keys';
import { issueUploadUrl, newSession, requireDeclaredSizeWithinLimit, type UploadLinkResponse } from './upload-steps';

export interface UpdateUploadLinkRequest extends DatasetRef, DocumentIdentifier, MetadataChanges {
  readonly fileName: string;
  readonly fileSize?: number;
}

/** POST /knowledge/documents/update/upload-link: the new content goes to its own object; nothing changes yet. */
export async function createUpdateUploadLink(
  deps: KnowledgeDeps,
  caller: Caller,
  request: UpdateUploadLinkRequest,
): Promise<UploadLinkResponse & { readonly documentId: string }> {
  if (isZipFileName(request.fileName)) {
    throw new ValidationError([
      { field: 'fileName', rule: 'fileName.notZip', message: 'a document cannot be replaced by a ZIP archive' },
    ]);
  }
  requireDeclaredSizeWithinLimit(deps, request.fileName, request.fileSize);
  const doc = await findDocument(deps, caller, request);
  const uploadId = deps.ids.uuid();
  const session = newSession(deps, caller, {
    ...datasetOf(doc),
    uploadId,
    kind: 'update',
    documentId: doc.documentId,
    zipJobId: null,
    customDocumentId: doc.customDocumentId,
    s3Key: doc.s3Key,
    objectKey: versionObjectKey(doc.s3Key, uploadId, request.fileName),
    fileName: request.fileName,
    declaredSize: request.fileSize ?? null,
    metadata: pickMetadataChanges(request),
  });
  // The document's id always: the answer of an update names the document it changes.
  return { ...(await issueUploadUrl(deps, session)), documentId: doc.documentId };
}
