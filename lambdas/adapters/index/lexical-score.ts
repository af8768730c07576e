/**
 * The lexical score of the local index (docs/retrieval.md, "Scores"): the idf-weighted share of the query's terms a
 * chunk contains, each contained term counting from 0.6 up to 1 as it repeats, and a document's opening chunks lifted
 * toward 1. It is a fixed function of the query, the chunk and its dataset's term statistics, on 0..1:
 * - a chunk with none of the query's terms scores 0, one with every term at least 0.6;
 * - the statistics are smoothed with PSEUDO_CHUNKS chunks in which every term occurs at PSEUDO_SHARE, and every weight
 *   starts at WEIGHT_BASE, so the weights of a knowledge base of one chunk are about equal, and a chunk scores within
 *   0.1 of what it would in one of 100k (test/quality/score-calibration.test.ts);
 * - term frequency saturates against a fixed reference length rather than the dataset's average, which would make
 *   every score move as the knowledge base grows.
 */

import { termCountsOf } from './lexical-analyzer';

/** What a contained term counts before its frequency: one occurrence in a chunk of the reference length gives 0.6. */
const PRESENCE = 0.4;
/** BM25's k1 and b; the length is capped at the reference length so that the least a contained term counts is 0.6. */
const K1 = 2;
const B = 0.75;
/** Terms of a full chunk (1,000 characters) of English prose: the length at which b has no effect. */
const REFERENCE_LENGTH = 120;
const PSEUDO_CHUNKS = 100;
const PSEUDO_SHARE = 0.1;
const WEIGHT_BASE = 1.75;
/** Scores are rounded to 6 decimals (times this, rounded, divided), so that the bounds above hold exactly. */
const SCORE_DECIMALS = 1e6;

/** A dataset's statistics for the terms of one query. */
export interface TermStatistics {
  /** Chunks in the dataset. */
  readonly chunks: number;
  /** Chunks containing each term (absent: none). */
  readonly documentFrequency: ReadonlyMap<string, number>;
}

/** A query's distinct terms and their weights in one dataset. */
export interface WeightedQuery {
  readonly terms: readonly string[];
  readonly weights: readonly number[];
  readonly totalWeight: number;
}

/**
 * A term's weight: WEIGHT_BASE plus its smoothed inverse document frequency ln(1 + (N + P) / (df + P·s + 0.5)).
 * The base keeps the weights of a large knowledge base (where idf spreads from ~1.5 to ~9) from drifting far from
 * those of a small one (all about 2.3): a chunk holding some of a query's terms then scores about the same in both.
 */
export function termWeight(documentFrequency: number, chunks: number): number {
  return (
    WEIGHT_BASE + Math.log(1 + (chunks + PSEUDO_CHUNKS) / (documentFrequency + PSEUDO_CHUNKS * PSEUDO_SHARE + 0.5))
  );
}

export function weightedQuery(terms: readonly string[], statistics: TermStatistics): WeightedQuery {
  const distinct = [...new Set(terms)];
  const weights = distinct.map((term) => termWeight(statistics.documentFrequency.get(term) ?? 0, statistics.chunks));
  return { terms: distinct, weights, totalWeight: weights.reduce((sum, weight) => sum + weight, 0) };
}

/** How much one contained term counts, 0.6..1, from its frequency in the chunk and the chunk's length in terms. */
export function termValue(frequency: number, length: number): number {
  const norm = K1 * (1 - B + (B * Math.min(length, REFERENCE_LENGTH)) / REFERENCE_LENGTH);
  return PRESENCE + (1 - PRESENCE) * (frequency / (frequency + norm));
}

/** The score of a chunk with these term counts at this position (0-based) in its document. */
export function lexicalScoreOf(
  query: WeightedQuery,
  chunk: { readonly counts: ReadonlyMap<string, number>; readonly length: number },
  position: number,
): number {
  if (query.totalWeight <= 0) return 0;
  let sum = 0;
  for (let i = 0; i < query.terms.length; i++) {
    const frequency = chunk.counts.get(query.terms[i]);
    if (frequency) sum += query.weights[i] * termValue(frequency, chunk.length);
  }
  return scoreOfSum(sum, query.totalWeight, position);
}

/**
 * The score of a chunk at `position` whose contained terms add up to `sum` (each its weight times its `termValue`,
 * added in the query's order of terms, so that every path gives the same float).
 */
export function scoreOfSum(sum: number, totalWeight: number, position: number): number {
  const share = sum / totalWeight;
  // The opening of a document most often says what it is about: its first chunk closes the gap to 1 by as much
  // again as the share, the second by half that, and so on. 0 stays 0 and 1 stays 1.
  const opening = 1 / (1 + Math.max(0, position));
  const score = share * (1 + opening * (1 - share));
  return Math.round(score * SCORE_DECIMALS) / SCORE_DECIMALS;
}

/** The score of a chunk's text (analyzed here, as far as the query needs). */
export function lexicalScore(query: WeightedQuery, text: string, position: number): number {
  return lexicalScoreOf(query, termCountsOf(text, query.terms), position);
}
