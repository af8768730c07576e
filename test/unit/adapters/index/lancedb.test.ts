import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { groupCommitStats } from '#adapters/index/lancedb-group-commit';
import { hybridScore, vectorScore } from '#adapters/index/lancedb-scores';
import { buildWhereClause, filterClause } from '#adapters/index/lancedb-sql';
import { schemaFor } from '#adapters/index/lancedb-tables';
import type { DatasetRef } from '#core/knowledge/document';
import type { Environment } from '#core/knowledge/fields';
import type { ChunkMetadata, DocumentRef, Embedder, IndexFilter, IndexQuery } from '#ports/processing';
import { chunksOf, NO_METADATA } from '../../../helpers/chunks';

const AGENT = 'agent-1';
const KB = 'kb-1';
const ENV: Environment = 'development';
const scope = { agentId: AGENT, environment: ENV, knowledgeBaseId: KB };

function ref(documentId: string, dataset: Partial<DatasetRef> = {}): DocumentRef {
  return { ...scope, ...dataset, documentId };
}

function search(text: string, options: Partial<IndexQuery> = {}): IndexQuery {
  return { scope, text, filters: [], limit: 10, ...options };
}

/** Hashed bag of character trigrams: similar spellings get similar vectors, which BM25 cannot match. */
class TrigramEmbedder implements Embedder {
  readonly dimensions = 64;
  calls = 0;
  async embed(texts: readonly string[]): Promise<number[][]> {
    this.calls++;
    return texts.map((text) => {
      const vector = new Array<number>(this.dimensions).fill(0);
      for (const word of text.toLowerCase().split(/\W+/).filter(Boolean)) {
        const padded = ` ${word} `;
        for (let i = 0; i + 3 <= padded.length; i++) {
          vector[
            createHash('md5')
              .update(padded.slice(i, i + 3))
              .digest()[0] % this.dimensions
          ] += 1;
        }
      }
      return vector;
    });
  }
}

const FILLER = [
  'Invoices are issued on the first day of each month and can be downloaded from the billing page.',
  'The mobile app supports offline mode; changes synchronize when the connection returns.',
  'Passwords must contain at least twelve characters, one digit and one symbol.',
  'Support is available by chat from nine to five on business days.',
  'Exports are produced as CSV files and kept for thirty days.',
];

let dir: string;
const opened: LanceKnowledgeIndex[] = [];

async function openIndex(options: Parameters<typeof LanceKnowledgeIndex.open>[1] = {}): Promise<LanceKnowledgeIndex> {
  // A long refresh delay keeps background optimizes out of the tests; the ones that need it refresh explicitly.
  const index = await LanceKnowledgeIndex.open(dir, { indexRefreshDelayMs: 60_000, ...options });
  opened.push(index);
  return index;
}

