import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { DynamoChunkIndex, passes } from '#adapters/index/dynamodb-chunks';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import type { DatasetRef } from '#core/knowledge/document';
import type { DocumentChunkPage, DocumentRef, IndexFilter } from '#ports/processing';
import { CHUNK_INDEX_TABLE } from '../../../../lib/tables';
import { chunksOf, NO_METADATA } from '../../../helpers/chunks';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

const scope: DatasetRef = { agentId: 'agent-1', environment: 'production', knowledgeBaseId: 'kb-1' };

let dynamo: LocalDynamo;
let tables = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
});
afterAll(() => dynamo?.stop());

async function newIndex(): Promise<DynamoChunkIndex> {
  tables += 1;
  return new DynamoChunkIndex(dynamo.client, await dynamo.createTable(`chunks${tables}`, CHUNK_INDEX_TABLE));
}

function ref(documentId: string, dataset: Partial<typeof scope> = {}): DocumentRef {
  return { ...scope, ...dataset, documentId };
}

const ids = (hits: { chunk: { chunkId: string } }[]) => hits.map((h) => h.chunk.chunkId).sort();

describe('DynamoChunkIndex', () => {
  it('replaces a document idempotently and drops chunks that are no longer there', async () => {
    const index = await newIndex();
    const doc = ref('doc-1');
    const first = chunksOf(doc, ['Backups run at midnight.', 'Restores take ten minutes.', 'Old chunk.']);
    await index.replaceDocument(doc, first);
    await index.replaceDocument(doc, first);
    expect(await index.countDocumentChunks(doc)).toBe(3);

    const second = chunksOf(doc, ['Backups run at midnight.', 'Restores take five minutes.']);
    await index.replaceDocument(doc, second);
    expect(await index.countDocumentChunks(doc)).toBe(2);
    const hits = await index.query({ scope, text: 'restores minutes', filters: [], limit: 10 });
    expect(hits.map((h) => h.chunk.text)).toEqual(['Restores take five minutes.']);
  });

  it('pages through a document of more chunks than one batch write and one query page hold', async () => {
    const index = await newIndex();
    const doc = ref('doc-big');
    const texts = Array.from({ length: 260 }, (_, i) => `Section ${i} of the manual. ${'filler '.repeat(600)}`);
    await index.replaceDocument(doc, chunksOf(doc, texts));
    expect(await index.countDocumentChunks(doc)).toBe(260);
    await index.deleteDocument(doc);
    expect(await index.countDocumentChunks(doc)).toBe(0);
  });

  it('deletes a document and leaves the others', async () => {
    const index = await newIndex();
    const a = ref('doc-a');
    const b = ref('doc-ab'); // shares the prefix "doc-a" but not "doc-a#"
    await index.replaceDocument(a, chunksOf(a, ['Alpha text.']));
    await index.replaceDocument(b, chunksOf(b, ['Alpha beta text.']));
    await index.deleteDocument(a);
    await index.deleteDocument(ref('never-indexed'));
    expect(await index.countDocumentChunks(a)).toBe(0);
    expect(await index.countDocumentChunks(b)).toBe(1);
  });

  it('sets labels and custom metadata on every chunk without touching the text', async () => {
    const index = await newIndex();
    const doc = ref('doc-m');
    await index.replaceDocument(doc, chunksOf(doc, ['Gardening tips.', 'Gardening tools.'], { label1: 'old' }));
    const metadata = { ...NO_METADATA, label1: 'new', label2: 'guides', svc_internal_meta3: 'x' };
    await index.updateDocumentMetadata(doc, metadata);
    const hits = await index.query({ scope, text: 'gardening', filters: [], limit: 10 });
    expect(hits).toHaveLength(2);
    for (const hit of hits) expect(hit.chunk).toMatchObject({ ...metadata, documentId: 'doc-m' });
    expect(hits.map((h) => h.chunk.text).sort()).toEqual(['Gardening tips.', 'Gardening tools.']);
  });

  it('answers only from the query scope, whatever the filters', async () => {
    const index = await newIndex();
    const mine = ref('doc-1');
    const otherKb = ref('doc-2', { knowledgeBaseId: 'kb-2' });
    const otherEnv = ref('doc-3', { environment: 'staging' });
    const otherAgent = ref('doc-4', { agentId: 'agent-2' });
    for (const doc of [mine, otherKb, otherEnv, otherAgent]) {
      await index.replaceDocument(doc, chunksOf(doc, ['Secret launch codes.'], { label1: 'x' }));
    }
    const hits = await index.query({
      scope,
      text: 'launch codes',
      filters: [{ key: 'label1', operator: 'notEquals', value: 'y' }],
      limit: 10,
    });
    expect(hits.map((h) => h.chunk.documentId)).toEqual(['doc-1']);
  });

  it('ranks the matching chunk first, scores within 0..1, and honours the limit', async () => {
    const index = await newIndex();
    const doc = ref('doc-r');
    await index.replaceDocument(
      doc,
      chunksOf(doc, [
        'The router reboots every night at three.',
        'Invoices are issued monthly.',
        'To reset the router, hold the reset button for ten seconds; the router then reboots.',
        'Passwords expire after ninety days.',
      ]),
    );
    const hits = await index.query({ scope, text: 'How do I reset the router?', filters: [], limit: 2 });
    expect(hits).toHaveLength(2);
    expect(hits[0].chunk.text).toContain('hold the reset button');
    for (const hit of hits) expect(hit.score).toBeGreaterThan(0);
    for (const hit of hits) expect(hit.score).toBeLessThan(1);
    expect(hits[0].score).toBeGreaterThan(hits[1].score);
    expect(await index.query({ scope, text: 'the of and', filters: [], limit: 5 })).toEqual([]);
  });
});

