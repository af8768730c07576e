/**
 * The ranking figures of the retrieval quality test and of `npm run bench -- quality` (issue 14, goal 2): a corpus
 * indexed one document per page in a dataset of a LanceKnowledgeIndex and, beside it, in plain BM25 over the same
 * chunks; each description query ranked both ways; recall@5 and nDCG@10 of each.
 */
import type { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import type { DatasetRef } from '#core/knowledge/document';
import { chunkId, chunkText } from '#core/processing/chunking';
import type { DocumentRef, IndexedChunk } from '#ports/processing';
import { Bm25, type Corpus, type CorpusOptions, type CorpusPage, type CorpusQuery } from './corpus';

/**
 * The corpus of the figures: 400 pages of at most 6,000 characters (3 per family) of one source, each page's
 * description removed from its text; a source with fewer than 200 eligible pages is not used.
 */
export const QUALITY_CORPUS: CorpusOptions = {
  pages: 400,
  maxPageChars: 6000,
  perFamily: 3,
  withoutDescription: true,
  minimumPages: 200,
};
/** Description queries asked of each corpus. */
export const QUALITY_QUERIES = 150;

/** recall@RECALL_AT: the page among the documents of the top chunks. */
export const RECALL_AT = 5;
const NDCG_AT = 10;

/** One document's chunks holding `pages` (their page id in svc_internal_meta1), positions counted across them. */
export function chunksOf(ref: DocumentRef, pages: readonly CorpusPage[], label1: string | null): IndexedChunk[] {
  let position = 0;
  return pages.flatMap((page) =>
    chunkText(page.text).map((text) => ({
      ...ref,
      chunkId: chunkId(ref.documentId, position, text),
      s3Key: `${ref.agentId}/${ref.knowledgeBaseId}/${page.id}`,
      position: position++,
      text,
      label1,
      label2: null,
      svc_internal_meta1: page.id,
      svc_internal_meta2: null,
      svc_internal_meta3: null,
      svc_internal_meta4: null,
    })),
  );
}

/** A corpus indexed in `scope` (one document per page, id = page id) and in plain BM25. */
export interface IndexedCorpus {
  readonly corpus: Corpus;
  readonly scope: DatasetRef;
  readonly baseline: Bm25;
  /** Page of each baseline key. */
  readonly baselinePage: string[];
  readonly chunks: number;
}

export async function indexCorpus(
  index: LanceKnowledgeIndex,
  scope: DatasetRef,
  corpus: Corpus,
  label1: string | null,
): Promise<IndexedCorpus> {
  const baseline = new Bm25();
  const baselinePage: string[] = [];
  let count = 0;
  for (const page of corpus.pages) {
    const ref = { ...scope, documentId: page.id };
    const chunks = chunksOf(ref, [page], label1);
    for (const chunk of chunks) baselinePage[baseline.add(chunk.text)] = page.id;
    count += chunks.length;
    await index.replaceDocument(ref, chunks);
  }
  return { corpus, scope, baseline, baselinePage, chunks: count };
}

export interface RankingFigures {
  readonly recall: number;
  readonly ndcg: number;
}

/**
 * recall@5 counts a query whose page is among the documents of the top 5 chunks; nDCG@10 reads the top 10 chunks as a
 * list of distinct pages, in order of first appearance, with the one right page (1 / log2(1 + its rank), 0 when
 * absent; the ideal is rank 1).
 */
export function rankingFigures(rankings: readonly (readonly string[])[], wanted: readonly string[]): RankingFigures {
  let recall = 0;
  let ndcg = 0;
  for (const [i, pages] of rankings.entries()) {
    if (pages.slice(0, RECALL_AT).includes(wanted[i])) recall++;
    const rank = [...new Set(pages.slice(0, NDCG_AT))].indexOf(wanted[i]);
    if (rank >= 0) ndcg += 1 / Math.log2(rank + 2);
  }
  return { recall: recall / rankings.length, ndcg: ndcg / rankings.length };
}

/** The local index's and plain BM25's figures for `queries` over an indexed corpus. */
export async function compareRankings(
  index: LanceKnowledgeIndex,
  indexed: IndexedCorpus,
  queries: readonly CorpusQuery[],
): Promise<{ local: RankingFigures; bm25: RankingFigures }> {
  const local: string[][] = [];
  const plain: string[][] = [];
  for (const query of queries) {
    const hits = await index.query({ scope: indexed.scope, text: query.text, filters: [], limit: NDCG_AT });
    local.push(hits.map((hit) => hit.chunk.documentId));
    plain.push(indexed.baseline.search(query.text, NDCG_AT).map((hit) => indexed.baselinePage[hit.key]));
  }
  const wanted = queries.map((query) => query.pageId);
  return { local: rankingFigures(local, wanted), bm25: rankingFigures(plain, wanted) };
}

export function describeFigures(
  indexed: IndexedCorpus,
  queries: number,
  figures: { local: RankingFigures; bm25: RankingFigures },
): string {
  const { corpus } = indexed;
  return (
    `retrieval quality (${corpus.source}: ${corpus.pages.length} pages, ${indexed.chunks} chunks, ${queries} description queries): ` +
    `recall@${RECALL_AT} local index ${figures.local.recall.toFixed(3)}, plain BM25 ${figures.bm25.recall.toFixed(3)}; ` +
    `nDCG@${NDCG_AT} local index ${figures.local.ndcg.toFixed(3)}, plain BM25 ${figures.bm25.ndcg.toFixed(3)}`
  );
}
