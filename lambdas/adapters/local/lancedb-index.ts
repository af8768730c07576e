/**
 * The local KnowledgeIndex: one embedded LanceDB table on disk holds the chunks of every dataset, searched with BM25
 * (plus cosine vector search, fused, when an embedder is configured). The API process and the worker process may
 * open the same directory: every read checks for the latest committed version. Writes of one document run one at a
 * time in a process, and one process writes a directory (the local runtime holds a worker lock): LanceDB does not
 * detect two concurrent merge-inserts of the same new rows, and would keep both. Layout, scores and filter
 * semantics are described in docs/retrieval.md.
 */
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { Field, FixedSizeList, Float32, Int32, Schema, Utf8 } from 'apache-arrow';
import type { DatasetRef } from '../../core/knowledge/document';
import type { Environment } from '../../core/knowledge/fields';
import {
  assertChunksOfDocument,
  CHUNK_METADATA_KEYS,
  type ChunkMetadata,
  type DocumentRef,
  type Embedder,
  FILTERABLE_KEYS,
  type IndexedChunk,
  type IndexFilter,
  type IndexHit,
  type IndexQuery,
  type KnowledgeIndex,
} from '../../ports/processing';

/**
 * k of the lexical score `m / (m + k)`, where m is the BM25 score divided by the number of distinct query terms.
 * 5 is about the median m of the right document's best chunk for a one-line description query over 5k chunks of
 * English man pages (wrong documents in the top 5: about 3.5), so 0.5 reads as "a typical correct match".
 */
export const LEXICAL_SATURATION_K = 5;
/** Weight of the lexical score in the hybrid score; the vector score gets the rest. */
export const DEFAULT_LEXICAL_WEIGHT = 0.5;
/** Writes are followed, after this quiet time, by an optimize that folds new rows into the BM25 index. */
export const DEFAULT_INDEX_REFRESH_DELAY_MS = 1000;
/**
 * Superseded table versions are removed once this old. A reader in another process checks out the latest version
 * before every query, and a query takes milliseconds, so 30 s is ample; keeping more makes every optimize slower
 * (it reads every retained manifest: ~0.85 s with 1,000 versions against ~0.1 s with 10).
 */
const VERSION_RETENTION_MS = 30 * 1000;
const MAX_WRITE_ATTEMPTS = 8;
/** Hybrid search takes this many candidates per retriever for each requested result (at least MIN_CANDIDATES). */
const CANDIDATES_PER_RESULT = 4;
const MIN_CANDIDATES = 40;

const LEXICAL_TABLE = 'chunks';
const TEXT_COLUMN = 'text';
const VECTOR_COLUMN = 'vector';
/** A chunk's identity: chunkId alone is the pipeline's business, the tenant columns make it safe across datasets. */
const MERGE_KEY = ['agentId', 'environment', 'knowledgeBaseId', 'documentId', 'chunkId'];
const CHUNK_COLUMNS = [
  'chunkId',
  'agentId',
  'environment',
  'knowledgeBaseId',
  'documentId',
  's3Key',
  'position',
  TEXT_COLUMN,
  ...CHUNK_METADATA_KEYS,
] as const;

export interface LanceKnowledgeIndexOptions {
  /** Adds a vector column (in a table of its own: `tableNameFor`) and hybrid search; without it the index is lexical. */
  readonly embedder?: Embedder;
  /** Weight of the lexical score in the hybrid score, 0..1 (default 0.5). */
  readonly lexicalWeight?: number;
  /** Quiet time after a write before new rows are folded into the BM25 index (default 1 s). */
  readonly indexRefreshDelayMs?: number;
}

type ChunkRow = Omit<IndexedChunk, 'vector'> & { vector?: number[] };

interface Candidate {
  readonly chunk: Omit<IndexedChunk, 'vector'>;
  readonly bm25: number;
  readonly vector: Float32Array | null;
}

// ---------------------------------------------------------------------------------------------------------------
// SQL: the tenant scope and the label filters, the only place values enter a predicate.

/** A SQL string literal: quotes doubled, so no value can end the literal (backslashes are not escapes in Lance SQL). */
export function sqlString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

