/**
 * Use cases of the Knowledge API's documents: upload in steps, update, metadata, get, delete.
 *
 * Primary course of a new document: upload-link reserves the documentId and issues a pre-signed PUT URL; the client
 * PUTs the bytes; upload-complete checks the object exists, turns the reservation into an `uploaded` document and
 * queues its processing. Every step is safe to retry: a repeated upload-complete answers what the first answered.
 */

import { METRIC, type OperationalMetrics } from '../../ports/metrics';
import type { BlobStore, Clock, IdGenerator, ProcessingQueue } from '../../ports/services';
import type { ContentFields, DocumentStore, UploadSessionStore } from '../../ports/stores';
import type { ZipJobStore } from '../../ports/zip-jobs';
import { ConflictError, GoneError, NotFoundError, ValidationError } from '../errors';
import { type Caller, ownsRecord, requireKnowledgeBase, type TenancyDeps } from '../tenancy/tenancy';
import { contentTypeFor, isZipFileName } from './content-types';
import { type DatasetRef, type DocumentRecord, type DocumentView, documentView, reservationRecord } from './document';
import { type Environment, METADATA_FIELDS, type MetadataChanges, pickMetadataChanges } from './fields';
import type { UploadCompletion, UploadKind, UploadSession } from './upload-session';

export interface KnowledgeDeps extends TenancyDeps {
  readonly documents: DocumentStore;
  readonly zipJobs: ZipJobStore;
  readonly uploads: UploadSessionStore;
  readonly blobs: BlobStore;
  readonly queue: ProcessingQueue;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly settings: UploadSettings;
  /** DocumentsUploaded (ports/metrics.ts). */
  readonly metrics: OperationalMetrics;
}

export interface UploadSettings {
  /** Lifetime of a pre-signed upload URL. */
  readonly uploadUrlTtlSeconds: number;
  /** How long after upload-link an upload can still be completed (at least the URL's lifetime). */
  readonly uploadSessionTtlSeconds: number;
  /** Largest document processed: a larger declared `fileSize` is refused at upload-link. */
  readonly maxFileBytes: number;
  /** Largest ZIP archive imported: a larger declared `fileSize` is refused at upload-link. */
  readonly maxArchiveBytes: number;
}

export interface DocumentIdentifier {
  readonly s3Key?: string;
  readonly customDocumentId?: string;
}

export interface UploadLinkRequest extends DatasetRef, MetadataChanges {
  readonly fileName: string;
  /** The exact size of the file to come, when the caller knows it (it is then signed into the URL). */
  readonly fileSize?: number;
  readonly customDocumentId?: string;
}

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

/** `<agentId>/<environment>/<knowledgeBaseId>/<documentId>/<fileName>`: the identity path of a document. */
export function documentS3Key(ref: DatasetRef, documentId: string, fileName: string): string {
  return `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/${documentId}/${fileName}`;
}

/** Content of later versions lives beside the identity path; `_` cannot start a documentId, so nothing collides. */
function versionObjectKey(s3Key: string, uploadId: string, fileName: string): string {
  return `${s3Key.slice(0, s3Key.lastIndexOf('/'))}/_versions/${uploadId}/${fileName}`;
}

function zipObjectKey(ref: DatasetRef, zipJobId: string, fileName: string): string {
  return `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/_imports/${zipJobId}/${fileName}`;
}

function parseS3Key(s3Key: string): (DatasetRef & { documentId: string }) | undefined {
  const parts = s3Key.split('/');
  if (parts.length !== 5) return undefined;
  const [agentId, environment, knowledgeBaseId, documentId] = parts;
  return { agentId, environment: environment as Environment, knowledgeBaseId, documentId };
}

function datasetOf(ref: DatasetRef): DatasetRef {
  return { agentId: ref.agentId, environment: ref.environment, knowledgeBaseId: ref.knowledgeBaseId };
}

function documentNotFound(identifier: DocumentIdentifier): NotFoundError {
  const which =
    identifier.s3Key !== undefined ? `s3Key ${identifier.s3Key}` : `customDocumentId ${identifier.customDocumentId}`;
  return new NotFoundError('DOCUMENT_NOT_FOUND', `No document with ${which} in this knowledge base and environment`);
}

