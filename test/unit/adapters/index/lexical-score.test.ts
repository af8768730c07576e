import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { analyze, analyzeChunk, termCountsOf } from '#adapters/index/lexical-analyzer';
import { lexicalScore, lexicalScoreOf, termWeight, weightedQuery } from '#adapters/index/lexical-score';
import type { DatasetRef } from '#core/knowledge/document';
import { chunksOf } from '../../../helpers/chunks';

const scope: DatasetRef = { agentId: 'agent-1', environment: 'development', knowledgeBaseId: 'kb-1' };

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lexical-score-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Stems of stop words that are not stop words themselves ("doe", "becaus", "themselv"). */
const STEMMED_STOP_WORDS = new Set([
  'doe',
  'becaus',
  'themselv',
  'ourselv',
  'yourselv',
  'dure',
  'befor',
  'abov',
  'onc',
  'whi',
  'ani',
  'onli',
  'veri',
]);

const SAMPLES = [
  'Managing the configuration files of the running services, easily and quickly.',
  'The routers reset themselves when you hold the power button for five seconds.',
  'Café naïve ÉCOLE straße: folding of Latin letters; 3rd-party win32 uint32 s390x v2 builds.',
  'because before above during once only very any why does would could ourselves',
  `${'x'.repeat(39)} ${'y'.repeat(40)} short tokens a b c 1 22 333`,
  "Don't stop: it's the users' choice; foo_bar foo-bar foo.bar 3.14",
];

describe('the analyzer', () => {
  test("gives LanceDB's terms (stemmed, folded, stop words out) for ordinary text", async () => {
    const index = await LanceKnowledgeIndex.open(dir);
    const doc = { ...scope, documentId: 'doc' };
    await index.replaceDocument(doc, chunksOf(doc, ['hello']));
    const connection = await lancedb.connect(dir);
    const table = await connection.openTable(index.tableNameOf(scope));
    for (const text of SAMPLES) {
      const engine = (await table.tokenize(text, { column: 'text' })).map((token) => token.text);
      // LanceDB drops stop words after stemming only ("does" stays as "doe"): the analyzer drops them as written.
      const kept = engine.filter((term) => !STEMMED_STOP_WORDS.has(term));
      expect(analyze(text)).toEqual(kept);
    }
    table.close();
    connection.close();
    await index.close();
  });

  test('counts the terms of a query in one pass as analyze would, and the length with stop words left out', () => {
    for (const text of SAMPLES) {
      const terms = analyze(text);
      const query = [...new Set(terms)].filter((_, i) => i % 2 === 0);
      const { counts, length } = termCountsOf(text, query);
      for (const term of query) expect(counts.get(term) ?? 0).toBe(terms.filter((t) => t === term).length);
      expect(length).toBe(analyzeChunk(text).length);
      expect(length).toBeGreaterThanOrEqual(terms.length);
    }
    expect(termCountsOf('Hold the power button. Holding it resets', ['hold', 'button'])).toEqual({
      counts: new Map([
        ['hold', 2],
        ['button', 1],
      ]),
      length: 5,
    });
  });
});

describe('the lexical score', () => {
  const oneChunk = { chunks: 1, documentFrequency: new Map<string, number>() };

  test('is 0 for a chunk with none of the terms, at least 0.6 with all of them, at most 1', () => {
    const query = weightedQuery(analyze('reset the router button'), oneChunk);
    expect(lexicalScore(query, 'Coolant flows through the turbine.', 0)).toBe(0);
    const long = `Reset the router with its button. ${'Other words fill this chunk to its end. '.repeat(40)}`;
    expect(lexicalScore(query, long, 9)).toBeGreaterThanOrEqual(0.6);
    expect(lexicalScore(query, 'reset router button reset router button', 0)).toBeLessThanOrEqual(1);
    expect(lexicalScore(weightedQuery([], oneChunk), 'anything', 0)).toBe(0);
  });

  test('grows with the share of the weight a chunk holds, with repetition, and at the opening of a document', () => {
    const query = weightedQuery(['zorblax', 'valv'], { chunks: 1000, documentFrequency: new Map([['valv', 400]]) });
    const rare = lexicalScoreOf(query, { counts: new Map([['zorblax', 1]]), length: 50 }, 3);
    const common = lexicalScoreOf(query, { counts: new Map([['valv', 1]]), length: 50 }, 3);
    expect(rare).toBeGreaterThan(common);
    const twice = lexicalScoreOf(query, { counts: new Map([['zorblax', 2]]), length: 50 }, 3);
    expect(twice).toBeGreaterThan(rare);
    expect(lexicalScoreOf(query, { counts: new Map([['zorblax', 1]]), length: 50 }, 0)).toBeGreaterThan(rare);
  });

  test('weighs a term by a smoothed idf that barely moves in a small knowledge base', () => {
    expect(termWeight(1, 1) / termWeight(0, 1)).toBeGreaterThan(0.95);
    expect(termWeight(10, 100_000)).toBeGreaterThan(2 * termWeight(30_000, 100_000));
  });
});
