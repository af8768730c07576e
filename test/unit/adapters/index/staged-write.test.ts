/**
 * Staged writes of the local index (docs/retrieval.md, "Staged writes"): a document written in parts
 * (`replaceDocumentInParts`) is its old chunks to every reader until the last part lands, then its new ones, never a
 * mix or a part; a write that fails midway, or whose process dies, leaves the old chunks, and what it wrote is removed.
 * Readers are this handle and a second one on the same directory, as the API process reads what the worker writes.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import type { Environment } from '#core/knowledge/fields';
import type { DocumentRef, Embedder, IndexedChunk, KnowledgeIndex } from '#ports/processing';
import { chunksOf } from '../../../helpers/chunks';

const scope = { agentId: 'agent-1', environment: 'development' as Environment, knowledgeBaseId: 'kb-1' };
const DOC: DocumentRef = { ...scope, documentId: 'doc-1' };
const OTHER: DocumentRef = { ...scope, documentId: 'doc-2' };

/** `count` chunks whose every text holds `word` (and its position, so no two are alike). */
function version(word: string, count: number, doc: DocumentRef = DOC): IndexedChunk[] {
  return chunksOf(
    doc,
    Array.from({ length: count }, (_, i) => `${word} paragraph number ${i} of the ${word} manual.`),
  );
}

function partsOf(chunks: readonly IndexedChunk[], size: number): IndexedChunk[][] {
  const parts: IndexedChunk[][] = [];
  for (let i = 0; i < chunks.length; i += size) parts.push(chunks.slice(i, i + size));
  return parts;
}

/**
 * The parts, held before part `holdAt` until `release()`: `held` resolves once the index asks for that part (the parts
 * before it are written). `failAt`: asking for that part throws instead, as a chunker or embedder failing midway.
 */
function gatedParts(parts: readonly IndexedChunk[][], options: { holdAt?: number; failAt?: number } = {}) {
  let reachedHold: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    reachedHold = resolve;
  });
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  async function* generate(): AsyncGenerator<IndexedChunk[]> {
    for (let k = 0; k < parts.length; k++) {
      if (k === options.holdAt) {
        reachedHold();
        await released;
      }
      if (k === options.failAt) throw new Error('the chunker failed midway');
      yield parts[k];
    }
  }
  return { parts: generate(), held, release };
}

/** Hashed bag of words: a query sharing words with a chunk is near it. */
class WordEmbedder implements Embedder {
  readonly dimensions = 32;
  async embed(texts: readonly string[]): Promise<number[][]> {
    return texts.map((text) => {
      const vector = new Array<number>(this.dimensions).fill(0);
      for (const word of text.toLowerCase().split(/\W+/).filter(Boolean)) {
        vector[createHash('md5').update(word).digest()[0] % this.dimensions] += 1;
      }
      return vector;
    });
  }
}

let dir: string;
const opened: LanceKnowledgeIndex[] = [];

async function openIndex(options: Parameters<typeof LanceKnowledgeIndex.open>[1] = {}): Promise<LanceKnowledgeIndex> {
  const index = await LanceKnowledgeIndex.open(dir, { indexRefreshDelayMs: 60_000, ...options });
  opened.push(index);
  return index;
}

/** Every row of the dataset's table, the stage's included: what the directory holds, not what readers see. */
async function storedRows(index: LanceKnowledgeIndex): Promise<number> {
  const connection = await lancedb.connect(dir);
  const table = await connection.openTable(index.tableNameOf(scope));
  const rows = await table.countRows();
  table.close();
  connection.close();
  return rows;
}

/** What a reader sees of the document: its chunk count and texts by every read there is, and the words a query finds. */
async function seen(index: KnowledgeIndex & Pick<LanceKnowledgeIndex, 'listChunks'>, word: string) {
  const page = await index.listDocumentChunks(DOC, { afterPosition: null, limit: 10_000 });
  const hits = await index.query({ scope, text: word, filters: [], limit: 10_000 });
  const listed = (await index.listChunks(scope)).filter((chunk) => chunk.documentId === DOC.documentId);
  return {
    count: await index.countDocumentChunks(DOC),
    pageTotal: page?.total,
    words: [...new Set(page?.chunks.map((chunk) => chunk.text.split(' ')[0]))],
    listedWords: [...new Set(listed.map((chunk) => chunk.text.split(' ')[0]))],
    listed: listed.length,
    hits: hits.filter((hit) => hit.chunk.documentId === DOC.documentId).length,
  };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'staged-write-'));
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((index) => index.close()));
  rmSync(dir, { recursive: true, force: true });
});