function scopeClause(scope: DatasetRef): string {
  return [
    `agentId = ${sqlString(scope.agentId)}`,
    `environment = ${sqlString(scope.environment)}`,
    `knowledgeBaseId = ${sqlString(scope.knowledgeBaseId)}`,
  ].join(' AND ');
}

function documentClause(ref: DocumentRef): string {
  return `${scopeClause(ref)} AND documentId = ${sqlString(ref.documentId)}`;
}

/**
 * One filter as SQL. `notEquals` also matches chunks without the label (NULL), as Bedrock's notEquals matches
 * records without the key; `greaterThan` / `lessThan` compare strings byte-wise and never match a missing label.
 */
export function filterClause(filter: IndexFilter): string {
  if (!(FILTERABLE_KEYS as readonly string[]).includes(filter.key)) {
    throw new Error(`Cannot filter on "${filter.key}": only ${FILTERABLE_KEYS.join(', ')} are filterable`);
  }
  const column = filter.key;
  const value = sqlString(filter.value);
  switch (filter.operator) {
    case 'equals':
      return `${column} = ${value}`;
    case 'notEquals':
      return `(${column} IS NULL OR ${column} <> ${value})`;
    case 'greaterThan':
      return `${column} > ${value}`;
    case 'lessThan':
      return `${column} < ${value}`;
    default:
      throw new Error(`Unknown filter operator "${String(filter.operator)}"`);
  }
}

/**
 * The `where` clause a query runs with: the tenant scope first, then every filter, all ANDed. Exported so that
 * `explain` can show the backend filter exactly as sent.
 */
export function buildWhereClause(query: Pick<IndexQuery, 'scope' | 'filters'>): string {
  return [scopeClause(query.scope), ...query.filters.map(filterClause)].join(' AND ');
}

// ---------------------------------------------------------------------------------------------------------------
// Scores: fixed functions of one chunk and the query, never of the other results.

/** BM25 on a fixed 0..1 scale: the BM25 per distinct query term, saturated by LEXICAL_SATURATION_K. */
export function lexicalScore(bm25: number, queryTermCount: number): number {
  if (!(bm25 > 0)) return 0;
  const perTerm = bm25 / Math.max(1, queryTermCount);
  return perTerm / (perTerm + LEXICAL_SATURATION_K);
}

/** Cosine distance d (0..2) as `1 - d/2` = (1 + cosine) / 2, the convention of OpenSearch's cosine score. */
export function vectorScore(cosineDistance: number): number {
  return Math.min(1, Math.max(0, 1 - cosineDistance / 2));
}

/** Hybrid score: a convex combination of the two fixed-scale scores, so it stays on 0..1. */
export function hybridScore(lexical: number, vector: number, lexicalWeight = DEFAULT_LEXICAL_WEIGHT): number {
  return lexicalWeight * lexical + (1 - lexicalWeight) * vector;
}

function cosineDistance(a: readonly number[], b: ArrayLike<number>): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    normA += a[i] * a[i];
    normB += b[i] * b[i];
  }
  if (normA === 0 || normB === 0) return 1;
  return 1 - dot / Math.sqrt(normA * normB);
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * The table of an embedder's vectors: `chunks` without one, `chunks_vec<dimensions>` for an embedder without a
 * vector space name (Titan V2), else `chunks_vec<dimensions>_<model>_<hash>`, since two models of the same dimensions
 * give vectors that are not comparable. So a change of embedder opens an empty table rather than mixing them.
 */
export function tableNameFor(embedder: Pick<Embedder, 'dimensions' | 'vectorSpace'> | undefined): string {
  if (!embedder) return LEXICAL_TABLE;
  const table = `${LEXICAL_TABLE}_vec${embedder.dimensions}`;
  if (!embedder.vectorSpace) return table;
  // LanceDB table names take letters, digits, `_`, `-` and `.`; the hash keeps apart names that only differ elsewhere.
  const readable = embedder.vectorSpace.replace(/[^A-Za-z0-9_.-]+/g, '-').slice(0, 64);
  const hash = createHash('sha256').update(embedder.vectorSpace).digest('hex').slice(0, 8);
  return `${table}_${readable}_${hash}`;
}

