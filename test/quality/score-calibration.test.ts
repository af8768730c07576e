/**
 * The lexical score is calibrated (issue 14, goal 1; docs/retrieval.md, "Scores"): the same query and chunk score
 * within 0.1 of each other in a knowledge base of that one chunk and in one of 100k chunks (this machine's man pages
 * cut by chunkText, then chunks recombined from their lines, as `npm run bench` builds them); a chunk holding every
 * term of the query scores at least 0.6, and one holding none is not returned (score 0).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { analyze } from '#adapters/index/lexical-analyzer';
import { lexicalScore, weightedQuery } from '#adapters/index/lexical-score';
import type { DatasetRef } from '#core/knowledge/document';
import { chunkId, chunkText } from '#core/processing/chunking';
import type { DocumentRef, IndexedChunk } from '#ports/processing';
import { seededRandom } from '../../bench/ingestion-corpus';
import { corpusQueries, loadCorpus, recombinedText, refreshIndexFully } from './corpus';
import { QUALITY_CORPUS } from './quality-figures';

const LARGE = 100_000;
const CHUNKS_PER_DOCUMENT = 1000;
const PAIRS = 40;
const TOLERANCE = 0.1;

const small = (name: string): DatasetRef => ({
  agentId: 'agent-cal',
  environment: 'development',
  knowledgeBaseId: name,
});
const large: DatasetRef = { agentId: 'agent-cal', environment: 'production', knowledgeBaseId: 'kb-large' };

let directory: string;
let index: LanceKnowledgeIndex;
/** Query and text of each pair: a man page's description and the first chunk of the page (without the description). */
const pairs: { query: string; text: string }[] = [];

function chunk(ref: DocumentRef, position: number, text: string): IndexedChunk {
  return {
    ...ref,
    chunkId: chunkId(ref.documentId, position, text),
    s3Key: `${ref.agentId}/${ref.knowledgeBaseId}/${ref.documentId}`,
    position,
    text,
    label1: ref.documentId,
    label2: null,
    svc_internal_meta1: null,
    svc_internal_meta2: null,
    svc_internal_meta3: null,
    svc_internal_meta4: null,
  };
}

const EXAMPLES = [
  { query: 'how long to hold the power button?', text: 'Hold the power button for five seconds.' },
  { query: 'how long do I hold the power button to reset the router', text: 'Hold the power button for five seconds.' },
  { query: 'zorblax valve', text: 'The zorblax valve regulates the flow of coolant to the turbine.' },
];

/**
 * Score of the chunk of document `documentId` in `scope` for `query`, 0 when not returned: the chunk carries its
 * document id as label1, and a filter on it picks it out whatever its rank (a score does not depend on filters).
 */
async function scoreIn(scope: DatasetRef, documentId: string, query: string): Promise<number> {
  const filters = [{ key: 'label1' as const, operator: 'equals' as const, value: documentId }];
  const hits = await index.query({ scope, text: query, filters, limit: 10 });
  return hits.find((hit) => hit.chunk.documentId === documentId)?.score ?? 0;
}

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'score-calibration-'));
  index = await LanceKnowledgeIndex.open(directory, { indexRefreshDelayMs: 60_000 });
  const corpus = loadCorpus(QUALITY_CORPUS);
  for (const query of corpusQueries(corpus, PAIRS)) {
    const page = corpus.pages.find((candidate) => candidate.id === query.pageId);
    if (page) pairs.push({ query: query.text, text: chunkText(page.text)[0] });
  }
  pairs.push(...EXAMPLES);
  // The large knowledge base: the pairs' chunks, each a document of its own, among 100k others.
  const texts: string[] = [];
  const all = loadCorpus({ pages: Number.MAX_SAFE_INTEGER, maxPageChars: 30_000, perFamily: 20, minimumPages: 100 });
  for (const page of all.pages) for (const text of chunkText(page.text)) if (texts.length < LARGE) texts.push(text);
  const lines = texts.flatMap((text) => text.split('\n').filter((line) => line.length >= 20));
  const random = seededRandom(14);
  while (texts.length < LARGE - pairs.length) texts.push(recombinedText(lines, random));
  texts.length = LARGE - pairs.length;
  for (let first = 0; first < texts.length; first += CHUNKS_PER_DOCUMENT) {
    const ref = { ...large, documentId: `bulk-${first}` };
    await index.replaceDocument(
      ref,
      texts.slice(first, first + CHUNKS_PER_DOCUMENT).map((text, i) => chunk(ref, i, text)),
    );
  }
  for (const [i, pair] of pairs.entries()) {
    const ref = { ...large, documentId: `pair-${i}` };
    await index.replaceDocument(ref, [chunk(ref, 0, pair.text)]);
    const alone = { ...small(`kb-pair-${i}`), documentId: `pair-${i}` };
    await index.replaceDocument(alone, [chunk(alone, 0, pair.text)]);
  }
  await refreshIndexFully(index);
}, 300_000);

