/**
 * `npm run bench -- quality`: the ranking of the local index against plain BM25 (issue 14, goal 2), as the retrieval
 * quality test measures it (test/quality/quality-figures.ts): 400 pages of each corpus this machine has (man pages,
 * /usr/share/doc files, the READMEs of the installed npm packages), one document per page, each page's description
 * removed from its text and used as its query; recall@5 and nDCG@10 of the local index, and of plain Okapi BM25 over
 * the same chunks in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { type CorpusSource, corpusQueries, loadCorpus, refreshIndexFully } from '../test/quality/corpus';
import {
  compareRankings,
  indexCorpus,
  QUALITY_CORPUS,
  QUALITY_QUERIES,
  RECALL_AT,
} from '../test/quality/quality-figures';
import { type Benchmark, type BenchRow, type BenchSection, loadAverageAfter } from './report';

const SOURCES: readonly CorpusSource[] = ['man', 'doc', 'npm'];
const NAMES: Record<CorpusSource, string> = {
  man: 'man pages',
  doc: '/usr/share/doc files',
  npm: 'npm package READMEs',
};

async function run(): Promise<BenchSection> {
  const notes = [
    `400 pages per corpus (at most 6,000 characters, 3 per family), one document per page, ${QUALITY_QUERIES} queries: each a page's one-line description, removed from its text. Plain BM25: Okapi (k1 1.2, b 0.75, Lucene's idf), lowercase alphanumeric tokens, no stemming or stop words, over the same chunks. Load average before: ${loadavg()[0].toFixed(2)}.`,
  ];
  const rows: BenchRow[] = [];
  const directory = mkdtempSync(join(tmpdir(), 'bench-quality-'));
  const index = await LanceKnowledgeIndex.open(directory, { indexRefreshDelayMs: 200 });
  try {
    for (const [i, source] of SOURCES.entries()) {
      let corpus: ReturnType<typeof loadCorpus>;
      try {
        corpus = loadCorpus({ ...QUALITY_CORPUS, sources: [source] });
      } catch (error) {
        notes.push(`${NAMES[source]}: not measured (${(error as Error).message}).`);
        continue;
      }
      const scope = { agentId: 'agent-quality', environment: 'development' as const, knowledgeBaseId: `kb-${source}` };
      const indexed = await indexCorpus(index, scope, corpus, null);
      await refreshIndexFully(index);
      const queries = corpusQueries(corpus, QUALITY_QUERIES);
      const figures = await compareRankings(index, indexed, queries);
      const reading =
        i === 0
          ? 'goal: at least plain BM25 + 0.03 (issue 14)'
          : 'goal: the same as plain BM25 or better (another kind of corpus)';
      const what = `${NAMES[source]}, ${corpus.pages.length} pages, ${indexed.chunks} chunks`;
      rows.push(
        {
          name: `recall@${RECALL_AT}, ${what}`,
          value: figures.local.recall,
          unit: '',
          baseline: figures.bm25.recall,
          baselineName: 'plain BM25, same chunks',
          reading: `${reading}; difference ${(figures.local.recall - figures.bm25.recall).toFixed(3)}`,
        },
        {
          name: `nDCG@10, ${what}`,
          value: figures.local.ndcg,
          unit: '',
          baseline: figures.bm25.ndcg,
          baselineName: 'plain BM25, same chunks',
          reading: `${reading}; difference ${(figures.local.ndcg - figures.bm25.ndcg).toFixed(3)}`,
        },
      );
    }
    notes.push(loadAverageAfter());
    return { title: 'Retrieval quality (local index, lexical, against plain BM25)', notes, rows };
  } finally {
    await index.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

export const qualityBenchmark: Benchmark = { id: 'quality', run };
