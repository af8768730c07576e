/**
 * Retrieval quality on a real corpus (issue 4, "Tests and quality"): pages of this machine's man pages (or its other
 * text files, see corpus.ts), one document per page, in a LanceKnowledgeIndex; each query is a page's one-line
 * description, removed from the indexed text, so the page must be found by the rest of what it says. recall@5 (the
 * page among the documents of the top 5 chunks) and nDCG@10 of the local index against plain BM25 over the same
 * chunks, on this corpus and on the corpora of the other kinds the machine has (issue 14, goal 2), and tenant
 * isolation with the same corpus indexed in two other datasets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import type { DatasetRef } from '#core/knowledge/document';
import type { IndexFilter, IndexHit } from '#ports/processing';
import {
  type Corpus,
  type CorpusQuery,
  type CorpusSource,
  corpusQueries,
  loadCorpus,
  refreshIndexFully,
} from './corpus';
import {
  chunksOf,
  compareRankings,
  describeFigures,
  type IndexedCorpus,
  indexCorpus,
  RECALL_AT as K,
  QUALITY_CORPUS,
  QUALITY_QUERIES,
} from './quality-figures';

/**
 * recall@5 the local index must reach, per source, a little under what was measured on these machines with the
 * description removed from the text (man pages 0.87–0.90 over 400 pages; npm READMEs 0.87; /usr/share/doc 0.72).
 */
const FLOOR: Record<CorpusSource, number> = { man: 0.8, npm: 0.8, doc: 0.65 };
/** How far above plain BM25 the local index ranks (issue 14: at least 0.03 on both figures). */
const GAIN = 0.03;
/** The other datasets hold the same pages in documents of this many pages each: fewer writes, the same chunks. */
const PAGES_PER_BUNDLE = 25;

const dataset: DatasetRef = { agentId: 'agent-quality', environment: 'development', knowledgeBaseId: 'kb-man' };
/** Same agent, another knowledge base; and another agent with the same knowledge base id. */
const others: DatasetRef[] = [
  { ...dataset, knowledgeBaseId: 'kb-man-copy' },
  { ...dataset, agentId: 'agent-quality-other' },
];

let directory: string;
let index: LanceKnowledgeIndex;
let corpus: Corpus;
let queries: CorpusQuery[];
let main: IndexedCorpus;
/** Corpora of the other sources this machine has (npm READMEs always, once `npm ci` ran), each in a dataset of its own. */
const otherCorpora: IndexedCorpus[] = [];
/**
 * A corpus of another kind ranks the same as plain BM25 or better: "the same" is within 0.02 (3 of 150 queries; the
 * standard error of a recall near 0.75 over 150 queries is 0.035).
 */
const SAME = 0.02;

const search = (scope: DatasetRef, text: string, filters: IndexFilter[] = []) =>
  index.query({ scope, text, filters, limit: K });

/** The page of a hit: the custom metadata holds it, as documents in the other datasets hold several pages. */
const pageOf = (hit: IndexHit) => hit.chunk.svc_internal_meta1;

beforeAll(async () => {
  corpus = loadCorpus(QUALITY_CORPUS);
  queries = corpusQueries(corpus, QUALITY_QUERIES);
  directory = mkdtempSync(join(tmpdir(), 'retrieval-quality-'));
  // Folding writes into the BM25 index every 200 ms keeps 400 one-document writes at ~10 s (~22 s when the fragments
  // pile up until one refresh at the end).
  index = await LanceKnowledgeIndex.open(directory, { indexRefreshDelayMs: 200 });
  main = await indexCorpus(index, dataset, corpus, 'corpus:main');
  for (const other of others) {
    for (let first = 0; first < corpus.pages.length; first += PAGES_PER_BUNDLE) {
      const ref = { ...other, documentId: `bundle-${first}` };
      await index.replaceDocument(
        ref,
        chunksOf(ref, corpus.pages.slice(first, first + PAGES_PER_BUNDLE), 'corpus:copy'),
      );
    }
  }
  for (const source of (['man', 'doc', 'npm'] as const).filter((source) => source !== corpus.source)) {
    let other: Corpus;
    try {
      other = loadCorpus({ ...QUALITY_CORPUS, sources: [source] });
    } catch {
      continue;
    }
    const entry = await indexCorpus(index, { ...dataset, knowledgeBaseId: `kb-${source}` }, other, null);
    otherCorpora.push(entry);
  }
  await refreshIndexFully(index);
}, 240_000);

afterAll(async () => {
  await index?.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

it(`ranks the page of a description above plain BM25 (recall@${K}, nDCG@10), and above a floor`, async () => {
  const figures = await compareRankings(index, main, queries);
  console.log(describeFigures(main, queries.length, figures));
  expect(queries.length).toBeGreaterThanOrEqual(100);
  expect(figures.local.recall).toBeGreaterThanOrEqual(figures.bm25.recall + GAIN);
  expect(figures.local.ndcg).toBeGreaterThanOrEqual(figures.bm25.ndcg + GAIN);
  expect(figures.local.recall).toBeGreaterThanOrEqual(FLOOR[corpus.source]);
});

it('ranks as well as plain BM25 or better on the corpora of other kinds, so the gain is not tuned to one', async () => {
  expect(otherCorpora.length).toBeGreaterThanOrEqual(1);
  for (const other of otherCorpora) {
    const otherQueries = corpusQueries(other.corpus, QUALITY_QUERIES);
    const figures = await compareRankings(index, other, otherQueries);
    console.log(describeFigures(other, otherQueries.length, figures));
    expect(otherQueries.length).toBeGreaterThanOrEqual(100);
    expect(figures.local.recall).toBeGreaterThanOrEqual(figures.bm25.recall - SAME);
    expect(figures.local.ndcg).toBeGreaterThanOrEqual(figures.bm25.ndcg - SAME);
    expect(figures.local.recall).toBeGreaterThanOrEqual(FLOOR[other.corpus.source]);
  }
});

it('never returns a chunk of another dataset holding the same pages, whatever the filter', async () => {
  const filters: IndexFilter[][] = [
    [],
    [{ key: 'label1', operator: 'notEquals', value: 'corpus:main' }],
    [{ key: 'label1', operator: 'equals', value: 'corpus:copy' }],
    [{ key: 'label1', operator: 'greaterThan', value: '' }],
  ];
  const sameScope = (hit: IndexHit, scope: DatasetRef) =>
    hit.chunk.agentId === scope.agentId &&
    hit.chunk.knowledgeBaseId === scope.knowledgeBaseId &&
    hit.chunk.environment === scope.environment;
  let returned = 0;
  let leaked = 0;
  let copiesFound = 0;
  for (const [i, query] of queries.entries()) {
    // Every query unfiltered, and a quarter of them under each filter that would match the other datasets' chunks.
    for (const filter of i % 4 === 0 ? filters : [filters[0]]) {
      const hits = await search(dataset, query.text, filter);
      returned += hits.length;
      leaked += hits.filter((hit) => !sameScope(hit, dataset)).length;
    }
    for (const other of others) {
      const hits = await search(other, query.text);
      expect(hits.every((hit) => sameScope(hit, other))).toBe(true);
      if (hits.some((hit) => pageOf(hit) === query.pageId)) copiesFound++;
    }
  }
  expect(leaked).toBe(0);
  expect(returned).toBeGreaterThan(queries.length * (K - 1));
  // The copies are found in their own datasets as well as the original is in its: isolation is not emptiness.
  expect(copiesFound).toBeGreaterThan(others.length * queries.length * FLOOR[corpus.source]);
});
