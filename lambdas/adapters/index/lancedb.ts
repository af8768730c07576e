/**
 * The local KnowledgeIndex: an embedded LanceDB database on disk with one table per dataset (agent, environment,
 * knowledge base), each with its own BM25 index, so a chunk's score depends on its own dataset alone (BM25's idf and
 * average length are statistics of the table); searched with BM25, plus cosine vector search, fused, when an
 * embedder is configured. The API process and the worker process may open the same directory: every read checks
 * for the latest committed version. Writes of one document run one at a time in a process, and one process writes a
 * directory (the local runtime holds a worker lock): LanceDB does not detect two concurrent merge-inserts of the same
 * new rows, and would keep both. Layout, scores and filter semantics are described in docs/retrieval.md.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
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
/** A chunk's identity within its dataset's table (chunkId alone is the pipeline's business). */
const MERGE_KEY = ['documentId', 'chunkId'];
/** Dataset tables a handle keeps open by default; the least recently used idle one is closed past this. */
const DEFAULT_MAX_OPEN_TABLES = 64;
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
  /** Dataset tables kept open (default 64); past it the least recently used idle one is closed, to be opened again. */
  readonly maxOpenTables?: number;
}

type ChunkRow = Omit<IndexedChunk, 'vector'> & { vector?: number[] };

interface Candidate {
  readonly chunk: Omit<IndexedChunk, 'vector'>;
  readonly bm25: number;
  readonly vector: Float32Array | null;
}

// ---------------------------------------------------------------------------------------------------------------
// SQL: the label filters, the only place values enter a predicate. The tenant scope is the table itself.

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