describe('filters answer what the embedded index answers', () => {
  const labels = fc.option(fc.constantFrom('a', 'b', 'B', 'é', 'ab', 'z'), { nil: null });
  const filter: fc.Arbitrary<IndexFilter> = fc.record({
    key: fc.constantFrom('label1' as const, 'label2' as const),
    operator: fc.constantFrom('equals' as const, 'notEquals' as const, 'greaterThan' as const, 'lessThan' as const),
    value: fc.constantFrom('a', 'b', 'B', 'é', 'ab', 'z', ''),
  });
  let lanceDir: string;
  let lance: LanceKnowledgeIndex;

  beforeAll(async () => {
    lanceDir = mkdtempSync(join(tmpdir(), 'chunk-index-vs-lance-'));
    lance = await LanceKnowledgeIndex.open(lanceDir, { indexRefreshDelayMs: 0 });
  });
  afterAll(async () => {
    await lance?.close();
    rmSync(lanceDir, { recursive: true, force: true });
  });

  it("gives the embedded index's lexical scores for the same chunks", async () => {
    const dynamo = await newIndex();
    const dataset = { knowledgeBaseId: 'kb-same-scores' };
    const texts = [
      'To reset the router, hold the reset button for ten seconds; the router then reboots.',
      'Routers are reset by the Café support team.',
      'Passwords expire after ninety days.',
      'Hold on: the button opens the menu.',
    ];
    for (const [i, text] of texts.entries()) {
      const doc = ref(`doc-${i}`, dataset);
      await dynamo.replaceDocument(doc, chunksOf(doc, [text, `Second chunk ${i} about routers.`]));
      await lance.replaceDocument(doc, chunksOf(doc, [text, `Second chunk ${i} about routers.`]));
    }
    const query = {
      scope: { ...scope, ...dataset },
      text: 'How do I reset the router button?',
      filters: [],
      limit: 10,
    };
    const scores = (hits: { chunk: { chunkId: string }; score: number }[]) =>
      hits.map((hit) => [hit.chunk.chunkId, hit.score]);
    const expected = scores(await lance.query(query));
    expect(expected.length).toBeGreaterThan(4);
    expect(scores(await dynamo.query(query))).toEqual(expected);
  });

  it('passes() matches the SQL of the embedded index on generated chunks and filters', async () => {
    const dynamo = await newIndex();
    const cases = fc.sample(
      fc.record({
        chunks: fc.array(fc.tuple(labels, labels), { minLength: 1, maxLength: 8 }),
        filters: fc.array(filter, { maxLength: 2 }),
      }),
      { numRuns: 25, seed: 20261122 },
    );
    for (const [n, { chunks, filters }] of cases.entries()) {
      const dataset = { knowledgeBaseId: `kb-case-${n}` };
      const docs = chunks.map(([label1, label2], i) => {
        const doc = ref(`doc-${i}`, dataset);
        return { doc, chunks: chunksOf(doc, [`common word number ${i}`], { label1, label2 }) };
      });
      for (const { doc, chunks: c } of docs) {
        await dynamo.replaceDocument(doc, c);
        await lance.replaceDocument(doc, c);
      }
      const query = { scope: { ...scope, ...dataset }, text: 'common word', filters, limit: 100 };
      const expected = ids(await lance.query(query));
      expect({ n, filters, chunks, got: ids(await dynamo.query(query)) }).toEqual({
        n,
        filters,
        chunks,
        got: expected,
      });
      // And passes() alone agrees, chunk by chunk.
      const passing = docs.flatMap((d) => d.chunks).filter((c) => filters.every((f) => passes(c, f)));
      expect(passing.map((c) => c.chunkId).sort()).toEqual(expected);
    }
  });
});

