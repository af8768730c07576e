/**
 * The local index's vector and hybrid scores, each on 0..1, higher is better (docs/retrieval.md, "Scores"; the
 * lexical score is lexical-score.ts), and the order of hits.
 */

import type { IndexHit } from '#ports/processing';

/**
 * Weight of the lexical score in the hybrid score; the vector score gets the rest. Less than half: the vector score
 * of an unrelated chunk is already about 0.5 (`(1 + cos) / 2` with cos near 0), so its useful range is half the
 * lexical score's, and one shared word of a two-word query (lexical about 0.6) must not outrank a chunk that means
 * the query (vector near 1) but shares no word with it (test/integration/embeddings.test.ts).
 */
export const DEFAULT_LEXICAL_WEIGHT = 0.3;

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