function schemaFor(dimensions: number | null): Schema {
  const text = (name: string, nullable = false) => new Field(name, new Utf8(), nullable);
  const fields: Field[] = [
    text('chunkId'),
    text('agentId'),
    text('environment'),
    text('knowledgeBaseId'),
    text('documentId'),
    text('s3Key'),
    new Field('position', new Int32(), false),
    text(TEXT_COLUMN),
    ...CHUNK_METADATA_KEYS.map((name) => text(name, true)),
  ];
  if (dimensions !== null) {
    fields.push(new Field(VECTOR_COLUMN, new FixedSizeList(dimensions, new Field('item', new Float32(), true)), false));
  }
  return new Schema(fields);
}

function isCommitConflict(error: unknown): boolean {
  return /commit conflict|retryable|preempted|concurrent transaction/i.test(String(error));
}

/** Lance retries some conflicts itself; another process's compaction can still preempt a write: try again. */
async function withCommitRetry<T>(operation: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (attempt >= MAX_WRITE_ATTEMPTS || !isCommitConflict(error)) throw error;
      const backoff = Math.min(1000, 20 * 2 ** attempt);
      await new Promise((resolve) => setTimeout(resolve, backoff / 2 + Math.random() * (backoff / 2)));
    }
  }
}

function chunkOf(row: Record<string, unknown>): Omit<IndexedChunk, 'vector'> {
  const nullable = (name: string) => (row[name] ?? null) as string | null;
  return {
    chunkId: row.chunkId as string,
    agentId: row.agentId as string,
    environment: row.environment as Environment,
    knowledgeBaseId: row.knowledgeBaseId as string,
    documentId: row.documentId as string,
    s3Key: row.s3Key as string,
    position: row.position as number,
    text: row.text as string,
    label1: nullable('label1'),
    label2: nullable('label2'),
    svc_internal_meta1: nullable('svc_internal_meta1'),
    svc_internal_meta2: nullable('svc_internal_meta2'),
    svc_internal_meta3: nullable('svc_internal_meta3'),
    svc_internal_meta4: nullable('svc_internal_meta4'),
  };
}