describe('listDocumentChunks, in the chunk table and the embedded index alike', () => {
  let lanceDir: string;
  let lance: LanceKnowledgeIndex;

  beforeAll(async () => {
    lanceDir = mkdtempSync(join(tmpdir(), 'chunk-listing-'));
    lance = await LanceKnowledgeIndex.open(lanceDir, { indexRefreshDelayMs: 0 });
  });
  afterAll(async () => {
    await lance?.close();
    rmSync(lanceDir, { recursive: true, force: true });
  });

  it('pages a document of 12 chunks in position order (10 after 9, not after 1), each as a hit gives it', async () => {
    const dynamo = await newIndex();
    const doc = ref('doc-listed', { knowledgeBaseId: 'kb-listing' });
    const neighbour = ref('doc-listed-2', { knowledgeBaseId: 'kb-listing' });
    const texts = Array.from({ length: 12 }, (_, i) => `Chapter ${i} about lighthouse number ${i}.`);
    for (const index of [dynamo, lance]) {
      await index.replaceDocument(doc, chunksOf(doc, texts, { label1: 'team:a' }));
      await index.replaceDocument(neighbour, chunksOf(neighbour, ['Another document.']));
      await index.updateDocumentMetadata(doc, { ...NO_METADATA, label2: 'tier:gold', svc_internal_meta1: 'm1' });
      const pages = [];
      let after: number | null = null;
      for (;;) {
        const page: DocumentChunkPage = await index.listDocumentChunks(doc, { afterPosition: after, limit: 5 });
        expect(page.total).toBe(12);
        if (page.chunks.length === 0) break;
        pages.push(page.chunks.map((chunk) => chunk.position));
        after = page.chunks.at(-1)?.position ?? null;
      }
      expect(pages).toEqual([
        [0, 1, 2, 3, 4],
        [5, 6, 7, 8, 9],
        [10, 11],
      ]);
      const [hit] = await index.query({
        scope: { ...scope, knowledgeBaseId: 'kb-listing' },
        text: 'chapter 7',
        filters: [],
        limit: 1,
      });
      const listed = (await index.listDocumentChunks(doc, { afterPosition: 6, limit: 1 })).chunks[0];
      expect(listed).toEqual(hit.chunk);
      expect(listed).toMatchObject({ label1: null, label2: 'tier:gold', svc_internal_meta1: 'm1', position: 7 });
      const none = await index.listDocumentChunks(ref('never-indexed', { knowledgeBaseId: 'kb-listing' }), {
        afterPosition: null,
        limit: 5,
      });
      expect(none).toEqual({ chunks: [], total: 0 });
    }
  });
});