it('replaces the document with the parts’ chunks, exactly, and leaves other documents alone', async () => {
  const index = await openIndex();
  await index.replaceDocument(DOC, version('walnut', 30));
  await index.replaceDocument(OTHER, version('walnut', 4, OTHER));

  const written = await index.replaceDocumentInParts(DOC, gatedPartsAll(partsOf(version('cedar', 25), 10)));

  expect(written).toBe(25);
  expect(await seen(index, 'cedar')).toEqual({
    count: 25,
    pageTotal: 25,
    words: ['cedar'],
    listedWords: ['cedar'],
    listed: 25,
    hits: 25,
  });
  expect(
    (await index.query({ scope, text: 'walnut', filters: [], limit: 100 })).map((hit) => hit.chunk.documentId),
  ).toEqual(Array(4).fill(OTHER.documentId));
  // No row of the stage and none of the old version stays on disk.
  expect(await storedRows(index)).toBe(25 + 4);
  // Written again, the same: the count is exact after every replace.
  await index.replaceDocumentInParts(DOC, gatedPartsAll(partsOf(version('cedar', 25), 7)));
  expect(await index.countDocumentChunks(DOC)).toBe(25);
  expect(await storedRows(index)).toBe(25 + 4);
});

function gatedPartsAll(parts: IndexedChunk[][]): AsyncIterable<IndexedChunk[]> {
  return (async function* () {
    yield* parts;
  })();
}

it('shows readers the old chunks until the last part is written, then the new ones, never a mix', async () => {
  const index = await openIndex();
  const reader = await openIndex(); // another handle on the directory: the API process
  await index.replaceDocument(DOC, version('walnut', 12));
  const gated = gatedParts(partsOf(version('cedar', 20), 6), { holdAt: 3 });

  const writing = index.replaceDocumentInParts(DOC, gated.parts);
  await gated.held; // three of four parts are written
  for (const handle of [index, reader]) {
    expect(await seen(handle, 'walnut cedar')).toEqual({
      count: 12,
      pageTotal: 12,
      words: ['walnut'],
      listedWords: ['walnut'],
      listed: 12,
      hits: 12,
    });
  }
  gated.release();
  await writing;
  for (const handle of [index, reader]) {
    expect(await seen(handle, 'walnut cedar')).toEqual({
      count: 20,
      pageTotal: 20,
      words: ['cedar'],
      listedWords: ['cedar'],
      listed: 20,
      hits: 20,
    });
  }
});

it('a query with an embedder finds no chunk of a stage in flight (the nearest vectors read the table)', async () => {
  const embedder = new WordEmbedder();
  const index = await openIndex({ embedder });
  await index.replaceDocument(DOC, version('walnut', 5));
  const gated = gatedParts(partsOf(version('cedar', 9), 3), { holdAt: 2 });

  const writing = index.replaceDocumentInParts(DOC, gated.parts);
  await gated.held;
  const during = await index.query({ scope, text: 'cedar manual', filters: [], limit: 50 });
  expect(new Set(during.map((hit) => hit.chunk.text.split(' ')[0]))).toEqual(new Set(['walnut']));
  gated.release();
  await writing;
  const after = await index.query({ scope, text: 'cedar manual', filters: [], limit: 50 });
  expect(after).toHaveLength(9);
  expect(new Set(after.map((hit) => hit.chunk.text.split(' ')[0]))).toEqual(new Set(['cedar']));
});

it('a staged write that fails midway leaves the old chunks, and removes what it wrote', async () => {
  const index = await openIndex();
  await index.replaceDocument(DOC, version('walnut', 12));
  const gated = gatedParts(partsOf(version('cedar', 20), 6), { failAt: 2 });

  await expect(index.replaceDocumentInParts(DOC, gated.parts)).rejects.toThrow('the chunker failed midway');

  expect(await seen(index, 'walnut cedar')).toEqual({
    count: 12,
    pageTotal: 12,
    words: ['walnut'],
    listedWords: ['walnut'],
    listed: 12,
    hits: 12,
  });
  expect(await storedRows(index)).toBe(12);
  // The next write is exact.
  await index.replaceDocumentInParts(DOC, gatedPartsAll(partsOf(version('cedar', 20), 6)));
  expect(await index.countDocumentChunks(DOC)).toBe(20);
  expect(await storedRows(index)).toBe(20);
});

