/**
 * GET /knowledge/documents/list: the documents of a knowledge base in one environment, newest first, a page at a
 * time, with the dataset's counts per status. The counts are the whole dataset's (not the page's, nor the filters'),
 * kept exact by the store with every status change; the filters (status, labels, file name prefix) narrow the page.
 */
import { pageTokens } from '#core/paging/pages';
import { type Caller, requireKnowledgeBase } from '#core/tenancy/tenancy';
import type { DocumentListQuery } from '#ports/stores';
import { type DatasetRef, type DocumentStatus, documentView } from './document';
import { datasetOf } from './find-document';
import type { KnowledgeDeps } from './knowledge-deps';

export const DEFAULT_DOCUMENT_PAGE = 50;

/** `<createdAt>#<documentId>` as documentPosition writes it (a generated id or a customDocumentId). */
const tokens = pageTokens(
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z#[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/,
  'agent, environment, knowledge base or filters',
);

export interface ListDocumentsRequest extends DatasetRef {
  readonly status?: DocumentStatus;
  readonly label1?: string;
  readonly label2?: string;
  readonly fileNamePrefix?: string;
  readonly limit?: number;
  readonly nextToken?: string;
}

export async function listDocuments(
  deps: Pick<KnowledgeDeps, 'agents' | 'knowledgeBases' | 'documents'>,
  caller: Caller,
  request: ListDocumentsRequest,
) {
  const ref = datasetOf(request);
  const filters = {
    ...(request.status !== undefined ? { status: request.status } : {}),
    ...(request.label1 !== undefined ? { label1: request.label1 } : {}),
    ...(request.label2 !== undefined ? { label2: request.label2 } : {}),
    ...(request.fileNamePrefix !== undefined ? { fileNamePrefix: request.fileNamePrefix } : {}),
  };
  const identity = [
    ref.agentId,
    ref.environment,
    ref.knowledgeBaseId,
    filters.status ?? null,
    filters.label1 ?? null,
    filters.label2 ?? null,
    filters.fileNamePrefix ?? null,
  ];
  const before = request.nextToken === undefined ? undefined : tokens.decode(request.nextToken, identity);
  await requireKnowledgeBase(deps, caller, ref.agentId, ref.knowledgeBaseId);
  const query: DocumentListQuery = {
    limit: request.limit ?? DEFAULT_DOCUMENT_PAGE,
    ...filters,
    ...(before !== undefined ? { before } : {}),
  };
  const [{ documents, next }, counts] = await Promise.all([
    deps.documents.list(ref, query),
    deps.documents.counts(ref),
  ]);
  return {
    documents: documents.map(documentView),
    counts,
    nextToken: next === null ? null : tokens.encode(next, identity),
  };
}
