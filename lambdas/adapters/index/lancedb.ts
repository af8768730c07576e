/**
 * The local KnowledgeIndex: an embedded LanceDB database on disk with one table per dataset (agent, environment,
 * knowledge base), and beside it the lexical index of each dataset (lexical-store.ts on disk, lexical-postings.ts in
 * memory). A query scores every chunk that holds one of its terms with the lexical score (lexical-score.ts), which
 * depends on the dataset queried alone; with an embedder, also cosine vector search in LanceDB, the two scores
 * combined. The API process and the worker process may open the same directory: every read checks for
 * the latest committed version. The writes of a dataset run one commit at a time in a process, documents waiting
 * together in one commit (lancedb-group-commit.ts), and one process writes a directory (the local runtime holds a
 * worker lock): LanceDB does not detect two concurrent merge-inserts of the same new rows, and would keep both. Layout, scores and filter semantics are described in docs/retrieval.md.
 *
 * Over 400 lines: the port's operations, the open tables and the migrations of what earlier versions wrote are one
 * object's state.
 */

import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import type { DatasetRef } from '#core/knowledge/document';
import type { Environment } from '#core/knowledge/fields';
import {
  assertChunksOfDocument,
  CHUNK_METADATA_KEYS,
  type ChunkMetadata,
  type DocumentChunkPage,
  type DocumentChunkRange,
  type DocumentRef,
  type Embedder,
  type IndexedChunk,
  type IndexFilter,
  type IndexHit,
  type IndexQuery,
  type KnowledgeIndex,
} from '#ports/processing';
import { tableWrites } from './lancedb-group-commit';
import {
  byScoreThenPosition,
  cosineDistance,
  DEFAULT_LEXICAL_WEIGHT,
  hybridScore,
  vectorScore,
} from './lancedb-scores';
import { buildWhereClause, documentClause, scopeClause, sqlString } from './lancedb-sql';
import {
  CHUNK_COLUMNS,
  type ChunkRow,
  candidateKey,
  chunkOf,
  DATASET_SEPARATOR,
  DatasetTable,
  DEFAULT_INDEX_REFRESH_DELAY_MS,
  datasetTableName,
  ensureTextIndex,
  hasTextIndex,
  MERGE_KEY,
  MIGRATION_WAIT_MS,
  oneWriteAtATime,
  schemaFor,
  tableNameFor,
  takeMigrationLock,
  VECTOR_COLUMN,
  vectorOf,
  withCommitRetry,
} from './lancedb-tables';
import { analyze } from './lexical-analyzer';
import { LexicalPostings, type PostingHit } from './lexical-postings';
import { lexicalScore, type WeightedQuery, weightedQuery } from './lexical-score';
import { LEXICAL_STORE_FILE, type LexicalChunk, LexicalStore, lexicalChunksOf } from './lexical-store';

/** Hybrid search takes the lexical best, CANDIDATES_PER_RESULT a result (at least MIN_CANDIDATES), as candidates. */
const CANDIDATES_PER_RESULT = 3;
const MIN_CANDIDATES = 30;
/** The file of the term statistics before the lexical index held the chunks (removed once that is collected). */
const OLD_STATISTICS_FILE = 'term-statistics.sqlite';
/** Hybrid search also takes this many nearest vectors a result (at least MIN_NEAREST). */
const NEAREST_PER_RESULT = 4;
const MIN_NEAREST = 40;

/** Dataset tables a handle keeps open by default; the least recently used idle one is closed past this. */
const DEFAULT_MAX_OPEN_TABLES = 64;

export interface LanceKnowledgeIndexOptions {
  /** Adds a vector column (in a table of its own: `tableNameFor`) and hybrid search; without it the index is lexical. */
  readonly embedder?: Embedder;
  /** Weight of the lexical score in the hybrid score, 0..1 (default 0.3: DEFAULT_LEXICAL_WEIGHT says why). */
  readonly lexicalWeight?: number;
  /** Quiet time after a write before new rows are folded into the BM25 index (default 1 s). */
  readonly indexRefreshDelayMs?: number;
  /** Dataset tables kept open (default 64); past it the least recently used idle one is closed, to be opened again. */
  readonly maxOpenTables?: number;
}

function datasetOfRef(ref: DocumentRef): DatasetRef {
  return { agentId: ref.agentId, environment: ref.environment, knowledgeBaseId: ref.knowledgeBaseId };
}

