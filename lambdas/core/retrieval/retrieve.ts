/**
 * Retrieval from one knowledge base of an agent in one environment. Primary course: the knowledge base must be the
 * caller's; filters are resolved against memory; the index is queried inside the tenant scope; a hit whose document
 * is no longer retrievable (deleted, its chunks not erased yet; failed; only reserved again) is dropped, as read from
 * the document records at query time; results under minScore are dropped (scores are on a fixed 0..1 scale, higher
 * is better, on every backend).
 */

import type { DatasetRef } from '#core/knowledge/document';
import { type Caller, requireKnowledgeBase } from '#core/tenancy/tenancy';
import { METRIC, type OperationalMetrics } from '#ports/metrics';
import type {
  ChunkMetadata,
  Embedder,
  IndexedChunk,
  IndexFilter,
  IndexHit,
  KnowledgeRetrieval,
} from '#ports/processing';
import type { AgentStore, DocumentStore, KnowledgeBaseStore, TenancyReads } from '#ports/stores';
import { type FilterEntry, resolveFilters, type SkippedFilter } from './filters';

export const DEFAULT_NUMBER_OF_RESULTS = 5;
export const MAX_NUMBER_OF_RESULTS = 100;

export interface RetrievalDeps {
  readonly agents: AgentStore;
  readonly knowledgeBases: KnowledgeBaseStore;
  /** The agent and the knowledge base in one read (core/tenancy/tenancy.ts, requireKnowledgeBase); or one read each. */
  readonly tenancyReads?: TenancyReads;
  readonly index: KnowledgeRetrieval;
  /**
   * The document records: hits of documents that may not be retrieved are dropped (docs/processing.md, "Owed work").
   * Absent only in tests of retrieval alone.
   */
  readonly documents?: Pick<DocumentStore, 'retrievable'>;
  readonly embedder: Embedder | null;
  /** QueryLatency, Results and EmptyResults of each retrieval (ports/metrics.ts). */
  readonly metrics: OperationalMetrics;
}

export interface RetrievalRequest extends DatasetRef {
  readonly query: string;
  readonly numberOfResults?: number;
  readonly minScore?: number;
  readonly filters?: readonly FilterEntry[];
  readonly memory?: unknown;
  readonly explain?: boolean;
}

export interface RetrievalResult {
  readonly content: string;
  readonly score: number;
  /** Where the chunk comes from, and the metadata every chunk carries (labels, `svc_internal_meta1..4`). */
  readonly metadata: Pick<IndexedChunk, 'documentId' | 's3Key' | 'chunkId' | 'position'> & ChunkMetadata;
}

export interface RetrievalExplanation {
  readonly filters: readonly IndexFilter[];
  readonly skippedFilters: readonly SkippedFilter[];
  readonly backendFilter: unknown;
  readonly retrieval: 'lexical' | 'hybrid';
  readonly numberOfResults: number;
  readonly minScore: number;
  /**
   * Every candidate the index returned, before the minScore cut; a hybrid score with the lexical and vector scores it
   * combines (`lexicalScore`, `vectorScore`).
   */
  readonly candidates: readonly {
    documentId: string;
    chunkId: string;
    score: number;
    lexicalScore?: number;
    vectorScore?: number;
    kept: boolean;
  }[];
}

/** The `metadata` of a retrieval result of this chunk; the chunk view of a document shows each chunk's the same. */
export function hitMetadataOf(chunk: Omit<IndexedChunk, 'vector'>): RetrievalResult['metadata'] {
  return {
    documentId: chunk.documentId,
    s3Key: chunk.s3Key,
    chunkId: chunk.chunkId,
    position: chunk.position,
    label1: chunk.label1,
    label2: chunk.label2,
    svc_internal_meta1: chunk.svc_internal_meta1,
    svc_internal_meta2: chunk.svc_internal_meta2,
    svc_internal_meta3: chunk.svc_internal_meta3,
    svc_internal_meta4: chunk.svc_internal_meta4,
  };
}

export function resultOf(hit: IndexHit): RetrievalResult {
  return { content: hit.chunk.text, score: hit.score, metadata: hitMetadataOf(hit.chunk) };
}

export async function retrieve(
  deps: RetrievalDeps,
  caller: Caller,
  request: RetrievalRequest,
): Promise<{ results: RetrievalResult[]; hits: IndexHit[]; explain?: RetrievalExplanation }> {
  await requireKnowledgeBase(deps, caller, request.agentId, request.knowledgeBaseId);
  const scope: DatasetRef = {
    agentId: request.agentId,
    environment: request.environment,
    knowledgeBaseId: request.knowledgeBaseId,
  };
  const { filters, skipped } = resolveFilters(request.filters ?? [], request.memory ?? {});
  const numberOfResults = request.numberOfResults ?? DEFAULT_NUMBER_OF_RESULTS;
  const minScore = request.minScore ?? 0;
  const started = performance.now();
  const vector = deps.embedder ? (await deps.embedder.embed([request.query]))[0] : undefined;
  const found = await deps.index.query({ scope, text: request.query, vector, filters, limit: numberOfResults });
  // The index may still hold a deleted document's chunks (its erasure follows the DELETE's answer): they are dropped.
  const live =
    deps.documents && found.length > 0
      ? await deps.documents.retrievable(
          scope,
          found.map((hit) => hit.chunk.documentId),
        )
      : undefined;
  const candidates = live ? found.filter((hit) => live.has(hit.chunk.documentId)) : found;
  const hits = candidates.filter((hit) => hit.score >= minScore);
  const results = hits.map(resultOf);
  deps.metrics.milliseconds(METRIC.queryLatency, performance.now() - started);
  deps.metrics.count(METRIC.queryResults, results.length);
  if (results.length === 0) deps.metrics.count(METRIC.emptyResults);
  if (!request.explain) return { results, hits };
  return {
    results,
    hits,
    explain: {
      filters,
      skippedFilters: skipped,
      backendFilter: deps.index.describeFilter?.(scope, filters) ?? null,
      retrieval: vector ? 'hybrid' : 'lexical',
      numberOfResults,
      minScore,
      candidates: candidates.map((hit) => ({
        documentId: hit.chunk.documentId,
        chunkId: hit.chunk.chunkId,
        score: hit.score,
        ...(hit.parts ? { lexicalScore: hit.parts.lexical, vectorScore: hit.parts.vector } : {}),
        kept: hit.score >= minScore,
      })),
    },
  };
}