afterAll(async () => {
  await index?.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

it(`scores a query and chunk within ${TOLERANCE} in a knowledge base of that chunk and in one of ${LARGE} chunks`, async () => {
  const differences: number[] = [];
  const lines: string[] = [];
  for (const [i, pair] of pairs.entries()) {
    const alone = await scoreIn(small(`kb-pair-${i}`), `pair-${i}`, pair.query);
    const among = await scoreIn(large, `pair-${i}`, pair.query);
    // A page's first chunk may share no term with its description: a 0 in both is calibrated, but says little.
    if (alone === 0 && among === 0) continue;
    differences.push(Math.abs(alone - among));
    if (i >= pairs.length - EXAMPLES.length)
      lines.push(`"${pair.query}": ${alone.toFixed(3)} alone, ${among.toFixed(3)} among ${LARGE}`);
  }
  expect(differences.length).toBeGreaterThanOrEqual(20);
  const sorted = [...differences].sort((a, b) => a - b);
  console.log(
    `score calibration (${differences.length} query/chunk pairs with a term in common, 1 chunk against ${LARGE}): difference median ${sorted[sorted.length >> 1].toFixed(3)}, ` +
      `max ${sorted[sorted.length - 1].toFixed(3)}\n${lines.join('\n')}`,
  );
  expect(sorted[sorted.length - 1]).toBeLessThanOrEqual(TOLERANCE);
});

it('scores a chunk holding every term of the query at least 0.6, and one holding none 0, in both', async () => {
  const full = 'Press and hold the reset button on the router, then release the button.';
  const none = 'Coolant flows through the turbine housing.';
  const query = 'how do I reset the router with its button';
  for (const [scope, name] of [
    [small('kb-terms'), 'small'],
    [large, 'large'],
  ] as const) {
    const refFull = { ...scope, documentId: `full-${name}` };
    const refNone = { ...scope, documentId: `none-${name}` };
    // A later chunk of a long document: the least the score can be (no opening lift).
    await index.replaceDocument(refFull, [
      chunk(refFull, 7, `${full} ${'Unrelated words fill the chunk. '.repeat(25)}`),
    ]);
    await index.replaceDocument(refNone, [chunk(refNone, 0, none)]);
    const hits = await index.query({ scope, text: query, filters: [], limit: 100 });
    expect(hits.find((hit) => hit.chunk.documentId === refFull.documentId)?.score).toBeGreaterThanOrEqual(0.6);
    expect(hits.some((hit) => hit.chunk.documentId === refNone.documentId)).toBe(false);
  }
  const weighted = weightedQuery(analyze(query), { chunks: 1, documentFrequency: new Map() });
  expect(lexicalScore(weighted, none, 0)).toBe(0);
  expect(lexicalScore(weighted, full, 0)).toBeLessThanOrEqual(1);
});