/** The visible document a request names, or DOCUMENT_NOT_FOUND. Reservations are invisible. */
export async function findDocument(
  deps: Pick<KnowledgeDeps, 'agents' | 'knowledgeBases' | 'documents'>,
  caller: Caller,
  request: DatasetRef & DocumentIdentifier,
): Promise<DocumentRecord> {
  await requireKnowledgeBase(deps, caller, request.agentId, request.knowledgeBaseId);
  const ref = datasetOf(request);
  let documentId: string | undefined;
  if (request.s3Key !== undefined) {
    const parsed = parseS3Key(request.s3Key);
    const sameDataset =
      parsed?.agentId === ref.agentId &&
      parsed.environment === ref.environment &&
      parsed.knowledgeBaseId === ref.knowledgeBaseId;
    documentId = sameDataset ? parsed.documentId : undefined;
  } else {
    documentId = request.customDocumentId;
  }
  const doc = documentId === undefined ? undefined : await deps.documents.get(ref, documentId);
  const matches =
    doc !== undefined &&
    doc.status !== 'reserved' &&
    doc.organizationId === caller.organizationId &&
    (request.s3Key !== undefined ? doc.s3Key === request.s3Key : doc.customDocumentId === request.customDocumentId);
  if (!matches) throw documentNotFound(request);
  return doc;
}

function addSeconds(date: Date, seconds: number): string {
  return new Date(date.getTime() + seconds * 1000).toISOString();
}

async function issueUploadUrl(deps: KnowledgeDeps, session: UploadSession): Promise<UploadLinkResponse> {
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
function requireDeclaredSizeWithinLimit(deps: KnowledgeDeps, fileName: string, fileSize: number | undefined): void {
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

function newSession(
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

/** The session an upload-complete names, checked for owner, endpoint and time. */
async function requireOpenSession(
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

async function requireUploadedObject(deps: KnowledgeDeps, session: UploadSession) {
  const head = await deps.blobs.head(session.objectKey);
  if (!head) {
    throw new ConflictError(
      'UPLOAD_NOT_RECEIVED',
      `No file has been uploaded for upload ${session.uploadId}: PUT the file to uploadUrl first`,
    );
  }
  return head;
}

function requireNotExpired(deps: KnowledgeDeps, session: UploadSession): void {
  if (deps.clock.now().toISOString() > session.expiresAt) {
    throw new GoneError(
      'UPLOAD_EXPIRED',
      `Upload ${session.uploadId} expired at ${session.expiresAt}; request a new upload link`,
    );
  }
}

function completionOf(doc: DocumentRecord): UploadCompletion {
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
function contentOf(session: UploadSession, fileSize: number, updatedAt: string): ContentFields {
  return {
    uploadId: session.uploadId,
    objectKey: session.objectKey,
    fileName: session.fileName,
    contentType: session.contentType,
    fileSize,
    updatedAt,
  };
}

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
  let doc = await deps.documents.completeReservation(ref, documentId, content, session.metadata, now);
  if (doc) deps.metrics.count(METRIC.documentsUploaded);
  else {
    // Either an earlier attempt of this same call already completed it (answer as it did), or the reservation
    // expired and was taken by another upload.
    const current = await deps.documents.get(ref, documentId);
    if (!current || current.uploadId !== uploadId || current.status === 'reserved') {
      throw new GoneError('UPLOAD_EXPIRED', `Upload ${uploadId} expired and its documentId was reused`);
    }
    doc = current;
  }
  const stored = await deps.uploads.saveCompletion(uploadId, completionOf(doc));
  await deps.queue.send({ kind: 'process-document', ...ref, documentId, uploadId });
  return stored;
}

export interface UpdateUploadLinkRequest extends DatasetRef, DocumentIdentifier, MetadataChanges {
  readonly fileName: string;
  readonly fileSize?: number;
}

/** POST /knowledge/documents/update/upload-link: the new content goes to its own object; nothing changes yet. */
export async function createUpdateUploadLink(
  deps: KnowledgeDeps,
  caller: Caller,
  request: UpdateUploadLinkRequest,
): Promise<UploadLinkResponse> {
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
  return issueUploadUrl(deps, session);
}

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
  // The indexed chunks follow asynchronously, without re-embedding.
  await deps.queue.send({ kind: 'sync-metadata', ...datasetOf(doc), documentId: doc.documentId });
  return documentView(updated);
}

/** GET /knowledge/documents */
export async function getDocument(
  deps: KnowledgeDeps,
  caller: Caller,
  request: DatasetRef & DocumentIdentifier,
): Promise<DocumentView> {
  return documentView(await findDocument(deps, caller, request));
}

/** DELETE /knowledge/documents: the record goes first, so the document disappears at once; then its objects. */
export async function deleteDocument(
  deps: KnowledgeDeps,
  caller: Caller,
  request: DatasetRef & DocumentIdentifier,
): Promise<{ documentId: string; s3Key: string; deleted: true }> {
  const doc = await findDocument(deps, caller, request);
  const removed = await deps.documents.delete(datasetOf(doc), doc.documentId);
  if (!removed) throw documentNotFound(request);
  await deps.blobs.delete([...new Set([removed.s3Key, removed.objectKey])]);
  await deps.queue.send({ kind: 'delete-document', ...datasetOf(removed), documentId: removed.documentId });
  return { documentId: removed.documentId, s3Key: removed.s3Key, deleted: true };
}
