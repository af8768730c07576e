/**
 * The local index's own lexical index: the store on disk (chunks, terms, statistics, generations) and the postings in
 * memory, whose answers must be exactly those of scoring every chunk with `lexicalScore`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { Field, Int32, Schema, Utf8 } from 'apache-arrow';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { filterClause } from '#adapters/index/lancedb-sql';
import { analyze } from '#adapters/index/lexical-analyzer';
import { LexicalPostings, passes } from '#adapters/index/lexical-postings';
import { lexicalScore, weightedQuery } from '#adapters/index/lexical-score';
import {
  type ChunkTerms,
  forEachTermPair,
  LEXICAL_STORE_FILE,
  LexicalStore,
  lexicalChunksOf,
} from '#adapters/index/lexical-store';
import type { DatasetRef } from '#core/knowledge/document';
import type { IndexedChunk, IndexFilter } from '#ports/processing';
import { chunksOf, NO_METADATA } from '../../../helpers/chunks';

const scope: DatasetRef = { agentId: 'agent-1', environment: 'development', knowledgeBaseId: 'kb-1' };

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lexical-index-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const lexical = (documentId: string, texts: string[], labels: { label1?: string; label2?: string } = {}) =>
  lexicalChunksOf(chunksOf({ ...scope, documentId }, texts, labels));

describe('the lexical store', () => {
  test('applies the difference of a replacement to the statistics: a replay changes nothing, a deletion removes', () => {
    const store = new LexicalStore(join(dir, LEXICAL_STORE_FILE));
    const first = lexical('doc-1', ['cat dog', 'cat']);
    store.setDocument('d', 'doc-1', first);
    store.setDocument('d', 'doc-2', lexical('doc-2', ['cat']));
    // The same replacement again, as a redelivered message makes it.
    store.setDocument('d', 'doc-1', first);
    expect(store.statistics('d', ['cat', 'dog', 'fish'])).toEqual({
      chunks: 3,
      documentFrequency: new Map([
        ['cat', 3],
        ['dog', 1],
      ]),
    });
    store.setDocument('d', 'doc-1', lexical('doc-1', ['fish']));
    expect(store.statistics('d', ['cat', 'dog', 'fish'])).toEqual({
      chunks: 2,
      documentFrequency: new Map([
        ['cat', 1],
        ['fish', 1],
      ]),
    });
    store.setDocument('d', 'doc-1', null);
    store.setDocument('d', 'doc-1', null);
    expect(store.statistics('d', ['cat', 'dog', 'fish'])).toEqual({
      chunks: 1,
      documentFrequency: new Map([['cat', 1]]),
    });
    expect(store.storedChunk('d', 'doc-2', 0)).toMatchObject({ text: 'cat', position: 0, label1: null });
    expect(store.storedChunk('d', 'doc-1', 0)).toBeUndefined();
    // Another dataset's statistics are its own.
    expect(store.statistics('other', ['cat'])).toEqual({ chunks: 0, documentFrequency: new Map() });
    store.close();
  });

  test('gives each write the next generation, and a reader exactly the documents written since its own', () => {
    const store = new LexicalStore(join(dir, LEXICAL_STORE_FILE));
    expect(store.generation('d')).toBe(-1);
    store.ensureDataset('d');
    expect(store.generation('d')).toBe(0);
    store.setDocument('d', 'doc-1', lexical('doc-1', ['cat dog', 'cat']));
    store.setDocument('d', 'doc-2', lexical('doc-2', ['fish']));
    const all = store.changesSince('d', -1, 0);
    expect(all.generation).toBe(2);
    expect([...all.documents.keys()].sort()).toEqual(['doc-1', 'doc-2']);
    const ids = new Map(all.terms.map(({ term, id }) => [id, term]));
    const termsOf = (chunk: ChunkTerms) => {
      const pairs: string[] = [];
      forEachTermPair(chunk.terms, (id, count) => pairs.push(`${ids.get(id)} ${count}`));
      return pairs;
    };
    expect(all.documents.get('doc-1')?.map(termsOf)).toEqual([['cat 1', 'dog 1'], ['cat 1']]);
    expect(store.changesSince('d', 2, 0).documents.size).toBe(0);
    store.setDocument('d', 'doc-1', null);
    store.setMetadata('d', 'doc-2', { ...NO_METADATA, label1: 'red', svc_internal_meta1: 'm' });
    const since = store.changesSince('d', 2, 0);
    expect(since.generation).toBe(4);
    expect(since.documents.get('doc-1')).toEqual([]);
    expect(since.documents.get('doc-2')?.[0]).toMatchObject({ label1: 'red' });
    expect(termsOf(since.documents.get('doc-2')?.[0] as ChunkTerms)).toEqual(['fish 1']);
    expect(store.storedChunk('d', 'doc-2', 0)).toMatchObject({ label1: 'red', svc_internal_meta1: 'm' });
    // Metadata of a document the store does not hold changes nothing.
    store.setMetadata('d', 'missing', { ...NO_METADATA, label1: 'x' });
    expect(store.generation('d')).toBe(4);
    store.close();
  });
});

// ---------------------------------------------------------------------------------------------------------------

const WORDS = [
  'power',
  'button',
  'hold',
  'reset',
  'router',
  'valve',
  'pressure',
  'seconds',
  'light',
  'cable',
  'network',
  'password',
  'firmware',
  'update',
  'restart',
  'device',
  'signal',
  'the',
  'for',
  'zorblax',
];

/** A seeded generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 48271) % 2147483647;
    return state / 2147483647;
  };
}

interface Document {
  readonly id: string;
  readonly chunks: IndexedChunk[];
}

function randomDocument(next: () => number, id: string): Document {
  const pick = () => WORDS[Math.floor(next() ** 2 * WORDS.length)];
  const texts = Array.from({ length: 1 + Math.floor(next() * 6) }, () =>
    Array.from({ length: 1 + Math.floor(next() * 160) }, pick).join(' '),
  );
  const labels = ['red', 'green', 'blue', undefined];
  const label1 = labels[Math.floor(next() * labels.length)];
  return { id, chunks: chunksOf({ ...scope, documentId: id }, texts, label1 ? { label1 } : {}) };
}

/** The best `limit` by scoring every chunk with lexicalScore: what the postings must answer. */
function exactTop(
  documents: ReadonlyMap<string, Document>,
  store: LexicalStore,
  text: string,
  limit: number,
  filters: readonly IndexFilter[],
) {
  const terms = analyze(text);
  const weighted = weightedQuery(terms, store.statistics('d', terms));
  const scored = [...documents.values()]
    .flatMap((document) => document.chunks)
    .filter((chunk) => passes(filters, chunk.label1, chunk.label2))
    .map((chunk) => ({
      document: chunk.documentId,
      position: chunk.position,
      score: lexicalScore(weighted, chunk.text, chunk.position),
    }))
    .filter((hit) => hit.score > 0)
    .sort(
      (a, b) =>
        b.score - a.score ||
        (a.document < b.document ? -1 : a.document > b.document ? 1 : 0) ||
        a.position - b.position,
    );
  return { expected: scored.slice(0, limit), weighted };
}