function vectorOf(row: Record<string, unknown>): Float32Array | null {
  const value = row[VECTOR_COLUMN] as { toArray(): Float32Array } | null | undefined;
  return value ? value.toArray() : null;
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Best first; ties in a stable, locale-independent order. */
function byScoreThenPosition(a: IndexHit, b: IndexHit): number {
  return (
    b.score - a.score ||
    compareText(a.chunk.documentId, b.chunk.documentId) ||
    a.chunk.position - b.chunk.position ||
    compareText(a.chunk.chunkId, b.chunk.chunkId)
  );
}

const candidateKey = (chunk: Omit<IndexedChunk, 'vector'>) => `${chunk.documentId}\u0000${chunk.chunkId}`;

/**
 * The write running (or last queued) for each document of each index directory in this process. LanceDB's
 * merge-insert does not see a concurrent merge-insert of the same new rows as a conflict: both commit, and the
 * chunks are there twice (lancedb/lancedb#2463). A worker runs the records of a batch in parallel, and the S3 event
 * and the message of one upload often share a batch, so writes of one document are queued here, across every
 * handle this process has on the directory.
 */
const documentWrites = new Map<string, Promise<unknown>>();

function oneWriteAtATime<T>(key: string, write: () => Promise<T>): Promise<T> {
  const run = (documentWrites.get(key) ?? Promise.resolve()).then(write, write);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  documentWrites.set(key, settled);
  void settled.then(() => {
    if (documentWrites.get(key) === settled) documentWrites.delete(key);
  });
  return run;
}

export class LanceKnowledgeIndex implements KnowledgeIndex {
  private readonly lexicalWeight: number;
  private readonly refreshDelayMs: number;
  private refreshTimer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private writesSinceRefresh = false;
  private closed = false;

  private constructor(
    private readonly directory: string,
    private readonly connection: lancedb.Connection,
    private readonly table: lancedb.Table,
    private readonly embedder: Embedder | undefined,
    options: LanceKnowledgeIndexOptions,
  ) {
    this.lexicalWeight = options.lexicalWeight ?? DEFAULT_LEXICAL_WEIGHT;
    this.refreshDelayMs = options.indexRefreshDelayMs ?? DEFAULT_INDEX_REFRESH_DELAY_MS;
    if (!(this.lexicalWeight >= 0 && this.lexicalWeight <= 1)) throw new Error('lexicalWeight must be within 0..1');
  }

  /** Opens (creating if needed) the index under `directory`. Safe to call from several processes at once. */
  static async open(directory: string, options: LanceKnowledgeIndexOptions = {}): Promise<LanceKnowledgeIndex> {
    const dimensions = options.embedder ? options.embedder.dimensions : null;
    if (dimensions !== null && !(Number.isInteger(dimensions) && dimensions > 0)) {
      throw new Error(`Embedder dimensions must be a positive integer, got ${dimensions}`);
    }
    await mkdir(directory, { recursive: true });
    // 0: every read first checks for a newer version, so a process sees what another one committed.
    const connection = await lancedb.connect(directory, { readConsistencyInterval: 0 });
    const name = tableNameFor(options.embedder);
    const table = await withCommitRetry(() =>
      connection.createEmptyTable(name, schemaFor(dimensions), { mode: 'create', existOk: true }),
    );
    await ensureIndexes(table);
    return new LanceKnowledgeIndex(resolve(directory), connection, table, options.embedder, options);
  }

  /** Name of the table this index reads and writes (`tableNameFor` its embedder). */
  get tableName(): string {
    return this.table.name;
  }

  async replaceDocument(ref: DocumentRef, chunks: readonly IndexedChunk[]): Promise<void> {
    assertChunksOfDocument(ref, chunks);
    const rows = await this.rowsOf(chunks);
    // One commit: upsert the new chunks and delete the document's chunks that are not among them, so a reader
    // sees the old set or the new one, never a mix, and a repeated call changes nothing.
    await this.writeOf(ref, () =>
      this.table
        .mergeInsert(MERGE_KEY)
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceDelete({ where: documentClause(ref) })
        .execute(rows),
    );
  }

  async deleteDocument(ref: DocumentRef): Promise<void> {
    await this.writeOf(ref, () => this.table.delete(documentClause(ref)));
  }

  async updateDocumentMetadata(ref: DocumentRef, metadata: ChunkMetadata): Promise<void> {
    const values: Record<string, string | null> = {};
    for (const column of CHUNK_METADATA_KEYS) values[column] = metadata[column];
    await this.writeOf(ref, () => this.table.update({ where: documentClause(ref), values }));
  }

  /** A write of one document's rows: after the writes of that document before it, retried on commit conflicts. */
  private async writeOf(ref: DocumentRef, write: () => Promise<unknown>): Promise<void> {
    const key = [this.directory, this.table.name, ref.agentId, ref.environment, ref.knowledgeBaseId, ref.documentId];
    await oneWriteAtATime(key.join('\u0000'), () => withCommitRetry(write));
    this.scheduleIndexRefresh();
  }

  async countDocumentChunks(ref: DocumentRef): Promise<number> {
    return this.table.countRows(documentClause(ref));
  }

  /**
   * Every chunk of a dataset (without vectors), in no particular order: for checks and tools that need the index's
   * whole content, such as the fault-injection proof. Reads all of it at once, so not for serving requests.
   */
  async listChunks(scope: DatasetRef): Promise<Omit<IndexedChunk, 'vector'>[]> {
    // A plain query (no search) has no limit unless given one.
    const rows: Record<string, unknown>[] = await this.table
      .query()
      .where(scopeClause(scope))
      .select([...CHUNK_COLUMNS])
      .toArray();
    return rows.map(chunkOf);
  }

  /** The SQL `where` clause a query with this scope and these filters sends (for `explain`). */
  describeFilter(scope: DatasetRef, filters: readonly IndexFilter[]): string {
    return buildWhereClause({ scope, filters });
  }

  async query(query: IndexQuery): Promise<IndexHit[]> {
    if (!(query.limit > 0)) return [];
    const where = buildWhereClause(query);
    const vector = await this.queryVector(query);
    if (!vector) {
      const candidates = await this.lexicalCandidates(query.text, where, query.limit, false);
      return candidates.hits
        .map(({ chunk, bm25 }) => ({ chunk, score: lexicalScore(bm25, candidates.termCount) }))
        .sort(byScoreThenPosition)
        .slice(0, query.limit);
    }
    return this.hybridQuery(query, where, vector);
  }

  /** Folds rows written since the last refresh into the BM25 index now (writes schedule this on their own). */
  async refreshIndex(): Promise<void> {
    this.clearRefreshTimer();
    await this.refreshing;
    // The refresh just awaited may have scheduled another as it finished; that one would race this one.
    this.clearRefreshTimer();
    await this.runRefresh(true);
  }

  /** Rows of the table inside and outside the BM25 index (outside ones are found by a slower scan until refreshed). */
  async indexStatus(): Promise<{ indexedRows: number; unindexedRows: number }> {
    const stats = await this.table.indexStats(`${TEXT_COLUMN}_idx`);
    return { indexedRows: stats?.numIndexedRows ?? 0, unindexedRows: stats?.numUnindexedRows ?? 0 };
  }

  /** Stops background maintenance (waiting for a running one) and releases the table. */
  async close(): Promise<void> {
    this.closed = true;
    this.clearRefreshTimer();
    await this.refreshing;
    this.table.close();
    this.connection.close();
  }

  // -------------------------------------------------------------------------------------------------------------

  private async rowsOf(chunks: readonly IndexedChunk[]): Promise<ChunkRow[]> {
    const rows: ChunkRow[] = chunks.map(({ vector: _vector, ...chunk }) => ({ ...chunk }));
    if (!this.embedder) return rows;
    const dimensions = this.embedder.dimensions;
    const missing = chunks.flatMap((chunk, i) => (chunk.vector ? [] : [i]));
    const embedded = missing.length > 0 ? await this.embedder.embed(missing.map((i) => chunks[i].text)) : [];
    const computed = new Map(missing.map((chunkIndex, i) => [chunkIndex, embedded[i]]));
    return rows.map((row, i) => {
      const vector = chunks[i].vector ?? computed.get(i);
      if (!vector || vector.length !== dimensions) {
        throw new Error(`Chunk ${row.chunkId} needs a vector of ${dimensions} dimensions, got ${vector?.length ?? 0}`);
      }
      return { ...row, vector: [...vector] };
    });
  }

  private async queryVector(query: IndexQuery): Promise<readonly number[] | null> {
    if (!this.embedder) return null;
    const vector = query.vector ?? (await this.embedder.embed([query.text]))[0];
    if (vector.length !== this.embedder.dimensions) {
      throw new Error(`Query vector has ${vector.length} dimensions, the index ${this.embedder.dimensions}`);
    }
    return vector;
  }

  /** BM25 matches of `text` within `where`; termCount is the number of distinct terms the index's analyzer keeps. */
  private async lexicalCandidates(
    text: string,
    where: string,
    limit: number,
    withVectors: boolean,
  ): Promise<{ hits: Candidate[]; termCount: number }> {
    const terms = await this.table.tokenize(text, { column: TEXT_COLUMN });
    const termCount = new Set(terms.map((term) => term.text)).size;
    if (termCount === 0) return { hits: [], termCount };
    const columns: string[] = [...CHUNK_COLUMNS, '_score'];
    if (withVectors) columns.push(VECTOR_COLUMN);
    const rows: Record<string, unknown>[] = await this.table
      .query()
      .fullTextSearch(new lancedb.MatchQuery(text, TEXT_COLUMN))
      .where(where)
      .select(columns)
      .limit(limit)
      .toArray();
    const hits = rows.map((row) => ({
      chunk: chunkOf(row),
      bm25: row._score as number,
      vector: withVectors ? vectorOf(row) : null,
    }));
    return { hits, termCount };
  }

  /**
   * Hybrid: the BM25 candidates and the nearest vectors under the same `where`, each candidate scored on both scales
   * (its BM25 fetched for the vector-only ones, its cosine computed for the lexical-only ones), then combined.
   */
  private async hybridQuery(query: IndexQuery, where: string, vector: readonly number[]): Promise<IndexHit[]> {
    const pool = Math.max(query.limit * CANDIDATES_PER_RESULT, MIN_CANDIDATES);
    const [lexical, nearestRows] = await Promise.all([
      this.lexicalCandidates(query.text, where, pool, true),
      this.table
        .query()
        .nearestTo([...vector])
        .distanceType('cosine')
        .where(where)
        .select([...CHUNK_COLUMNS, VECTOR_COLUMN, '_distance'])
        .limit(pool)
        .toArray() as Promise<Record<string, unknown>[]>,
    ]);
    const candidates = new Map<string, Candidate>();
    for (const hit of lexical.hits) candidates.set(candidateKey(hit.chunk), hit);
    const vectorOnly: string[] = [];
    for (const row of nearestRows) {
      const chunk = chunkOf(row);
      if (candidates.has(candidateKey(chunk))) continue;
      candidates.set(candidateKey(chunk), { chunk, bm25: 0, vector: vectorOf(row) });
      vectorOnly.push(chunk.chunkId);
    }
    if (vectorOnly.length > 0 && lexical.termCount > 0) {
      // BM25 statistics are those of the whole index whatever the prefilter, so this is the score a plain search gives.
      const only = `${where} AND chunkId IN (${vectorOnly.map(sqlString).join(', ')})`;
      const rescored = await this.lexicalCandidates(query.text, only, vectorOnly.length, false);
      for (const hit of rescored.hits) {
        const candidate = candidates.get(candidateKey(hit.chunk));
        if (candidate) candidates.set(candidateKey(hit.chunk), { ...candidate, bm25: hit.bm25 });
      }
    }
    return [...candidates.values()]
      .map(({ chunk, bm25, vector: stored }) => ({
        chunk,
        score: hybridScore(
          lexicalScore(bm25, lexical.termCount),
          stored ? vectorScore(cosineDistance(vector, stored)) : 0,
          this.lexicalWeight,
        ),
      }))
      .sort(byScoreThenPosition)
      .slice(0, query.limit);
  }

  // Unindexed rows are still searched (by a scan), so a write is visible at once; folding them into the index keeps
  // queries fast and their BM25 statistics the same as for indexed rows. One optimize at a time, after a quiet time.
  private scheduleIndexRefresh(): void {
    this.writesSinceRefresh = true;
    if (this.closed || this.refreshTimer || this.refreshing) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.runRefresh(false);
    }, this.refreshDelayMs);
    this.refreshTimer.unref();
  }

  private clearRefreshTimer(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = undefined;
  }

  private async runRefresh(rethrow = false): Promise<void> {
    this.writesSinceRefresh = false;
    let failure: unknown;
    const run = this.table.optimize({ cleanupOlderThan: new Date(Date.now() - VERSION_RETENTION_MS) }).then(
      () => undefined,
      (error: unknown) => {
        failure = error;
      },
    );
    this.refreshing = run;
    await run;
    this.refreshing = undefined;
    if (failure !== undefined && rethrow) throw failure;
    // A background failure is left to the next write: most often another process's optimize preempted this one,
    // and that one indexed the same rows.
    if (failure === undefined && this.writesSinceRefresh && !this.closed) this.scheduleIndexRefresh();
  }
}