const ids = (hits: { chunk: { chunkId: string } }[]) => hits.map((hit) => hit.chunk.chunkId).sort();

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lancedb-index-'));
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((index) => index.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('replaceDocument', () => {
  test('replacing twice with the same chunks leaves one set', async () => {
    const index = await openIndex();
    const doc = ref('doc-1');
    const chunks = chunksOf(doc, ['the quarterly report shows growth', 'the annual report is due in march']);
    await index.replaceDocument(doc, chunks);
    await index.replaceDocument(doc, chunks);

    expect(await index.countDocumentChunks(doc)).toBe(2);
    expect(ids(await index.query(search('report')))).toEqual(chunks.map((chunk) => chunk.chunkId).sort());
  });

  test('replacing with fewer chunks removes the leftovers', async () => {
    const index = await openIndex();
    const doc = ref('doc-1');
    await index.replaceDocument(doc, chunksOf(doc, ['alpha report one', 'alpha report two', 'alpha report three']));
    const newer = chunksOf(doc, ['alpha report, revised']);
    await index.replaceDocument(doc, newer);

    expect(await index.countDocumentChunks(doc)).toBe(1);
    const hits = await index.query(search('alpha report'));
    expect(hits.map((hit) => hit.chunk.text)).toEqual(['alpha report, revised']);
    expect(hits[0].chunk).toEqual(newer[0]);
  });

  test('replacing with no chunks removes the document', async () => {
    const index = await openIndex();
    const doc = ref('doc-1');
    await index.replaceDocument(doc, chunksOf(doc, ['some text', 'more text']));
    await index.replaceDocument(doc, []);

    expect(await index.countDocumentChunks(doc)).toBe(0);
  });

  test('refuses a chunk of another document and duplicate chunk ids', async () => {
    const index = await openIndex();
    const doc = ref('doc-1');
    const [chunk] = chunksOf(ref('doc-2'), ['text']);
    await expect(index.replaceDocument(doc, [chunk])).rejects.toThrow(/does not belong/);
    const [own] = chunksOf(doc, ['text']);
    await expect(index.replaceDocument(doc, [own, own])).rejects.toThrow(/Duplicate chunkId/);
    expect(await index.countDocumentChunks(doc)).toBe(0);
  });

  test('concurrent replacements of 20 different documents lose nothing', async () => {
    const first = await openIndex();
    const second = await openIndex(); // another handle on the same directory, as a second process would have
    const docs = Array.from({ length: 20 }, (_, i) => ref(`doc-${i}`));
    await Promise.all(
      docs.map((doc, i) =>
        (i % 2 ? second : first).replaceDocument(
          doc,
          chunksOf(doc, [`shared topic part one of ${doc.documentId}`, `shared topic part two of ${doc.documentId}`]),
        ),
      ),
    );

    for (const doc of docs) expect(await first.countDocumentChunks(doc)).toBe(2);
    expect(await first.query(search('shared topic', { limit: 100 }))).toHaveLength(40);
  });

  test('concurrent replacements of the same new document leave one set (LanceDB alone would keep both)', async () => {
    const first = await openIndex();
    const second = await openIndex();
    const docs = Array.from({ length: 5 }, (_, i) => ref(`doc-${i}`));
    // As a worker batch holding the S3 event and the message of one upload does: the same chunks, at once.
    await Promise.all(
      docs.flatMap((doc) => {
        const chunks = chunksOf(doc, ['concurrent part one', 'concurrent part two', 'concurrent part three']);
        return [
          first.replaceDocument(doc, chunks),
          first.replaceDocument(doc, chunks),
          second.replaceDocument(doc, chunks),
        ];
      }),
    );
    // and a delete and a replacement racing: whichever was called last wins.
    const last = ref('doc-0');
    await Promise.all([first.deleteDocument(last), second.replaceDocument(last, chunksOf(last, ['final words']))]);

    expect(await first.countDocumentChunks(last)).toBe(1);
    for (const doc of docs.slice(1)) expect(await first.countDocumentChunks(doc)).toBe(3);
    const listed = (await first.listChunks(scope)).map((chunk) => chunk.chunkId);
    expect(new Set(listed).size).toBe(listed.length);
  });
});

describe('group commit', () => {
  test('documents written at once share commits, each with all its chunks, and a query finds every one', async () => {
    const index = await openIndex();
    const docs = Array.from({ length: 60 }, (_, i) => ref(`doc-${i}`));
    const before = { ...groupCommitStats };
    await Promise.all(
      docs.map((doc) =>
        index.replaceDocument(
          doc,
          chunksOf(doc, [`grouped words of ${doc.documentId}`, `second part ${doc.documentId}`]),
        ),
      ),
    );
    const commits = groupCommitStats.commits - before.commits;
    expect(groupCommitStats.documents - before.documents).toBe(60);
    // The first write finds the queue idle and commits alone; the other 59 wait for it and go in far fewer commits.
    expect(commits).toBeGreaterThanOrEqual(2);
    expect(commits).toBeLessThanOrEqual(5);
    for (const doc of docs) expect(await index.countDocumentChunks(doc)).toBe(2);
    const hits = await index.query(search('grouped words', { limit: 100 }));
    expect(new Set(hits.map((hit) => hit.chunk.documentId)).size).toBe(60);
  });

  test('a document the commit refuses fails alone: the others of its group are written', async () => {
    const index = await openIndex();
    const good = [ref('good-1'), ref('good-2'), ref('good-3')];
    const bad = ref('bad');
    // A chunk without its s3Key: the table's schema refuses the row, so the group's commit fails.
    const [broken] = chunksOf(bad, ['broken chunk']);
    const results = await Promise.allSettled([
      index.replaceDocument(good[0], chunksOf(good[0], ['first good'])),
      index.replaceDocument(good[1], chunksOf(good[1], ['second good'])),
      index.replaceDocument(bad, [{ ...broken, s3Key: null as unknown as string }]),
      index.replaceDocument(good[2], chunksOf(good[2], ['third good'])),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    for (const doc of good) expect(await index.countDocumentChunks(doc)).toBe(1);
    expect(await index.countDocumentChunks(bad)).toBe(0);
    expect((await index.query(search('good', { limit: 10 }))).length).toBe(3);
  });

  test('a document written twice in one group keeps its last content', async () => {
    const index = await openIndex();
    const doc = ref('doc-1');
    await index.replaceDocument(ref('warm-up'), chunksOf(ref('warm-up'), ['warm up']));
    await Promise.all([
      index.replaceDocument(ref('other'), chunksOf(ref('other'), ['other words'])),
      index.replaceDocument(doc, chunksOf(doc, ['older one', 'older two', 'older three'])),
      index.replaceDocument(doc, chunksOf(doc, ['newer only'])),
    ]);
    expect(await index.countDocumentChunks(doc)).toBe(1);
    expect((await index.query(search('newer'))).map((hit) => hit.chunk.text)).toEqual(['newer only']);
    expect(await index.query(search('older'))).toEqual([]);
  });
});

describe('deleteDocument and updateDocumentMetadata', () => {
  test('delete removes every chunk of the document and nothing else; deleting again is not an error', async () => {
    const index = await openIndex();
    const doc = ref('doc-1');
    const other = ref('doc-2');
    await index.replaceDocument(doc, chunksOf(doc, ['vacation policy one', 'vacation policy two']));
    await index.replaceDocument(other, chunksOf(other, ['vacation policy of another document']));

    await index.deleteDocument(doc);
    await index.deleteDocument(doc);

    expect(await index.countDocumentChunks(doc)).toBe(0);
    expect((await index.query(search('vacation policy'))).map((hit) => hit.chunk.documentId)).toEqual(['doc-2']);
  });

  test('a metadata update changes labels and custom metadata on every chunk, and filters see it', async () => {
    const index = await openIndex();
    const doc = ref('doc-1');
    await index.replaceDocument(doc, chunksOf(doc, ['refund rules part a', 'refund rules part b'], { label1: 'old' }));

    const metadata: ChunkMetadata = { ...NO_METADATA, label1: 'new', label2: 'eu', svc_internal_meta3: 'm3' };
    await index.updateDocumentMetadata(doc, metadata);

    const filtered = await index.query(
      search('refund', { filters: [{ key: 'label1', operator: 'equals', value: 'new' }] }),
    );
    expect(filtered).toHaveLength(2);
    for (const hit of filtered) expect(hit.chunk).toMatchObject(metadata);
    expect(
      await index.query(search('refund', { filters: [{ key: 'label1', operator: 'equals', value: 'old' }] })),
    ).toEqual([]);
    expect(await index.countDocumentChunks(doc)).toBe(2);
  });
});

describe('tenant scope', () => {
  const others = [
    { agentId: 'agent-2' },
    { knowledgeBaseId: 'kb-2' },
    { environment: 'production' as Environment },
    { environment: 'staging' as Environment },
  ];
  const filters: IndexFilter[][] = [
    [],
    [{ key: 'label1', operator: 'equals', value: 'x' }],
    [{ key: 'label1', operator: 'notEquals', value: 'nothing' }],
    [{ key: 'label1', operator: 'greaterThan', value: '' }],
    [{ key: 'label1', operator: 'lessThan', value: '\uffff' }],
    [{ key: 'label2', operator: 'notEquals', value: "' OR 1=1 --" }],
  ];

  test('a chunk of another agent, knowledge base or environment never comes back, whatever the filter', async () => {
    const index = await openIndex();
    // The same documentId and chunk ids in every dataset: the scope, not the ids, keeps them apart.
    for (const dataset of [{}, ...others]) {
      const doc = ref('doc-1', dataset);
      await index.replaceDocument(doc, chunksOf(doc, ['confidential salary table', 'salary bands'], { label1: 'x' }));
    }
    for (const filter of filters) {
      const hits = await index.query(search('salary', { filters: filter, limit: 100 }));
      expect(hits).toHaveLength(2);
      for (const hit of hits) expect(hit.chunk).toMatchObject(scope);
    }
  });

  test('writes of one dataset leave the same documentId in other datasets alone', async () => {
    const index = await openIndex();
    const mine = ref('doc-1');
    const theirs = ref('doc-1', { agentId: 'agent-2' });
    await index.replaceDocument(theirs, chunksOf(theirs, ['harvest report one', 'harvest report two']));
    await index.replaceDocument(mine, chunksOf(mine, ['harvest report']));
    await index.updateDocumentMetadata(mine, { ...NO_METADATA, label1: 'mine' });
    await index.deleteDocument(mine);

    expect(await index.countDocumentChunks(theirs)).toBe(2);
    const hits = await index.query({ ...search('harvest'), scope: { ...scope, agentId: 'agent-2' } });
    expect(hits.map((hit) => hit.chunk.label1)).toEqual([null, null]);
  });
});

describe('filters', () => {
  const labelled = [
    { id: 'a', label1: 'apple', label2: 'eu' },
    { id: 'b', label1: 'banana', label2: 'us' },
    { id: 'c', label1: 'cherry', label2: 'eu' },
    { id: 'none', label1: null, label2: null },
  ];

  async function indexWithLabels() {
    const index = await openIndex();
    for (const { id, label1, label2 } of labelled) {
      const doc = ref(`doc-${id}`);
      await index.replaceDocument(doc, chunksOf(doc, [`fruit catalogue entry ${id}`], { label1, label2 }));
    }
    return index;
  }

  async function documentsMatching(index: LanceKnowledgeIndex, filters: IndexFilter[]) {
    const hits = await index.query(search('fruit catalogue', { filters }));
    return hits.map((hit) => hit.chunk.documentId.replace('doc-', '')).sort();
  }

  test.each<[string, IndexFilter[], string[]]>([
    ['equals', [{ key: 'label1', operator: 'equals', value: 'banana' }], ['b']],
    [
      'notEquals matches other values and chunks without the label',
      [{ key: 'label1', operator: 'notEquals', value: 'banana' }],
      ['a', 'c', 'none'],
    ],
    [
      'greaterThan compares strings and skips a missing label',
      [{ key: 'label1', operator: 'greaterThan', value: 'apple' }],
      ['b', 'c'],
    ],
    [
      'lessThan compares strings and skips a missing label',
      [{ key: 'label1', operator: 'lessThan', value: 'cherry' }],
      ['a', 'b'],
    ],
    ['filters on label2', [{ key: 'label2', operator: 'equals', value: 'eu' }], ['a', 'c']],
    [
      'several filters combine with AND',
      [
        { key: 'label2', operator: 'equals', value: 'eu' },
        { key: 'label1', operator: 'notEquals', value: 'apple' },
      ],
      ['c'],
    ],
  ])('%s', async (_name, filters, expected) => {
    const index = await indexWithLabels();
    expect(await documentsMatching(index, filters)).toEqual(expected);
  });

  test("values with ' and -- are matched literally and cannot change the query", async () => {
    const index = await openIndex();
    const quoted = ref('doc-quoted');
    const plain = ref('doc-plain');
    const tricky = "o'brien -- x\\";
    await index.replaceDocument(quoted, chunksOf(quoted, ['customer file'], { label1: tricky }));
    await index.replaceDocument(plain, chunksOf(plain, ['customer file too'], { label1: 'plain' }));

    const equals = await index.query(
      search('customer', { filters: [{ key: 'label1', operator: 'equals', value: tricky }] }),
    );
    expect(equals.map((hit) => hit.chunk.label1)).toEqual([tricky]);
    for (const injection of ["x' OR '1'='1", "x' OR 1=1 --", "' OR agentId <> '", "plain'--"]) {
      const hits = await index.query(
        search('customer', { filters: [{ key: 'label1', operator: 'equals', value: injection }] }),
      );
      expect(hits).toEqual([]);
    }
  });

  test('the where clause holds every filter, values escaped, and explain names the dataset table before it', async () => {
    const filters: IndexFilter[] = [
      { key: 'label1', operator: 'notEquals', value: "it's" },
      { key: 'label2', operator: 'lessThan', value: 'm' },
    ];
    expect(buildWhereClause(filters)).toBe("(label1 IS NULL OR label1 <> 'it''s') AND label2 < 'm'");
    expect(buildWhereClause([])).toBeNull();
    const index = await openIndex();
    expect(index.describeFilter(scope, filters)).toBe(
      `table ${index.tableNameOf(scope)} (agentId = 'agent-1' AND environment = 'development' AND knowledgeBaseId = 'kb-1') WHERE ` +
        "(label1 IS NULL OR label1 <> 'it''s') AND label2 < 'm'",
    );
  });

  test('a key that is not filterable is refused', () => {
    expect(() => filterClause({ key: 'svc_internal_meta1', operator: 'equals', value: 'x' } as never)).toThrow(
      /only label1, label2 are filterable/,
    );
  });
});

describe('lexical scores', () => {
  test('scores lie in 0..1 and follow relevance', async () => {
    const index = await openIndex();
    const docs = {
      both: 'How to rotate the encryption key of a storage bucket: rotate the key every year.',
      one: 'The encryption settings page lists every algorithm the service supports.',
      diluted: `Encryption is mentioned once here. ${FILLER.join(' ')}`,
    };
    for (const [id, text] of Object.entries(docs)) await index.replaceDocument(ref(id), chunksOf(ref(id), [text]));
    for (const [i, text] of FILLER.entries())
      await index.replaceDocument(ref(`filler-${i}`), chunksOf(ref(`filler-${i}`), [text]));
    await index.refreshIndex();

    const hits = await index.query(search('rotate encryption key'));
    expect(hits.map((hit) => hit.chunk.documentId)).toEqual(['both', 'one', 'diluted']);
    for (const hit of hits) {
      expect(hit.score).toBeGreaterThan(0);
      expect(hit.score).toBeLessThan(1);
    }
    expect(hits[0].score).toBeGreaterThan(hits[1].score);
    expect(hits[1].score).toBeGreaterThan(hits[2].score);
  });

  test("a chunk's score does not depend on the limit, the filters or the other results", async () => {
    const index = await openIndex();
    const target = ref('target');
    await index.replaceDocument(
      target,
      chunksOf(target, ['Reset a forgotten password from the sign-in page.'], { label1: 't' }),
    );
    for (const [i, text] of ['password reset emails expire after one hour', 'password rules', ...FILLER].entries()) {
      await index.replaceDocument(ref(`other-${i}`), chunksOf(ref(`other-${i}`), [text], { label1: 'o' }));
    }
    await index.refreshIndex();

    const scoreOfTarget = async (options: Partial<IndexQuery>) =>
      (await index.query(search('reset forgotten password', options))).find((hit) => hit.chunk.documentId === 'target')
        ?.score;
    const all = await scoreOfTarget({});
    expect(all).toBeDefined();
    expect(await scoreOfTarget({ limit: 1 })).toBe(all);
    expect(await scoreOfTarget({ filters: [{ key: 'label1', operator: 'equals', value: 't' }] })).toBe(all);
    expect(await scoreOfTarget({ filters: [{ key: 'label1', operator: 'notEquals', value: 'o' }], limit: 50 })).toBe(
      all,
    );
  });

  test('the vector and hybrid score functions are fixed maps onto 0..1', () => {
    expect(vectorScore(0)).toBe(1);
    expect(vectorScore(1)).toBe(0.5);
    expect(vectorScore(2)).toBe(0);
    expect(hybridScore(0.8, 0.4)).toBeCloseTo(0.52);
    expect(hybridScore(0.8, 0.4, 0.5)).toBeCloseTo(0.6);
  });

  test('a query of stop words or punctuation returns nothing instead of failing', async () => {
    const index = await openIndex();
    const doc = ref('doc-1');
    await index.replaceDocument(doc, chunksOf(doc, ['the and of', 'plain words']));
    expect(await index.query(search('the and of'))).toEqual([]);
    expect(await index.query(search('"unbalanced AND (plain -words* OR'))).toHaveLength(1);
    expect(await index.query(search('plain', { limit: 0 }))).toEqual([]);
  });
});

describe('one table per dataset', () => {
  test('a score does not move when another dataset indexes the same words, and a table is made on first write', async () => {
    const index = await openIndex();
    const valve = ref('valve');
    await index.replaceDocument(valve, chunksOf(valve, ['The zorblax valve regulates the coolant pressure.']));
    await index.replaceDocument(ref('gasket'), chunksOf(ref('gasket'), ['Replace the gasket every year.']));
    const before = await index.query(search('zorblax valve'));
    for (const dataset of [{ agentId: 'agent-2' }, { environment: 'staging' as const }, { knowledgeBaseId: 'kb-2' }]) {
      expect(await index.query(search('zorblax', { scope: { ...scope, ...dataset } }))).toEqual([]);
      for (let i = 0; i < 40; i++) {
        const doc = ref(`neighbour-${i}`, dataset);
        await index.replaceDocument(doc, chunksOf(doc, [`neighbour ${i}: the zorblax valve is checked daily`]));
      }
      expect(await index.query(search('zorblax valve'))).toEqual(before);
    }
    expect(new Set([index.tableNameOf(scope), index.tableNameOf({ ...scope, agentId: 'agent-2' })]).size).toBe(2);
  });

  test('the first writes to a new dataset, at once from two handles, create its table once and lose nothing', async () => {
    const [first, second] = [await openIndex(), await openIndex()];
    const fresh = { ...scope, knowledgeBaseId: 'kb-fresh' };
    const docs = Array.from({ length: 12 }, (_, i) => ref(`doc-${i}`, fresh));
    await Promise.all(
      docs.map((doc, i) => (i % 2 ? first : second).replaceDocument(doc, chunksOf(doc, [`ferry ${doc.documentId}`]))),
    );
    for (const index of [first, second]) {
      expect((await index.listChunks(fresh)).map((chunk) => chunk.documentId).sort()).toEqual(
        docs.map((doc) => doc.documentId).sort(),
      );
    }
  });

  test('reads of a dataset without a table find nothing and create nothing, even at once', async () => {
    const index = await openIndex();
    const nowhere = { ...scope, knowledgeBaseId: 'kb-none' };
    const reads = await Promise.all(
      Array.from({ length: 5 }, () => index.query(search('anything', { scope: nowhere }))),
    );
    expect(reads).toEqual([[], [], [], [], []]);
    expect(await index.countDocumentChunks(ref('d', nowhere))).toBe(0);
    await index.deleteDocument(ref('d', nowhere));
    expect(await index.listChunks(nowhere)).toEqual([]);
    expect(index.openTableCount).toBe(0);
  });

  test('past maxOpenTables idle tables are closed, and opened again when read', async () => {
    const index = await openIndex({ maxOpenTables: 2, indexRefreshDelayMs: 10 });
    const scopes = ['kb-a', 'kb-b', 'kb-c', 'kb-d'].map((knowledgeBaseId) => ({ ...scope, knowledgeBaseId }));
    for (const dataset of scopes) {
      const doc = ref('doc', dataset);
      await index.replaceDocument(doc, chunksOf(doc, [`harbour of ${dataset.knowledgeBaseId}`]));
    }
    await index.refreshIndex();
    expect(index.openTableCount).toBe(4);
    // The next table opened closes the idle ones past the limit.
    const fifth = ref('doc', { knowledgeBaseId: 'kb-e' });
    await index.replaceDocument(fifth, chunksOf(fifth, ['harbour of kb-e']));
    expect(index.openTableCount).toBe(2);
    scopes.push({ ...scope, knowledgeBaseId: 'kb-e' });
    for (const dataset of scopes) {
      const [hit] = await index.query(search('harbour', { scope: dataset }));
      expect(hit.chunk.text).toBe(`harbour of ${dataset.knowledgeBaseId}`);
    }
  });

  test('chunks of a table shared by every dataset (earlier versions) move into their own tables, once', async () => {
    const lancedb = await import('@lancedb/lancedb');
    const other = { agentId: 'agent-2', environment: 'production' as const, knowledgeBaseId: 'kb-9' };
    const mine = [ref('a'), ref('b')];
    const theirs = ref('c', other);
    const legacy = [
      ...chunksOf(mine[0], ['harbour opens at dawn', 'harbour closes at dusk'], { label1: 'port:north' }),
      ...chunksOf(mine[1], ['ferries leave the harbour hourly']),
      ...chunksOf(theirs, ['the harbour of another tenant'], { svc_internal_meta2: 'kept' }),
    ];
    const connection = await lancedb.connect(dir);
    const shared = await connection.createEmptyTable('chunks', schemaFor(null));
    await shared.add(legacy.map(({ vector: _vector, ...row }) => row));
    shared.close();

    // Two processes opening at once: one migrates, the other waits for it.
    const [first, second] = await Promise.all([openIndex(), openIndex()]);
    expect(await connection.tableNames()).not.toContain('chunks');
    expect(existsSync(join(dir, '.migrating-chunks'))).toBe(false);
    for (const index of [first, second]) {
      expect(await index.countDocumentChunks(mine[0])).toBe(2);
      expect(await index.countDocumentChunks(mine[1])).toBe(1);
      expect(await index.countDocumentChunks(theirs)).toBe(1);
      expect((await index.query(search('harbour'))).map((hit) => hit.chunk.documentId).sort()).toEqual(['a', 'a', 'b']);
      const [their] = await index.query(search('harbour', { scope: other }));
      expect(their.chunk).toMatchObject({ documentId: 'c', svc_internal_meta2: 'kept' });
    }
    expect((await first.listChunks(scope)).find((chunk) => chunk.documentId === 'a')?.label1).toBe('port:north');
    connection.close();
  });
});

describe('listChunks', () => {
  test('lists every chunk of the dataset, more than a search would return, and none of another dataset', async () => {
    const index = await openIndex();
    const texts = Array.from({ length: 30 }, (_, i) => `listed paragraph number ${i}`);
    const docs = [ref('doc-1'), ref('doc-2')];
    for (const doc of docs) await index.replaceDocument(doc, chunksOf(doc, texts, { label1: 'kind:list' }));
    const elsewhere = ref('doc-1', { knowledgeBaseId: 'kb-2' });
    await index.replaceDocument(elsewhere, chunksOf(elsewhere, ['listed elsewhere']));
    await index.deleteDocument(docs[1]);
    await index.replaceDocument(docs[1], chunksOf(docs[1], ['listed again']));

    const listed = await index.listChunks(scope);
    const expected = [...chunksOf(docs[0], texts, { label1: 'kind:list' }), ...chunksOf(docs[1], ['listed again'])];
    const byId = (a: { chunkId: string }, b: { chunkId: string }) => (a.chunkId < b.chunkId ? -1 : 1);
    expect(listed.sort(byId)).toEqual(expected.sort(byId));
    expect(await index.listChunks({ ...scope, agentId: 'nobody' })).toEqual([]);
  });
});

describe('consistency and maintenance', () => {
  test('a second open() of the same directory sees writes and deletes of the first at once', async () => {
    const writer = await openIndex();
    const reader = await openIndex();
    const doc = ref('doc-1');
    expect(await reader.query(search('harbour'))).toEqual([]);

    await writer.replaceDocument(doc, chunksOf(doc, ['the harbour opens at dawn']));
    expect((await reader.query(search('harbour'))).map((hit) => hit.chunk.documentId)).toEqual(['doc-1']);
    expect(await reader.countDocumentChunks(doc)).toBe(1);

    await writer.updateDocumentMetadata(doc, { ...NO_METADATA, label1: 'port' });
    expect((await reader.query(search('harbour')))[0].chunk.label1).toBe('port');

    await writer.deleteDocument(doc);
    expect(await reader.query(search('harbour'))).toEqual([]);
  });

  test('writes are folded into the BM25 index in the background', async () => {
    const index = await openIndex({ indexRefreshDelayMs: 10 });
    const doc = ref('doc-1');
    await index.replaceDocument(doc, chunksOf(doc, ['background indexing', 'of new rows']));
    expect((await index.query(search('background'))).length).toBe(1); // found before the index has the row

    const deadline = Date.now() + 10_000;
    while ((await index.indexStatus()).unindexedRows > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await index.indexStatus()).toEqual({ indexedRows: 2, unindexedRows: 0 });
  });
});

describe('hybrid search with an embedder', () => {
  test('finds lexical and vector matches, with scores in 0..1', async () => {
    const embedder = new TrigramEmbedder();
    const index = await openIndex({ embedder });
    expect(index.space).toBe('chunks_vec64');
    expect(index.tableNameOf(scope)).toMatch(/^chunks_vec64__[0-9a-f]{32}$/);
    const kube = ref('kube');
    await index.replaceDocument(kube, chunksOf(kube, ['Upgrading a kubernetes cluster without downtime']));
    for (const [i, text] of FILLER.entries())
      await index.replaceDocument(ref(`filler-${i}`), chunksOf(ref(`filler-${i}`), [text]));
    expect(embedder.calls).toBe(6); // the index embeds chunks that come without vectors

    // Misspellings BM25 cannot match: only the vector side finds the document.
    const typo = await index.query(search('kubernetis clustr', { limit: 3 }));
    expect(typo[0].chunk.documentId).toBe('kube');
    for (const hit of typo) {
      expect(hit.score).toBeGreaterThanOrEqual(0);
      expect(hit.score).toBeLessThanOrEqual(1);
    }

    const [vector] = await embedder.embed(['cluster kubernetes']);
    const exact = await index.query(search('cluster kubernetes', { vector, limit: 3 }));
    expect(exact[0].chunk.documentId).toBe('kube');
    expect(exact[0].score).toBeGreaterThan(typo[0].score);
    expect(exact[0].score).toBeLessThanOrEqual(1);
  });

  test('the scope and filters apply to the vector side too', async () => {
    const index = await openIndex({ embedder: new TrigramEmbedder() });
    const mine = ref('mine');
    const theirs = ref('theirs', { knowledgeBaseId: 'kb-2' });
    await index.replaceDocument(mine, chunksOf(mine, ['gardening tips for spring'], { label1: 'keep' }));
    await index.replaceDocument(theirs, chunksOf(theirs, ['gardening tips for spring'], { label1: 'keep' }));
    const other = ref('other');
    await index.replaceDocument(other, chunksOf(other, ['gardening tips for autumn'], { label1: 'drop' }));

    const hits = await index.query(
      search('gardening tips', { filters: [{ key: 'label1', operator: 'equals', value: 'keep' }] }),
    );
    expect(hits.map((hit) => `${hit.chunk.knowledgeBaseId}/${hit.chunk.documentId}`)).toEqual(['kb-1/mine']);
  });

  test('a vector of the wrong dimension is refused', async () => {
    const index = await openIndex({ embedder: new TrigramEmbedder() });
    const doc = ref('doc-1');
    const [chunk] = chunksOf(doc, ['text']);
    await expect(index.replaceDocument(doc, [{ ...chunk, vector: [1, 2, 3] }])).rejects.toThrow(/64 dimensions/);
    await expect(index.query(search('text', { vector: [1, 2, 3] }))).rejects.toThrow(/3 dimensions/);
  });
});
