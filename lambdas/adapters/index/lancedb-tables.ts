/**
 * The tables of the local index: their names (one per vector space and dataset), schema, BM25 index and rows, the
 * retry of conflicting commits, the queue of a table's creation, and `DatasetTable`, an open table with its own
 * index refresh (docs/retrieval.md, "Layout", "Writes", "Index refresh").
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { Field, FixedSizeList, Float32, Int32, Schema, Utf8 } from 'apache-arrow';
import type { DatasetRef } from '#core/knowledge/document';
import type { Environment } from '#core/knowledge/fields';
import { CHUNK_METADATA_KEYS, type Embedder, type IndexedChunk } from '#ports/processing';

/** Writes are followed, after this quiet time, by an optimize that folds new rows into the BM25 index. */
export const DEFAULT_INDEX_REFRESH_DELAY_MS = 1000;

/**
 * Superseded table versions are removed once this old. A reader in another process checks out the latest version
 * before every query, and a query takes milliseconds, so 30 s is ample; keeping more makes every optimize slower
 * (it reads every retained manifest: ~0.85 s with 1,000 versions against ~0.1 s with 10).
 */
const VERSION_RETENTION_MS = 30 * 1000;

const MAX_WRITE_ATTEMPTS = 8;

const LEXICAL_TABLE = 'chunks';

export const TEXT_COLUMN = 'text';

export const VECTOR_COLUMN = 'vector';

/** A chunk's identity: chunkId alone is the pipeline's business, the tenant columns make it safe across datasets. */
/** A chunk's identity within its dataset's table (chunkId alone is the pipeline's business). */
export const MERGE_KEY = ['documentId', 'chunkId'];

export const CHUNK_COLUMNS = [
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

export type ChunkRow = Omit<IndexedChunk, 'vector'> & { vector?: number[] };

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

export const DATASET_SEPARATOR = '__';

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
export async function withCommitRetry<T>(operation: () => Promise<T>): Promise<T> {
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

export function chunkOf(row: Record<string, unknown>): Omit<IndexedChunk, 'vector'> {
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

export function vectorOf(row: Record<string, unknown>): Float32Array | null {
  const value = row[VECTOR_COLUMN] as { toArray(): Float32Array } | null | undefined;
  return value ? value.toArray() : null;
}

export const candidateKey = (chunk: Omit<IndexedChunk, 'vector'>) => `${chunk.documentId}\u0000${chunk.chunkId}`;

/**
 * The operation running (or last queued) under each key in this process: the creation of a table (lancedb.ts,
 * `createTable`), across every handle this process has on the directory. Writes of rows go through
 * lancedb-group-commit.ts.
 */
const documentWrites = new Map<string, Promise<unknown>>();

export function oneWriteAtATime<T>(key: string, write: () => Promise<T>): Promise<T> {
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
export class DatasetTable {
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

/** How long a process waits for another one's migration of the shared table before it gives up. */
export const MIGRATION_WAIT_MS = 5 * 60 * 1000;

/** Takes the migration lock folder; a lock whose process is gone is taken over. False when a live process holds it. */
export async function takeMigrationLock(lock: string): Promise<boolean> {
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

export async function hasTextIndex(table: lancedb.Table): Promise<boolean> {
  return (await table.listIndices()).some((index) => index.columns.includes(TEXT_COLUMN));
}

export async function ensureTextIndex(table: lancedb.Table): Promise<void> {
  if (await hasTextIndex(table)) return;
  try {
    await table.createIndex(TEXT_COLUMN, { config: TEXT_INDEX(), replace: false });
  } catch (error) {
    // Another process opening the same table may have created it first.
    if (!(await hasTextIndex(table))) throw error;
  }
}