/** A document's rows within its dataset's table. */
function documentClause(ref: DocumentRef): string {
  return `documentId = ${sqlString(ref.documentId)}`;
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
 * The `where` clause a query runs with inside its dataset's table: every filter, ANDed; null without filters.
 * Exported so that `explain` can show the backend filter exactly as sent.
 */
export function buildWhereClause(filters: readonly IndexFilter[]): string | null {
  return filters.length > 0 ? filters.map(filterClause).join(' AND ') : null;
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
 * The tables of an embedder's vectors are named after it: `chunks` without one, `chunks_vec<dimensions>` for an
 * embedder without a vector space name (Titan V2), else `chunks_vec<dimensions>_<model>_<hash>`, since two models of
 * the same dimensions give vectors that are not comparable. So a change of embedder opens empty tables rather than
 * mixing them. This name prefixes each dataset's table (`datasetTableName`); before datasets had tables of their own
 * it was the one table of every dataset, which `open` migrates.
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

const DATASET_SEPARATOR = '__';

/**
 * The table of one dataset in a vector space: `<space>__<32 hex of SHA-256 of agentId, environment and knowledge base
 * id>`, since ids may hold characters a table name cannot.
 */
export function datasetTableName(space: string, scope: DatasetRef): string {
  const key = `${scope.agentId}\u0000${scope.environment}\u0000${scope.knowledgeBaseId}`;
  return `${space}${DATASET_SEPARATOR}${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

/** The columns of a chunk table, with a vector column of `dimensions` floats unless null. */
export function schemaFor(dimensions: number | null): Schema {
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

/**
 * One dataset's table and its index maintenance: unindexed rows are still searched (by a scan), so a write is visible
 * at once; folding them into the BM25 index keeps queries fast. One optimize at a time, after a quiet time.
 */
class DatasetTable {
  private refreshTimer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private writesSinceRefresh = false;
  private closed = false;
  /** Operations running on the table; a busy table is never closed to make room. */
  private busy = 0;

  constructor(
    readonly table: lancedb.Table,
    private readonly refreshDelayMs: number,
  ) {}

  get idle(): boolean {
    return this.busy === 0 && !this.refreshTimer && !this.refreshing && !this.writesSinceRefresh;
  }

  /** Marks the table in use; false once it was closed (to make room), when the caller must open it again. */
  tryAcquire(): boolean {
    if (this.closed) return false;
    this.busy++;
    return true;
  }

  release(): void {
    this.busy--;
  }

  scheduleRefresh(): void {
    this.writesSinceRefresh = true;
    if (this.closed || this.refreshTimer || this.refreshing) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.runRefresh(false);
    }, this.refreshDelayMs);
    this.refreshTimer.unref();
  }

  async refreshNow(): Promise<void> {
    this.clearRefreshTimer();
    await this.refreshing;
    // The refresh just awaited may have scheduled another as it finished; that one would race this one.
    this.clearRefreshTimer();
    await this.runRefresh(true);
  }

  async indexStatus(): Promise<{ indexedRows: number; unindexedRows: number }> {
    const stats = await this.table.indexStats(`${TEXT_COLUMN}_idx`);
    return { indexedRows: stats?.numIndexedRows ?? 0, unindexedRows: stats?.numUnindexedRows ?? 0 };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.clearRefreshTimer();
    await this.refreshing;
    this.table.close();
  }

  private clearRefreshTimer(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = undefined;
  }

  private async runRefresh(rethrow: boolean): Promise<void> {
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
    if (failure === undefined && this.writesSinceRefresh && !this.closed) this.scheduleRefresh();
  }
}

export class LanceKnowledgeIndex implements KnowledgeIndex {
  private readonly lexicalWeight: number;
  private readonly refreshDelayMs: number;
  private readonly maxOpenTables: number;
  /** Open dataset tables by name, least recently used first (for tests: `openTableCount`). */
  private readonly tables = new Map<string, Promise<DatasetTable>>();
  private closed = false;

  private constructor(
    private readonly directory: string,
    private readonly connection: lancedb.Connection,
    /** `tableNameFor(embedder)`: the prefix of this index's dataset tables. */
    readonly space: string,
    private readonly embedder: Embedder | undefined,
    options: LanceKnowledgeIndexOptions,
  ) {
    this.lexicalWeight = options.lexicalWeight ?? DEFAULT_LEXICAL_WEIGHT;
    this.refreshDelayMs = options.indexRefreshDelayMs ?? DEFAULT_INDEX_REFRESH_DELAY_MS;
    this.maxOpenTables = options.maxOpenTables ?? DEFAULT_MAX_OPEN_TABLES;
    if (!(this.lexicalWeight >= 0 && this.lexicalWeight <= 1)) throw new Error('lexicalWeight must be within 0..1');
  }

  /**
   * Opens the index under `directory` (creating the directory if needed), first moving the chunks of a table shared
   * by every dataset, as earlier versions kept them, into tables of their own. Safe to call from several processes.
   */
  static async open(directory: string, options: LanceKnowledgeIndexOptions = {}): Promise<LanceKnowledgeIndex> {
    const dimensions = options.embedder ? options.embedder.dimensions : null;
    if (dimensions !== null && !(Number.isInteger(dimensions) && dimensions > 0)) {
      throw new Error(`Embedder dimensions must be a positive integer, got ${dimensions}`);
    }
    await mkdir(directory, { recursive: true });
    // 0: every read first checks for a newer version, so a process sees what another one committed.
    const connection = await lancedb.connect(directory, { readConsistencyInterval: 0 });
    const index = new LanceKnowledgeIndex(
      resolve(directory),
      connection,
      tableNameFor(options.embedder),
      options.embedder,
      options,
    );
    try {
      await index.migrateSharedTable();
    } catch (error) {
      await index.close();
      throw error;
    }
    return index;
  }

  /** How many dataset tables this handle holds open. */
  get openTableCount(): number {
    return this.tables.size;
  }

  /** Name of the table that holds the chunks of `scope` in this index's vector space. */
  tableNameOf(scope: DatasetRef): string {
    return datasetTableName(this.space, scope);
  }

  async replaceDocument(ref: DocumentRef, chunks: readonly IndexedChunk[]): Promise<void> {
    assertChunksOfDocument(ref, chunks);
    const rows = await this.rowsOf(chunks);
    // One commit: upsert the new chunks and delete the document's chunks that are not among them, so a reader
    // sees the old set or the new one, never a mix, and a repeated call changes nothing.
    await this.writeOf(ref, true, (table) =>
      table
        .mergeInsert(MERGE_KEY)
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceDelete({ where: documentClause(ref) })
        .execute(rows),
    );
  }

  async deleteDocument(ref: DocumentRef): Promise<void> {
    await this.writeOf(ref, false, (table) => table.delete(documentClause(ref)));
  }

  async updateDocumentMetadata(ref: DocumentRef, metadata: ChunkMetadata): Promise<void> {
    const values: Record<string, string | null> = {};
    for (const column of CHUNK_METADATA_KEYS) values[column] = metadata[column];
    await this.writeOf(ref, false, (table) => table.update({ where: documentClause(ref), values }));
  }

  /**
   * A write of one document's rows (nothing when its dataset has no table and `create` is false): after the writes
   * of that document before it, retried on commit conflicts.
   */
  private async writeOf(
    ref: DocumentRef,
    create: boolean,
    write: (table: lancedb.Table) => Promise<unknown>,
  ): Promise<void> {
    await this.withDataset(ref, create, undefined, async (dataset) => {
      const key = [this.directory, dataset.table.name, ref.documentId].join('\u0000');
      await oneWriteAtATime(key, () => withCommitRetry(() => write(dataset.table)));
      dataset.scheduleRefresh();
    });
  }

  async countDocumentChunks(ref: DocumentRef): Promise<number> {
    return this.withDataset(ref, false, 0, (dataset) => dataset.table.countRows(documentClause(ref)));
  }

  /**
   * Every chunk of a dataset (without vectors), in no particular order: for checks and tools that need the index's
   * whole content, such as the fault-injection proof. Reads all of it at once, so not for serving requests.
   */
  async listChunks(scope: DatasetRef): Promise<Omit<IndexedChunk, 'vector'>[]> {
    return this.withDataset(scope, false, [], async (dataset) => {
      // A plain query (no search) has no limit unless given one.
      const rows: Record<string, unknown>[] = await dataset.table
        .query()
        .select([...CHUNK_COLUMNS])
        .toArray();
      return rows.map(chunkOf);
    });
  }

  /** The dataset's table and the SQL `where` clause a query with these filters sends in it (for `explain`). */
  describeFilter(scope: DatasetRef, filters: readonly IndexFilter[]): string {
    const where = buildWhereClause(filters);
    const table = `table ${this.tableNameOf(scope)} (${scopeClause(scope)})`;
    return where === null ? table : `${table} WHERE ${where}`;
  }

  async query(query: IndexQuery): Promise<IndexHit[]> {
    if (!(query.limit > 0)) return [];
    const where = buildWhereClause(query.filters);
    const vector = await this.queryVector(query);
    return this.withDataset(query.scope, false, [], async ({ table }) => {
      if (!vector) {
        const candidates = await lexicalCandidates(table, query.text, where, query.limit, false);
        return candidates.hits
          .map(({ chunk, bm25 }) => ({ chunk, score: lexicalScore(bm25, candidates.termCount) }))
          .sort(byScoreThenPosition)
          .slice(0, query.limit);
      }
      return this.hybridQuery(table, query, where, vector);
    });
  }

  /** Folds rows written since the last refresh into the BM25 index of every dataset table now (tests, benchmarks). */
  async refreshIndex(): Promise<void> {
    for (const dataset of await this.allDatasetTables()) await dataset.refreshNow();
  }

  /** Rows of all dataset tables inside and outside their BM25 index (outside ones are found by a slower scan). */
  async indexStatus(): Promise<{ indexedRows: number; unindexedRows: number }> {
    const total = { indexedRows: 0, unindexedRows: 0 };
    for (const dataset of await this.allDatasetTables()) {
      const status = await dataset.indexStatus();
      total.indexedRows += status.indexedRows;
      total.unindexedRows += status.unindexedRows;
    }
    return total;
  }

  /** Stops background maintenance (waiting for running ones) and releases the tables. */
  async close(): Promise<void> {
    this.closed = true;
    const open = [...this.tables.values()];
    this.tables.clear();
    for (const pending of open) {
      const dataset = await pending.catch(() => undefined);
      await dataset?.close();
    }
    this.connection.close();
  }

  // -------------------------------------------------------------------------------------------------------------

  /**
   * The open table of `scope`, creating it (with its BM25 index) when `create`; null when it does not exist (yet),
   * which reads treat as an empty dataset. A missing table is not remembered: another process may create it.
   */
  /**
   * Runs `operation` on the table of `scope`, held in use so it is not closed meanwhile; `missing` when the dataset
   * has no table and `create` is false.
   */
  private async withDataset<T>(
    scope: DatasetRef,
    create: boolean,
    missing: T,
    operation: (dataset: DatasetTable) => Promise<T>,
  ): Promise<T> {
    for (;;) {
      const dataset = create ? await this.datasetTable(scope, true) : await this.datasetTable(scope, false);
      if (!dataset) return missing;
      // Closed to make room between its lookup and now: look it up again.
      if (!dataset.tryAcquire()) continue;
      try {
        return await operation(dataset);
      } finally {
        dataset.release();
      }
    }
  }

  private async datasetTable(scope: DatasetRef, create: true): Promise<DatasetTable>;
  private async datasetTable(scope: DatasetRef, create: false): Promise<DatasetTable | null>;
  private async datasetTable(scope: DatasetRef, create: boolean): Promise<DatasetTable | null> {
    return this.tableNamed(this.tableNameOf(scope), create, true);
  }

  /**
   * The open table `name` (one handle per table in this index), opened or created on first use; null when it does not
   * exist and `create` is false. With `evict`, idle tables past `maxOpenTables` are then closed (never this one).
   */
  private async tableNamed(name: string, create: boolean, evict: boolean): Promise<DatasetTable | null> {
    if (this.closed) throw new Error('The knowledge index is closed');
    const cached = this.tables.get(name);
    if (cached) {
      // Most recently used last.
      this.tables.delete(name);
      this.tables.set(name, cached);
      return cached;
    }
    if (!create) {
      const table = await this.openExisting(name);
      if (!table) return null;
      // Another call may have opened or created it meanwhile: keep one handle.
      const raced = this.tables.get(name);
      if (raced) {
        table.close();
        return raced;
      }
      const dataset = new DatasetTable(table, this.refreshDelayMs);
      this.tables.set(name, Promise.resolve(dataset));
      if (evict) await this.closeIdleTables(name);
      return dataset;
    }
    const creating = this.createTable(name).then((table) => new DatasetTable(table, this.refreshDelayMs));
    this.tables.set(name, creating);
    creating.catch(() => {
      if (this.tables.get(name) === creating) this.tables.delete(name);
    });
    const dataset = await creating;
    if (evict) await this.closeIdleTables(name);
    return dataset;
  }

  /**
   * Opens the table, creating it first if needed. One creation of a table at a time in this process, across handles:
   * two concurrent creates of a new table make the second an overwrite (Lance commits it as `Overwrite`), which fails
   * the first one's index creation and could drop rows written in between. Across processes one process writes a
   * directory (the worker lock), and reads never create.
   */
  private async createTable(name: string): Promise<lancedb.Table> {
    return oneWriteAtATime(['create', this.directory, name].join('\u0000'), async () => {
      const existing = await this.openExisting(name);
      if (existing) return existing;
      const dimensions = this.embedder ? this.embedder.dimensions : null;
      const table = await withCommitRetry(() =>
        this.connection.createEmptyTable(name, schemaFor(dimensions), { mode: 'create', existOk: true }),
      );
      await ensureTextIndex(table);
      return table;
    });
  }

  /** The table if it exists with its BM25 index (its creator makes the index before writing any row). */
  private async openExisting(name: string): Promise<lancedb.Table | null> {
    let table: lancedb.Table;
    try {
      table = await this.connection.openTable(name);
    } catch (error) {
      if (/not found|does not exist|was not found/i.test(String(error))) return null;
      throw error;
    }
    if (!(await hasTextIndex(table))) {
      table.close();
      return null;
    }
    return table;
  }

  /** Closes the least recently used idle tables past `maxOpenTables`, but never `keep` (being handed out). */
  private async closeIdleTables(keep: string): Promise<void> {
    let excess = this.tables.size - this.maxOpenTables;
    for (const [name, pending] of this.tables) {
      if (excess <= 0) return;
      const dataset = await Promise.race([pending, Promise.resolve(undefined)]).catch(() => undefined);
      if (name === keep || !dataset?.idle || this.tables.get(name) !== pending) continue;
      this.tables.delete(name);
      excess--;
      await dataset.close();
    }
  }

  /** Every dataset table of this index's vector space in the directory. */
  private async allDatasetTables(): Promise<DatasetTable[]> {
    const prefix = `${this.space}${DATASET_SEPARATOR}`;
    const names = (await this.connection.tableNames()).filter(
      (name) => name.startsWith(prefix) && /^[0-9a-f]{32}$/.test(name.slice(prefix.length)),
    );
    const tables: DatasetTable[] = [];
    // No eviction here: it could close a table collected a moment before, which the caller is about to use.
    for (const name of names) {
      const dataset = await this.tableNamed(name, false, false);
      if (dataset) tables.push(dataset);
    }
    return tables;
  }

  /**
   * Earlier versions kept the chunks of every dataset in one table named after the vector space, so BM25's statistics
   * spanned every tenant. Its rows move, dataset by dataset, into their own tables (a merge on the chunk's identity,
   * so a migration cut off and run again adds nothing twice); the shared table is dropped last. One process migrates
   * at a time (a lock folder holding its pid); another waits for it.
   */
  private async migrateSharedTable(): Promise<void> {
    if (!(await this.connection.tableNames()).includes(this.space)) return;
    const lock = join(this.directory, `.migrating-${this.space}`);
    if (!(await takeMigrationLock(lock))) {
      const deadline = Date.now() + MIGRATION_WAIT_MS;
      while ((await this.connection.tableNames()).includes(this.space)) {
        if (Date.now() > deadline) throw new Error(`Another process has been migrating ${lock} for too long`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return;
    }
    try {
      // Another process may have finished the migration between the first look and the lock.
      if (!(await this.connection.tableNames()).includes(this.space)) return;
      const shared = await this.connection.openTable(this.space);
      const scopes: Record<string, unknown>[] = await shared
        .query()
        .select(['agentId', 'environment', 'knowledgeBaseId'])
        .toArray();
      const seen = new Map<string, DatasetRef>();
      for (const row of scopes) {
        const scope: DatasetRef = {
          agentId: row.agentId as string,
          environment: row.environment as Environment,
          knowledgeBaseId: row.knowledgeBaseId as string,
        };
        seen.set(this.tableNameOf(scope), scope);
      }
      const columns: string[] = [...CHUNK_COLUMNS];
      if (this.embedder) columns.push(VECTOR_COLUMN);
      for (const scope of seen.values()) {
        const rows = (await shared.query().where(scopeClause(scope)).select(columns).toArray()).map(
          (row: Record<string, unknown>) => {
            const vector = vectorOf(row);
            return vector ? { ...chunkOf(row), vector: [...vector] } : chunkOf(row);
          },
        );
        await this.withDataset(scope, true, undefined, async (dataset) => {
          await withCommitRetry(() =>
            dataset.table.mergeInsert(MERGE_KEY).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows),
          );
          await dataset.refreshNow();
        });
      }
      shared.close();
      await this.connection.dropTable(this.space);
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }

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

  /**
   * Hybrid: the BM25 candidates and the nearest vectors under the same `where`, each candidate scored on both scales
   * (its BM25 fetched for the vector-only ones, its cosine computed for the lexical-only ones), then combined.
   */
  private async hybridQuery(
    table: lancedb.Table,
    query: IndexQuery,
    where: string | null,
    vector: readonly number[],
  ): Promise<IndexHit[]> {
    const pool = Math.max(query.limit * CANDIDATES_PER_RESULT, MIN_CANDIDATES);
    let nearest = table
      .query()
      .nearestTo([...vector])
      .distanceType('cosine');
    if (where !== null) nearest = nearest.where(where);
    const [lexical, nearestRows] = await Promise.all([
      lexicalCandidates(table, query.text, where, pool, true),
      nearest
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
      // BM25 statistics are those of the dataset's table whatever the prefilter, so this is the score a plain
      // search gives.
      const only = [where, `chunkId IN (${vectorOnly.map(sqlString).join(', ')})`].filter(Boolean).join(' AND ');
      const rescored = await lexicalCandidates(table, query.text, only, vectorOnly.length, false);
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
}

/** BM25 matches of `text` within `where`; termCount is the number of distinct terms the index's analyzer keeps. */
async function lexicalCandidates(
  table: lancedb.Table,
  text: string,
  where: string | null,
  limit: number,
  withVectors: boolean,
): Promise<{ hits: Candidate[]; termCount: number }> {
  const terms = await table.tokenize(text, { column: TEXT_COLUMN });
  const termCount = new Set(terms.map((term) => term.text)).size;
  if (termCount === 0) return { hits: [], termCount };
  const columns: string[] = [...CHUNK_COLUMNS, '_score'];
  if (withVectors) columns.push(VECTOR_COLUMN);
  let search = table.query().fullTextSearch(new lancedb.MatchQuery(text, TEXT_COLUMN));
  if (where !== null) search = search.where(where);
  const rows: Record<string, unknown>[] = await search.select(columns).limit(limit).toArray();
  const hits = rows.map((row) => ({
    chunk: chunkOf(row),
    bm25: row._score as number,
    vector: withVectors ? vectorOf(row) : null,
  }));
  return { hits, termCount };
}

/** How long a process waits for another one's migration of the shared table before it gives up. */
const MIGRATION_WAIT_MS = 5 * 60 * 1000;

/** Takes the migration lock folder; a lock whose process is gone is taken over. False when a live process holds it. */
async function takeMigrationLock(lock: string): Promise<boolean> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await mkdir(lock);
      await writeFile(join(lock, 'pid'), String(process.pid));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => ''));
      if (holder > 0 && processIsAlive(holder)) return false;
      // No pid yet (its holder is between mkdir and writeFile) counts as alive unless still so on the second look.
      if (!(holder > 0) && attempt === 0) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        continue;
      }
      await rm(lock, { recursive: true, force: true });
    }
  }
  return false;
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The BM25 index on the text, spelled out so that an upgrade of LanceDB's defaults cannot change how it analyzes. */
const TEXT_INDEX = () =>
  lancedb.Index.fts({
    baseTokenizer: 'simple',
    language: 'English',
    lowercase: true,
    stem: true,
    removeStopWords: true,
    asciiFolding: true,
    withPosition: false,
  });

async function hasTextIndex(table: lancedb.Table): Promise<boolean> {
  return (await table.listIndices()).some((index) => index.columns.includes(TEXT_COLUMN));
}

async function ensureTextIndex(table: lancedb.Table): Promise<void> {
  if (await hasTextIndex(table)) return;
  try {
    await table.createIndex(TEXT_COLUMN, { config: TEXT_INDEX(), replace: false });
  } catch (error) {
    // Another process opening the same table may have created it first.
    if (!(await hasTextIndex(table))) throw error;
  }
}