/**
 * The BM25 index on the text, and scalar indexes on the tenant columns every query filters on: without them a
 * prefiltered vector search reads the scope columns of every row (70-100 ms at 10k chunks; 15-25 ms with them).
 */
function wantedIndexes(): { column: string; config: lancedb.Index }[] {
  return [
    {
      column: TEXT_COLUMN,
      // Spelled out so that an upgrade of LanceDB's defaults cannot change how the index analyzes text.
      config: lancedb.Index.fts({
        baseTokenizer: 'simple',
        language: 'English',
        lowercase: true,
        stem: true,
        removeStopWords: true,
        asciiFolding: true,
        withPosition: false,
      }),
    },
    { column: 'agentId', config: lancedb.Index.btree() },
    { column: 'knowledgeBaseId', config: lancedb.Index.btree() },
    { column: 'environment', config: lancedb.Index.bitmap() },
  ];
}

async function ensureIndexes(table: lancedb.Table): Promise<void> {
  const indexedColumns = async () => new Set((await table.listIndices()).flatMap((index) => index.columns));
  const existing = await indexedColumns();
  for (const { column, config } of wantedIndexes()) {
    if (existing.has(column)) continue;
    try {
      await table.createIndex(column, { config, replace: false });
    } catch (error) {
      // Another process opening the same directory may have created it first.
      if (!(await indexedColumns()).has(column)) throw error;
    }
  }
}