interface Candidate {
  readonly chunk: Omit<IndexedChunk, 'vector'>;
  readonly vector: Float32Array | null;
}

// ---------------------------------------------------------------------------------------------------------------
// SQL: the label filters, the only place values enter a predicate. The tenant scope is the table itself.

export class LanceKnowledgeIndex implements KnowledgeIndex {
  private readonly lexicalWeight: number;
  private readonly refreshDelayMs: number;
  private readonly maxOpenTables: number;
  /** Open dataset tables by name, least recently used first (for tests: `openTableCount`). */
  private readonly tables = new Map<string, Promise<DatasetTable>>();
  /** The in-memory postings of datasets queried, by table name, least recently used first (as many as tables). */
  private readonly postings = new Map<string, LexicalPostings>();
  private closed = false;

  private constructor(
    private readonly directory: string,
    private readonly connection: lancedb.Connection,
    private readonly lexical: LexicalStore,
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
    const lexical = new LexicalStore(join(directory, LEXICAL_STORE_FILE));
    const index = new LanceKnowledgeIndex(
      resolve(directory),
      connection,
      lexical,
      tableNameFor(options.embedder),
      options.embedder,
      options,
    );
    try {
      await index.migrateSharedTable();
      await index.collectMissingLexicalIndex();
      for (const suffix of ['', '-wal', '-shm'])
        await rm(join(directory, OLD_STATISTICS_FILE + suffix), { force: true });
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
    const lexical = () => lexicalChunksOf(chunks);
    // What a staged write cut off left of the document goes first (one read by key when there is none).
    await this.collectLeftStages(ref);
    // In one commit, with the documents whose writes wait beside it (lancedb-group-commit.ts): the new chunks
    // upserted and the document's other chunks deleted, so a reader sees the old set or the new one, never a mix, and
    // a repeated call changes nothing. Then the lexical index.
    await this.withDataset(ref, true, undefined, async (dataset) => {
      await tableWrites(this.directory, dataset.table.name).replace(
        { table: dataset.table, lexical: this.lexical },
        { documentId: ref.documentId, rows, lexical },
      );
      dataset.scheduleRefresh();
    });
  }

  /**
   * A staged write (docs/retrieval.md, "Staged writes"): the parts' rows are written under a stage of the document that
   * no reader sees (in LanceDB under a stand-in document id, in the lexical index in its staging table), a part at a
   * time, so the caller never holds the document's chunks, their analyzed terms or their Arrow copy at once; then one
   * LanceDB commit swaps the stage for the document's rows and one lexical index transaction does the same, and the
   * old rows, hidden by that commit, are deleted. A failure before the swap leaves the old chunks visible; the stage's
   * rows are deleted then, or by the next write of the document when this process died.
   */
  async replaceDocumentInParts(ref: DocumentRef, parts: AsyncIterable<readonly IndexedChunk[]>): Promise<number> {
    return this.withDataset(ref, true, 0, async (dataset) => {
      const name = dataset.table.name;
      const writes = tableWrites(this.directory, name);
      // One staged write of a document at a time in this process (one process writes a directory): it may then
      // collect every stage it finds as left by a write that was cut off.
      return this.oneStagedWriteAtATime(ref, async () => {
        await this.collectStages(dataset, ref.documentId);
        const stage = randomBytes(8).toString('hex');
        this.lexical.beginStage(name, ref.documentId, stage);
        const staged = stagedDocumentId(ref.documentId, stage);
        const retired = retiredDocumentId(ref.documentId, stage);
        const retiredSuffix = retired.slice(ref.documentId.length);
        let count = 0;
        try {
          count = await this.stageParts(dataset, ref, stage, parts);
          // What the last part left (the document's text, which its chunks are slices of) is garbage only now that
          // stageParts' frame is gone: collected before the commit's peak.
          collectGarbage();
          await writes.other(async () => {
            // One commit: the stage's rows become the document's, its old rows a retired stand-in nobody reads.
            await withCommitRetry(() =>
              dataset.table.update({
                where: `documentId = ${sqlString(ref.documentId)} OR documentId = ${sqlString(staged)}`,
                // Lance's SQL has no CASE: the retired id is appended to both, and the stage's id with it removed.
                valuesSql: {
                  documentId: `replace(concat(documentId, ${sqlString(retiredSuffix)}), ${sqlString(` staged ${stage}${retiredSuffix}`)}, '')`,
                },
              }),
            );
            this.lexical.commitStage(name, ref.documentId, stage);
          });
        } catch (error) {
          await this.dropStage(dataset, ref.documentId, stage).catch(() => undefined);
          throw error;
        }
        await writes.other(async () => {
          await withCommitRetry(() => dataset.table.delete(`documentId = ${sqlString(retired)}`));
        });
        dataset.scheduleRefresh();
        return count;
      });
    });
  }

  /** The parts of a staged write, written under its stage one at a time; how many chunks they held. */
  private async stageParts(
    dataset: DatasetTable,
    ref: DocumentRef,
    stage: string,
    parts: AsyncIterable<readonly IndexedChunk[]>,
  ): Promise<number> {
    let count = 0;
    // What came before the parts (the file's bytes, once its text was out) goes before the first part adds to it.
    collectGarbage();
    for await (const part of parts) {
      assertChunksOfDocument(ref, part);
      part.forEach((chunk, i) => {
        if (chunk.position !== count + i) {
          throw new Error(`Chunk ${chunk.chunkId} is at position ${chunk.position}, expected ${count + i}`);
        }
      });
      if (part.length === 0) continue;
      await this.stagePart(dataset, ref, stage, part);
      count += part.length;
      // The part's rows, Arrow copy and analyzed terms are garbage now; V8 would let a few parts' worth pile up.
      collectGarbage();
    }
    return count;
  }

  /** One part of a staged write: its rows under the stage's stand-in id, and its lexical chunks in the stage. */
  private async stagePart(
    dataset: DatasetTable,
    ref: DocumentRef,
    stage: string,
    part: readonly IndexedChunk[],
  ): Promise<void> {
    const staged = stagedDocumentId(ref.documentId, stage);
    const rows = (await this.rowsOf(part)).map((row) => ({ ...row, documentId: staged }));
    const name = dataset.table.name;
    await tableWrites(this.directory, name).other(() =>
      withCommitRetry(() => dataset.table.add(rows)).then(() => undefined),
    );
    this.lexical.stageChunks(name, ref.documentId, stage, lexicalChunksOf(part));
  }

  private oneStagedWriteAtATime<T>(ref: DocumentRef, write: () => Promise<T>): Promise<T> {
    return oneWriteAtATime(['staged', this.directory, this.tableNameOf(ref), ref.documentId].join('\u0000'), write);
  }

  /**
   * Deletes what stages of the document left (rows under their stand-in ids, staged lexical chunks), after the staged
   * write of the document this process may be running.
   */
  private async collectLeftStages(ref: DocumentRef): Promise<void> {
    if (this.lexical.stagesOf(this.tableNameOf(ref), ref.documentId).length === 0) return;
    await this.oneStagedWriteAtATime(ref, () =>
      this.withDataset(ref, false, undefined, (dataset) => this.collectStages(dataset, ref.documentId)),
    );
  }

  /** Deletes what the stages of the document left (rows under their stand-in ids, staged lexical chunks). */
  private async collectStages(dataset: DatasetTable, documentId: string): Promise<void> {
    for (const stage of this.lexical.stagesOf(dataset.table.name, documentId)) {
      await this.dropStage(dataset, documentId, stage);
    }
  }

  private async dropStage(dataset: DatasetTable, documentId: string, stage: string): Promise<void> {
    const ids = [stagedDocumentId(documentId, stage), retiredDocumentId(documentId, stage)].map(sqlString);
    await tableWrites(this.directory, dataset.table.name).other(async () => {
      await withCommitRetry(() => dataset.table.delete(`documentId IN (${ids.join(', ')})`));
      this.lexical.dropStage(dataset.table.name, documentId, stage);
    });
  }

  async deleteDocument(ref: DocumentRef): Promise<void> {
    await this.collectLeftStages(ref);
    await this.writeOf(
      ref,
      (table) => table.delete(documentClause(ref)),
      (name) => this.lexical.setDocument(name, ref.documentId, null),
    );
  }

  async updateDocumentMetadata(ref: DocumentRef, metadata: ChunkMetadata): Promise<void> {
    const values: Record<string, string | null> = {};
    for (const column of CHUNK_METADATA_KEYS) values[column] = metadata[column];
    await this.writeOf(
      ref,
      (table) => table.update({ where: documentClause(ref), values }),
      (name) => this.lexical.setMetadata(name, ref.documentId, metadata),
    );
  }

  /**
   * A write of one document's rows, in its table's write queue (after the writes asked for before it), retried on
   * commit conflicts; then the same change to its lexical index (`lexical`, given the table's name). Nothing when the
   * dataset has no table.
   */
  private async writeOf(
    ref: DocumentRef,
    write: (table: lancedb.Table) => Promise<unknown>,
    lexical: (name: string) => void,
  ): Promise<void> {
    await this.withDataset(ref, false, undefined, async (dataset) => {
      await tableWrites(this.directory, dataset.table.name).other(async () => {
        await withCommitRetry(() => write(dataset.table));
        lexical(dataset.table.name);
      });
      dataset.scheduleRefresh();
    });
  }

  async countDocumentChunks(ref: DocumentRef): Promise<number> {
    return this.withDataset(ref, false, 0, (dataset) => dataset.table.countRows(documentClause(ref)));
  }

  /**
   * A page of the document's chunks in position order, from the lexical index: the very rows a lexical hit is read
   * from (lexicalBest), with the same fields a hybrid hit reads from the table.
   */
  async listDocumentChunks(ref: DocumentRef, range: DocumentChunkRange): Promise<DocumentChunkPage> {
    const name = this.tableNameOf(ref);
    const stored = this.lexical.documentChunks(name, ref.documentId, range.afterPosition ?? -1, range.limit);
    return {
      chunks: stored.map((chunk) => ({ ...datasetOfRef(ref), documentId: ref.documentId, ...chunk })),
      total: this.lexical.documentChunkCount(name, ref.documentId),
    };
  }

  /**
   * Every chunk of a dataset (without vectors), in no particular order: for checks and tools that need the index's
   * whole content, such as the fault-injection proof. Reads all of it at once, so not for serving requests.
   */
  async listChunks(scope: DatasetRef): Promise<Omit<IndexedChunk, 'vector'>[]> {
    return this.withDataset(scope, false, [], async (dataset) => {
      // A plain query (no search) has no limit unless given one.
      let rows = dataset.table.query();
      if (this.lexical.hasStages(dataset.table.name)) rows = rows.where(NOT_STAGED);
      return ((await rows.select([...CHUNK_COLUMNS]).toArray()) as Record<string, unknown>[]).map(chunkOf);
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
    const terms = analyze(query.text);
    if (!vector) {
      // The lexical index alone: no LanceDB read.
      return this.lexicalBest(query, terms, query.limit).hits.map(({ chunk, score }) => ({ chunk, score }));
    }
    return this.withDataset(query.scope, false, [], async ({ table }) =>
      this.hybridQuery(table, query, where, vector, terms),
    );
  }

  /**
   * The `count` best chunks of the query's dataset by the lexical score, under its filters, with their stored fields,
   * and the query's weights. A chunk the postings name but the store no longer holds (its document written between
   * the two reads) sends the postings to catch up, and the query runs again.
   */
  private lexicalBest(
    query: IndexQuery,
    terms: readonly string[],
    count: number,
  ): { hits: { chunk: Omit<IndexedChunk, 'vector'>; score: number }[]; weighted: WeightedQuery } {
    const name = this.tableNameOf(query.scope);
    const postings = this.postingsOf(name);
    for (let attempt = 1; ; attempt++) {
      postings.sync();
      const weighted = weightedQuery(terms, this.lexical.statistics(name, terms));
      const best: PostingHit[] = postings.top(weighted, count, query.filters);
      const hits = [];
      for (const { document, position, score } of best) {
        const stored = this.lexical.storedChunk(name, document, position);
        if (stored) hits.push({ chunk: { ...query.scope, documentId: document, ...stored }, score });
      }
      if (hits.length === best.length || attempt === 3) return { hits, weighted };
    }
  }

  /** The in-memory postings of the dataset table `name`; the least recently used past `maxOpenTables` are dropped. */
  private postingsOf(name: string): LexicalPostings {
    let postings = this.postings.get(name);
    if (postings) this.postings.delete(name);
    else postings = new LexicalPostings(this.lexical, name);
    this.postings.set(name, postings);
    for (const old of this.postings.keys()) {
      if (this.postings.size <= this.maxOpenTables) break;
      this.postings.delete(old);
    }
    return postings;
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
    this.postings.clear();
    this.connection.close();
    this.lexical.close();
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
      // The lexical index first: a table without it is one an earlier version wrote, which `open` collects it for.
      this.lexical.ensureDataset(name);
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
    const tables: DatasetTable[] = [];
    // No eviction here: it could close a table collected a moment before, which the caller is about to use.
    for (const name of await this.datasetTableNames()) {
      const dataset = await this.tableNamed(name, false, false);
      if (dataset) tables.push(dataset);
    }
    return tables;
  }

  /** Names of this index's dataset tables in the directory. */
  private async datasetTableNames(): Promise<string[]> {
    const prefix = `${this.space}${DATASET_SEPARATOR}`;
    return (await this.connection.tableNames()).filter(
      (name) => name.startsWith(prefix) && /^[0-9a-f]{32}$/.test(name.slice(prefix.length)),
    );
  }

  /**
   * Earlier versions kept the chunks of every dataset in one table named after the vector space, so BM25's statistics
   * spanned every tenant. Its rows move, dataset by dataset, into their own tables (a merge on the chunk's identity,
   * so a migration cut off and run again adds nothing twice); the shared table is dropped last. One process migrates
   * at a time (a lock folder holding its pid); another waits for it.
   */
  private async migrateSharedTable(): Promise<void> {
    const pending = async () => (await this.connection.tableNames()).includes(this.space);
    await this.onceAcrossProcesses(`.migrating-${this.space}`, pending, async () => {
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
        const chunks = (await shared.query().where(scopeClause(scope)).select(columns).toArray()).map(
          (row: Record<string, unknown>) => {
            const vector = vectorOf(row);
            return vector ? { ...chunkOf(row), vector: [...vector] } : chunkOf(row);
          },
        );
        await this.withDataset(scope, true, undefined, async (dataset) => {
          await withCommitRetry(() =>
            dataset.table.mergeInsert(MERGE_KEY).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(chunks),
          );
          this.lexical.setDocuments(dataset.table.name, lexicalByDocument(chunks));
          await dataset.refreshNow();
        });
      }
      shared.close();
      await this.connection.dropTable(this.space);
    });
  }

  /**
   * Tables written before the lexical index existed have none: it is collected from the tables' rows (one read of each
   * such table, once; `open` waits for it).
   */
  private async collectMissingLexicalIndex(): Promise<void> {
    const missing = async () =>
      (await this.datasetTableNames()).filter((name) => !this.lexical.hasDataset(name)).length > 0;
    await this.onceAcrossProcesses(`.lexical-${this.space}`, missing, async () => {
      for (const name of await this.datasetTableNames()) {
        if (this.lexical.hasDataset(name)) continue;
        const dataset = await this.tableNamed(name, false, false);
        if (!dataset) continue;
        const rows: Record<string, unknown>[] = await dataset.table
          .query()
          .select([...CHUNK_COLUMNS])
          .toArray();
        this.lexical.setDocuments(name, lexicalByDocument(rows.map(chunkOf)));
      }
    });
  }

  /**
   * Runs `work` while `pending()` says it is needed, in one process at a time (a lock folder in the directory holding
   * its pid, taken over when that process is gone); another process waits until it is no longer pending.
   */
  private async onceAcrossProcesses(
    lockName: string,
    pending: () => Promise<boolean>,
    work: () => Promise<void>,
  ): Promise<void> {
    if (!(await pending())) return;
    const lock = join(this.directory, lockName);
    if (!(await takeMigrationLock(lock))) {
      const deadline = Date.now() + MIGRATION_WAIT_MS;
      while (await pending()) {
        if (Date.now() > deadline) throw new Error(`Another process has held ${lock} for too long`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return;
    }
    try {
      // Another process may have done the work between the first look and the lock.
      if (await pending()) await work();
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
   * Hybrid: the lexical index's best and the nearest vectors under the same filters, each candidate scored on both
   * scales (the lexical score from its text, its cosine from its stored vector), then combined.
   */
  private async hybridQuery(
    table: lancedb.Table,
    query: IndexQuery,
    where: string | null,
    vector: readonly number[],
    terms: readonly string[],
  ): Promise<IndexHit[]> {
    let nearest = table
      .query()
      .nearestTo([...vector])
      .distanceType('cosine');
    // Rows of a stage (a staged write in flight, or the old rows it hides until they are deleted) are no chunk.
    const visible = this.lexical.hasStages(table.name) ? NOT_STAGED : null;
    const clause = [where, visible].filter((part) => part !== null).join(' AND ');
    if (clause !== '') nearest = nearest.where(clause);
    const nearestRows = (await nearest
      .select([...CHUNK_COLUMNS, VECTOR_COLUMN, '_distance'])
      .limit(Math.max(query.limit * NEAREST_PER_RESULT, MIN_NEAREST))
      .toArray()) as Record<string, unknown>[];
    const { hits: lexical, weighted } = this.lexicalBest(
      query,
      terms,
      Math.max(query.limit * CANDIDATES_PER_RESULT, MIN_CANDIDATES),
    );
    const candidates = new Map<string, Candidate>();
    for (const row of nearestRows) {
      const chunk = chunkOf(row);
      candidates.set(candidateKey(chunk), { chunk, vector: vectorOf(row) });
    }
    const withoutVector = lexical.filter(({ chunk }) => !candidates.has(candidateKey(chunk)));
    const vectors = await vectorsOf(
      table,
      withoutVector.map(({ chunk }) => chunk.chunkId),
    );
    for (const { chunk } of withoutVector) {
      candidates.set(candidateKey(chunk), { chunk, vector: vectors.get(chunk.chunkId) ?? null });
    }
    return [...candidates.values()]
      .map(({ chunk, vector: stored }) => {
        const parts = {
          lexical: lexicalScore(weighted, chunk.text, chunk.position),
          vector: stored ? vectorScore(cosineDistance(vector, stored)) : 0,
        };
        return { chunk, score: hybridScore(parts.lexical, parts.vector, this.lexicalWeight), parts };
      })
      .sort(byScoreThenPosition)
      .slice(0, query.limit);
  }
}

/**
 * The stand-in document ids of a staged write's rows in LanceDB: the rows of its stage, and the old rows its commit
 * hides until they are deleted. A document id never holds a space (a UUID, or a custom id of letters, digits and
 * `._:@-`), so no stand-in is a document's id.
 */
function stagedDocumentId(documentId: string, stage: string): string {
  return `${documentId} staged ${stage}`;
}

function retiredDocumentId(documentId: string, stage: string): string {
  return `${documentId} retired ${stage}`;
}

/**
 * A full garbage collection, where the process allows it (`--expose-gc`: the local runtime's worker and the ingestion
 * benchmark's child, lib/local/worker-process.ts). Between the parts of a staged write, so that the worker's peak holds
 * one part's garbage, not the 150 MB or so of several parts' that V8 lets pile up before it collects, which the
 * process's RSS then keeps (docs/processing.md, "Memory"). About 150 ms a part with a 50 MB text in the heap: 2 s
 * over its 14 parts, against 180 MB less at the peak.
 */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** The rows that are chunks: none of a stage. */
const NOT_STAGED = "documentId NOT LIKE '% %'";

/** The stored vectors of these chunks of a table, by chunkId. */
async function vectorsOf(table: lancedb.Table, chunkIds: readonly string[]): Promise<Map<string, Float32Array>> {
  const vectors = new Map<string, Float32Array>();
  if (chunkIds.length === 0) return vectors;
  const rows: Record<string, unknown>[] = await table
    .query()
    .where(`chunkId IN (${chunkIds.map(sqlString).join(', ')}) AND ${NOT_STAGED}`)
    .select(['chunkId', VECTOR_COLUMN])
    .toArray();
  for (const row of rows) {
    const stored = vectorOf(row);
    if (stored) vectors.set(row.chunkId as string, stored);
  }
  return vectors;
}

/** The lexical index's chunks of these chunks, by document. */
function lexicalByDocument(chunks: readonly Omit<IndexedChunk, 'vector'>[]): Map<string, LexicalChunk[]> {
  const byDocument = new Map<string, Omit<IndexedChunk, 'vector'>[]>();
  for (const chunk of chunks) {
    const list = byDocument.get(chunk.documentId) ?? [];
    list.push(chunk);
    byDocument.set(chunk.documentId, list);
  }
  return new Map([...byDocument].map(([documentId, list]) => [documentId, lexicalChunksOf(list)]));
}