describe('the postings', () => {
  test('answer exactly what scoring every chunk answers, through replacements, deletions, labels and compaction', () => {
    const next = random(11);
    const writer = new LexicalStore(join(dir, LEXICAL_STORE_FILE));
    // Another handle on the same file, as the API process reads what the worker process writes.
    const reader = new LexicalStore(join(dir, LEXICAL_STORE_FILE));
    const postings = new LexicalPostings(reader, 'd');
    const documents = new Map<string, Document>();
    const write = (document: Document) => {
      documents.set(document.id, document);
      writer.setDocument('d', document.id, lexicalChunksOf(document.chunks));
    };
    const queries = Array.from({ length: 25 }, () =>
      Array.from({ length: 1 + Math.floor(next() * 5) }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' '),
    );
    const filterSets: IndexFilter[][] = [
      [],
      [{ key: 'label1', operator: 'equals', value: 'red' }],
      [{ key: 'label1', operator: 'notEquals', value: 'red' }],
      [{ key: 'label1', operator: 'greaterThan', value: 'blue' }],
    ];
    let compared = 0;
    const check = () => {
      postings.sync();
      expect(postings.chunkCount).toBe([...documents.values()].reduce((sum, d) => sum + d.chunks.length, 0));
      for (const text of queries) {
        for (const filters of filterSets) {
          for (const limit of [1, 10]) {
            const { expected, weighted } = exactTop(documents, reader, text, limit, filters);
            expect(postings.top(weighted, limit, filters)).toEqual(expected);
            compared += expected.length;
          }
        }
      }
    };
    for (let i = 0; i < 400; i++) write(randomDocument(next, `doc-${i}`));
    check();
    // Replace every document twice: more dead slots than live ones, so the postings compact.
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 400; i += 1) write(randomDocument(next, `doc-${i}`));
      check();
    }
    for (let i = 0; i < 400; i += 3) {
      documents.delete(`doc-${i}`);
      writer.setDocument('d', `doc-${i}`, null);
    }
    for (let i = 1; i < 400; i += 7) {
      const document = documents.get(`doc-${i}`);
      if (!document) continue;
      const chunks = document.chunks.map((chunk) => ({ ...chunk, label1: 'red' }));
      documents.set(document.id, { id: document.id, chunks });
      writer.setMetadata('d', document.id, { ...NO_METADATA, label1: 'red' });
    }
    check();
    expect(compared).toBeGreaterThan(2000);
    writer.close();
    reader.close();
  });
});