it('what a staged write left when its process died is invisible, and removed by the next write or delete', async () => {
  const index = await openIndex();
  await index.replaceDocument(DOC, version('walnut', 12));
  // A worker process writes two parts of a new version, then is killed.
  await stagedWriteKilledMidway(version('cedar', 20));

  const reader = await openIndex();
  expect(await seen(reader, 'walnut cedar')).toMatchObject({ count: 12, pageTotal: 12, words: ['walnut'], hits: 12 });
  expect(await storedRows(index)).toBe(12 + 12);

  // A whole write (one commit) collects the stage first.
  await index.replaceDocument(DOC, version('cedar', 3));
  expect(await seen(index, 'cedar')).toMatchObject({ count: 3, pageTotal: 3, words: ['cedar'], hits: 3 });
  expect(await storedRows(index)).toBe(3);

  // So does a delete.
  await stagedWriteKilledMidway(version('cedar', 20));
  await index.deleteDocument(DOC);
  expect(await storedRows(index)).toBe(0);
  expect(await seen(index, 'cedar')).toMatchObject({ count: 0, pageTotal: 0, hits: 0 });
}, 60_000);

/** Runs a staged write of `chunks` (parts of 6) in a child process and kills it (SIGKILL) once two parts are written. */
async function stagedWriteKilledMidway(chunks: readonly IndexedChunk[]): Promise<void> {
  const script = join(dir, 'staged-writer.ts');
  writeFileSync(
    script,
    `import { LanceKnowledgeIndex } from ${JSON.stringify(join(process.cwd(), 'lambdas/adapters/index/lancedb.ts'))};
const [dir, chunksJson] = process.argv.slice(2);
const chunks = JSON.parse(chunksJson);
const doc = { agentId: chunks[0].agentId, environment: chunks[0].environment, knowledgeBaseId: chunks[0].knowledgeBaseId, documentId: chunks[0].documentId };
async function* parts() {
  for (let i = 0; i < chunks.length; i += 6) {
    if (i === 12) { process.stdout.write('two parts written\\n'); await new Promise(() => undefined); }
    yield chunks.slice(i, i + 6);
  }
}
LanceKnowledgeIndex.open(dir, { indexRefreshDelayMs: 60_000 }).then((index) => index.replaceDocumentInParts(doc, parts()));
`,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', script, dir, JSON.stringify(chunks)], {
    cwd: process.cwd(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (data: Buffer) => {
    stderr += data.toString();
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (data: Buffer) => {
      if (data.toString().includes('two parts written')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the writer exited (${code}) before two parts: ${stderr}`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

it('leaves the statistics a score uses as a whole write would (chunk count, the chunks holding each term)', async () => {
  const staged = await openIndex();
  const wholeDir = mkdtempSync(join(tmpdir(), 'staged-write-whole-'));
  const whole = await LanceKnowledgeIndex.open(wholeDir, { indexRefreshDelayMs: 60_000 });
  try {
    for (const index of [staged, whole]) {
      await index.replaceDocument(OTHER, version('walnut', 6, OTHER));
      await index.replaceDocument(DOC, version('walnut', 9));
    }
    await staged.replaceDocumentInParts(DOC, gatedPartsAll(partsOf(version('cedar', 14), 4)));
    await whole.replaceDocument(DOC, version('cedar', 14));
    for (const text of ['walnut manual', 'cedar paragraph', 'number 3 of the manual']) {
      const scores = async (index: LanceKnowledgeIndex) =>
        (await index.query({ scope, text, filters: [], limit: 50 })).map((hit) => [hit.chunk.chunkId, hit.score]);
      expect(await scores(staged)).toEqual(await scores(whole));
    }
  } finally {
    await whole.close();
    rmSync(wholeDir, { recursive: true, force: true });
  }
});
