/**
 * The local index's scores, each a fixed function of the query and one chunk on 0..1, higher is better
 * (docs/retrieval.md, "Scores"), and the order of hits.
 */

import type { IndexHit } from '#ports/processing';

/**
 * k of the lexical score `m / (m + k)`, where m is the BM25 score divided by the number of distinct query terms.
 * 5 is about the median m of the right document's best chunk for a one-line description query over 5k chunks of
 * English man pages (wrong documents in the top 5: about 3.5), so 0.5 reads as "a typical correct match".
 */
export const LEXICAL_SATURATION_K = 5;

/** Weight of the lexical score in the hybrid score; the vector score gets the rest. */
export const DEFAULT_LEXICAL_WEIGHT = 0.5;

/** BM25 on a fixed 0..1 scale: the BM25 per distinct query term, saturated by LEXICAL_SATURATION_K. */
export function lexicalScore(bm25: number, queryTermCount: number): number {
  if (!(bm25 > 0)) return 0;
  const perTerm = bm25 / Math.max(1, queryTermCount);
  return perTerm / (perTerm + LEXICAL_SATURATION_K);
}

/** Cosine distance d (0..2) as `1 - d/2` = (1 + cosine) / 2, the convention of OpenSearch's cosine score. */
export function vectorScore(cosineDistance: number): number {
  return Math.min(1, Math.max(0, 1 - cosineDistance / 2));
}

/** Hybrid score: a convex combination of the two fixed-scale scores, so it stays on 0..1. */
export function hybridScore(lexical: number, vector: number, lexicalWeight = DEFAULT_LEXICAL_WEIGHT): number {
  return lexicalWeight * lexical + (1 - lexicalWeight) * vector;
}

export function cosineDistance(a: readonly number[], b: ArrayLike<number>): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    normA += a[i] * a[i];
    normB += b[i] * b[i];
  }
  if (normA === 0 || normB === 0) return 1;
  return 1 - dot / Math.sqrt(normA * normB);
}

// ---------------------------------------------------------------------------------------------------------------

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Best first; ties in a stable, locale-independent order. */
export function byScoreThenPosition(a: IndexHit, b: IndexHit): number {
  return (
    b.score - a.score ||
    compareText(a.chunk.documentId, b.chunk.documentId) ||
    a.chunk.position - b.chunk.position ||
    compareText(a.chunk.chunkId, b.chunk.chunkId)
  );
}