describe('label filters in memory', () => {
  test('pass exactly the rows the SQL of the same filters selects in LanceDB', async () => {
    const values = [null, '', 'apple', 'banana', 'Banana', 'ápple', '\uff00', '😀', 'z'];
    const rows = values.flatMap((label1, i) =>
      values.map((label2, j) => ({ id: i * values.length + j, label1, label2 })),
    );
    const connection = await lancedb.connect(dir);
    const schema = new Schema([
      new Field('id', new Int32(), false),
      new Field('label1', new Utf8(), true),
      new Field('label2', new Utf8(), true),
    ]);
    const table = await connection.createTable('labels', rows, { schema });
    for (const operator of ['equals', 'notEquals', 'greaterThan', 'lessThan'] as const) {
      for (const value of ['', 'apple', 'banana', '\uff00', '😀']) {
        for (const key of ['label1', 'label2'] as const) {
          const filter: IndexFilter = { key, operator, value };
          const selected: number[] = (await table.query().where(filterClause(filter)).select(['id']).toArray())
            .map((row: Record<string, unknown>) => Number(row.id))
            .sort((a: number, b: number) => a - b);
          const passing = rows.filter((row) => passes([filter], row.label1, row.label2)).map((row) => row.id);
          expect({ filter, ids: passing }).toEqual({ filter, ids: selected });
        }
      }
    }
    table.close();
    connection.close();
  });
});

describe('the local index', () => {
  test('writes its lexical index with the chunks, and collects it from the rows of a table an earlier version wrote', async () => {
    const index = await LanceKnowledgeIndex.open(dir);
    const doc = { ...scope, documentId: 'doc' };
    await index.replaceDocument(doc, chunksOf(doc, ['Hold the power button.', 'Release the button.']));
    const other = { ...scope, documentId: 'other' };
    await index.replaceDocument(other, chunksOf(other, ['The valve is open.']));
    await index.deleteDocument(other);
    const expected = {
      chunks: 2,
      documentFrequency: new Map([
        ['button', 2],
        ['hold', 1],
      ]),
    };
    const table = index.tableNameOf(scope);
    const read = () => {
      const store = new LexicalStore(join(dir, LEXICAL_STORE_FILE));
      try {
        return store.statistics(table, ['button', 'hold', 'valv']);
      } finally {
        store.close();
      }
    };
    expect(read()).toEqual(expected);
    const query = { scope, text: 'hold the button', filters: [], limit: 5 };
    const before = await index.query(query);
    expect(before.map((hit) => hit.chunk.text)).toEqual(['Hold the power button.', 'Release the button.']);
    await index.close();
    // A data folder of an earlier version: the same table, no lexical index.
    for (const suffix of ['', '-wal', '-shm']) rmSync(join(dir, LEXICAL_STORE_FILE + suffix), { force: true });
    const reopened = await LanceKnowledgeIndex.open(dir);
    expect(read()).toEqual(expected);
    expect(await reopened.query(query)).toEqual(before);
    await reopened.close();
  });
});
