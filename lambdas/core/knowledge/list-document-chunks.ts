/**
 * GET /knowledge/documents/chunks: one document's chunks in position order, a page at a time, each with its text and
 * the metadata a retrieval hit of it carries (`hitMetadataOf`), optionally only those whose text contains `q`.
 *
 * Primary course: the document the request names must be the caller's (404 otherwise, as for GET of the document);
 * the index gives the chunks after the token's position; with `q`, chunks are read in batches and kept when their
 * text contains `q` (case-insensitive, a plain substring: no pattern is built from the caller's input), at most
 * SEARCH_SCAN_LIMIT read a request, so a search over a long document answers a page that may hold fewer than `limit`
 * chunks and a `nextToken` to go on from where it stopped.
 *
 * The chunks shown are those retrieval finds now: a `ready` document's; an `uploaded` one's are those of its previous
 * content while an update is processed (retrieval still finds them), none before its first processing ends; a
 * `failed` document's are never retrieved, so it answers 409 DOCUMENT_FAILED. The answer says the status.
 */
import { ConflictError } from '#core/errors';
import { pageTokens } from '#core/paging/pages';
import { hitMetadataOf, type RetrievalResult } from '#core/retrieval/retrieve';
import type { Caller } from '#core/tenancy/tenancy';
import type { KnowledgeChunkListing } from '#ports/processing';
import type { DatasetRef, DocumentStatus } from './document';
import { findDocument } from './find-document';
import type { DocumentIdentifier, KnowledgeDeps } from './knowledge-deps';

export const DEFAULT_CHUNK_PAGE = 50;
/** Chunks a search reads at most in one request, in batches of SEARCH_BATCH. */
export const SEARCH_SCAN_LIMIT = 5000;
const SEARCH_BATCH = 1000;

/** The position the next page starts after. */
const tokens = pageTokens(/^[0-9]{1,9}$/, 'document or q');

export interface ListDocumentChunksRequest extends DatasetRef, DocumentIdentifier {
  readonly limit?: number;
  readonly nextToken?: string;
  readonly q?: string;
}

export interface DocumentChunkView {
  readonly chunkId: string;
  readonly position: number;
  readonly text: string;
  /** Exactly what a retrieval result of this chunk carries as its `metadata`. */
  readonly metadata: RetrievalResult['metadata'];
}

export interface ChunkListDeps extends Pick<KnowledgeDeps, 'agents' | 'knowledgeBases' | 'documents'> {
  readonly index: KnowledgeChunkListing;
}

export async function listDocumentChunks(
  deps: ChunkListDeps,
  caller: Caller,
  request: ListDocumentChunksRequest,
): Promise<{
  status: Exclude<DocumentStatus, 'failed'>;
  chunks: DocumentChunkView[];
  total: number;
  nextToken: string | null;
}> {
  const doc = await findDocument(deps, caller, request);
  const identity = [doc.agentId, doc.environment, doc.knowledgeBaseId, doc.documentId, request.q ?? null];
  let after: number | null =
    request.nextToken === undefined ? null : Number(tokens.decode(request.nextToken, identity));
  if (doc.status === 'failed') {
    throw new ConflictError(
      'DOCUMENT_FAILED',
      `The document failed processing (${doc.error?.code ?? 'no code'}): retrieval finds none of its chunks; retry it or upload it again`,
    );
  }
  const status = doc.status as Exclude<DocumentStatus, 'failed'>;
  const ref = {
    agentId: doc.agentId,
    environment: doc.environment,
    knowledgeBaseId: doc.knowledgeBaseId,
    documentId: doc.documentId,
  };
  const limit = request.limit ?? DEFAULT_CHUNK_PAGE;
  const needle = request.q?.toLowerCase();
  const found: DocumentChunkView[] = [];
  let total = 0;
  let scanned = 0;
  let more = true;
  while (found.length < limit && more && (needle === undefined || scanned < SEARCH_SCAN_LIMIT)) {
    // One more than wanted without q: whether another page follows is known without a second read.
    const batch = needle === undefined ? limit - found.length + 1 : SEARCH_BATCH;
    const page = await deps.index.listDocumentChunks(ref, { afterPosition: after, limit: batch });
    // An index that keeps no listing yet for a document still being processed for the first time (Bedrock's manifest).
    if (!page && status === 'uploaded') return { status, chunks: [], total: 0, nextToken: null };
    if (!page) {
      throw new ConflictError(
        'CHUNKS_NOT_LISTED',
        'This document was indexed before its chunks could be listed: reindex the knowledge base to list them',
      );
    }
    total = page.total;
    more = page.chunks.length === batch;
    let taken = 0;
    for (const chunk of page.chunks) {
      if (found.length === limit) {
        more = true;
        break;
      }
      taken++;
      scanned++;
      after = chunk.position;
      if (needle !== undefined && !chunk.text.toLowerCase().includes(needle)) continue;
      found.push({
        chunkId: chunk.chunkId,
        position: chunk.position,
        text: chunk.text,
        metadata: hitMetadataOf(chunk),
      });
    }
    if (taken < page.chunks.length) more = true;
  }
  return {
    status,
    chunks: found,
    total,
    nextToken: more && after !== null ? tokens.encode(String(after), identity) : null,
  };
}
