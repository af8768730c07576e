/**
 * Finding the document a request names by s3Key or customDocumentId, within the caller's knowledge base.
 */
import { NotFoundError } from '#core/errors';
import { type Caller, requireKnowledgeBase } from '#core/tenancy/tenancy';
import type { DatasetRef, DocumentRecord } from './document';
import type { DocumentIdentifier, KnowledgeDeps } from './knowledge-deps';
import { parseS3Key } from './object-keys';

export function datasetOf(ref: DatasetRef): DatasetRef {
  return { agentId: ref.agentId, environment: ref.environment, knowledgeBaseId: ref.knowledgeBaseId };
}

export function documentNotFound(identifier: DocumentIdentifier): NotFoundError {
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
