/**
 * The lexical index of each dataset of the local index, on disk (docs/retrieval.md, "Scores"): every chunk with the
 * terms its text holds (how often) and the fields a hit returns, and the dataset's term statistics (how many chunks it
 * holds, how many contain each term) for the weights of the lexical score. One SQLite file beside the LanceDB tables
 * (`node:sqlite`, Node 22, WAL mode), which every process reading the index opens; lexical-postings.ts keeps the
 * inverted form in memory and follows this file's changes.
 *
 * Each write of a document replaces its chunks and applies the difference to the statistics in one transaction, and
 * gives the document the dataset's next generation: a reader that has seen generation g reloads exactly the documents
 * written after it. A replay of the same write changes nothing but the generation, and one cut off between the
 * LanceDB commit and this one is completed by the redelivery that processes the document again.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { CHUNK_METADATA_KEYS, type ChunkMetadata, type IndexedChunk } from '#ports/processing';
import { analyzeChunk } from './lexical-analyzer';
import type { TermStatistics } from './lexical-score';

/** A chunk as the lexical index keeps it: the fields a hit returns, its length and its terms with their counts. */
export interface LexicalChunk extends Pick<IndexedChunk, 'chunkId' | 's3Key' | 'position' | 'text'>, ChunkMetadata {
  readonly length: number;
  readonly counts: ReadonlyMap<string, number>;
}

/**
 * What the in-memory postings read of a chunk: no text; its distinct terms by id, each with its count in the chunk, as
 * pairs of little-endian uint32 (`forEachTermPair` reads them).
 */
export interface ChunkTerms {
  readonly document: string;
  readonly position: number;
  readonly length: number;
  readonly label1: string | null;
  readonly label2: string | null;
  /** Null when it holds none (SQLite stores an empty blob as NULL). */
  readonly terms: Uint8Array | null;
}

/** A term of a dataset's dictionary: its id, and how many chunks hold it. */
export interface TermEntry {
  readonly term: string;
  readonly id: number;
  readonly chunks: number;
}

/** A chunk's stored fields, for a hit. */
export type StoredChunk = Pick<IndexedChunk, 'chunkId' | 's3Key' | 'position' | 'text'> & ChunkMetadata;

export const LEXICAL_STORE_FILE = 'lexical-index.sqlite';

/** How long a write waits for another process's transaction before it fails (SQLite's busy timeout). */
const BUSY_TIMEOUT_MS = 10_000;

// The text last: a row is read up to its last wanted column, and the postings never want the text.
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS datasets (
    dataset TEXT PRIMARY KEY, chunks INTEGER NOT NULL, generation INTEGER NOT NULL, terms INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS terms (
    dataset TEXT NOT NULL, term TEXT NOT NULL, id INTEGER NOT NULL, chunks INTEGER NOT NULL,
    PRIMARY KEY (dataset, term)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX IF NOT EXISTS terms_by_id ON terms (dataset, id);
  CREATE TABLE IF NOT EXISTS documents (
    dataset TEXT NOT NULL, document TEXT NOT NULL, generation INTEGER NOT NULL, PRIMARY KEY (dataset, document)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS documents_by_generation ON documents (dataset, generation);
  CREATE TABLE IF NOT EXISTS chunks (
    dataset TEXT NOT NULL, document TEXT NOT NULL, position INTEGER NOT NULL, length INTEGER NOT NULL,
    label1 TEXT, label2 TEXT, terms BLOB, chunkId TEXT NOT NULL, s3Key TEXT NOT NULL,
    svc_internal_meta1 TEXT, svc_internal_meta2 TEXT, svc_internal_meta3 TEXT, svc_internal_meta4 TEXT,
    text TEXT NOT NULL
  );
  CREATE UNIQUE INDEX IF NOT EXISTS chunks_by_position ON chunks (dataset, document, position);
  CREATE TABLE IF NOT EXISTS stages (
    dataset TEXT NOT NULL, document TEXT NOT NULL, stage TEXT NOT NULL, PRIMARY KEY (dataset, document, stage)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS staged_chunks (
    dataset TEXT NOT NULL, document TEXT NOT NULL, stage TEXT NOT NULL, position INTEGER NOT NULL,
    length INTEGER NOT NULL, label1 TEXT, label2 TEXT, terms BLOB, chunkId TEXT NOT NULL, s3Key TEXT NOT NULL,
    svc_internal_meta1 TEXT, svc_internal_meta2 TEXT, svc_internal_meta3 TEXT, svc_internal_meta4 TEXT,
    text TEXT NOT NULL
  );
  CREATE UNIQUE INDEX IF NOT EXISTS staged_chunks_by_position ON staged_chunks (dataset, document, stage, position);
`;

/** The columns a staged chunk moves into `chunks` with when its stage is committed. */
const CHUNK_ROW_COLUMNS = `dataset, document, position, length, label1, label2, terms, chunkId, s3Key, ${CHUNK_METADATA_KEYS.filter((key) => key.startsWith('svc_')).join(', ')}, text`;

/** The fields a hit returns, in the order of the columns that hold them. */
const STORED_FIELDS = ['chunkId', 's3Key', 'position', 'text', ...CHUNK_METADATA_KEYS] as const;
const STORED_COLUMNS = STORED_FIELDS.join(', ');
const TERMS_COLUMNS = 'document, position, length, label1, label2, terms';

/**
 * `node:sqlite`, loaded on first use. Node 22 marks it experimental and says so on stderr once per process; that one
 * line is kept out of every start of the runtime. (Under jest `process` is the sandbox's copy, so each test worker
 * still prints it once.)
 */
function sqlite(): typeof import('node:sqlite') {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (String(warning).includes('SQLite')) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    const module = process.getBuiltinModule?.('node:sqlite');
    if (!module) throw new Error('The local index needs Node 22.13 or later (node:sqlite); npm scripts run Node 22');
    return module;
  } finally {
    process.emitWarning = emitWarning;
  }
}

/** The chunks of a document as the lexical index keeps them (analyzed here). */
export function lexicalChunksOf(chunks: readonly Omit<IndexedChunk, 'vector'>[]): LexicalChunk[] {
  return chunks.map((chunk) => {
    const { terms, length } = analyzeChunk(chunk.text);
    const counts = new Map<string, number>();
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
    return {
      chunkId: chunk.chunkId,
      s3Key: chunk.s3Key,
      position: chunk.position,
      text: chunk.text,
      label1: chunk.label1,
      label2: chunk.label2,
      svc_internal_meta1: chunk.svc_internal_meta1,
      svc_internal_meta2: chunk.svc_internal_meta2,
      svc_internal_meta3: chunk.svc_internal_meta3,
      svc_internal_meta4: chunk.svc_internal_meta4,
      length,
      counts,
    };
  });
}

export class LexicalStore {
  private readonly database: DatabaseSync;
  /**
   * Term ids known to this handle, by dataset: an id, once given to a term, is never changed or reused (a term whose
   * df falls to 0 keeps its row), so a cached id stays true whatever another process writes.
   */
  private readonly termIds = new Map<string, Map<string, number>>();
  private readonly statements: Record<
    | 'dataset'
    | 'termId'
    | 'newTerm'
    | 'addTermChunks'
    | 'termsSince'
    | 'termCount'
    | 'setTermCount'
    | 'termChunks'
    | 'ensureDataset'
    | 'nextGeneration'
    | 'addChunks'
    | 'putDocument'
    | 'changedDocuments'
    | 'documentTerms'
    | 'datasetTerms'
    | 'deleteChunks'
    | 'putChunk'
    | 'storedChunk'
    | 'documentChunks'
    | 'documentChunkCount'
    | 'setMetadata'
    | 'beginStage'
    | 'stagesOf'
    | 'anyStage'
    | 'putStagedChunk'
    | 'stagedTerms'
    | 'stagedCount'
    | 'documentChunkTerms'
    | 'moveStaged'
    | 'deleteStaged'
    | 'endStage',
    StatementSync
  >;

  constructor(path: string) {
    const { DatabaseSync } = sqlite();
    this.database = new DatabaseSync(path, { timeout: BUSY_TIMEOUT_MS });
    // WAL: readers in other processes never wait for the writer.
    this.database.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
    this.database.exec(SCHEMA);
    const prepare = (sql: string) => this.database.prepare(sql);
    this.statements = {
      dataset: prepare('SELECT chunks, generation FROM datasets WHERE dataset = ?'),
      termChunks: prepare('SELECT chunks FROM terms WHERE dataset = ? AND term = ?'),
      termId: prepare('SELECT id FROM terms WHERE dataset = ? AND term = ?'),
      termCount: prepare('SELECT terms FROM datasets WHERE dataset = ?'),
      newTerm: prepare('INSERT INTO terms (dataset, term, id, chunks) VALUES (?, ?, ?, 0) ON CONFLICT DO NOTHING'),
      addTermChunks: prepare('UPDATE terms SET chunks = chunks + ? WHERE dataset = ? AND id = ?'),
      termsSince: prepare('SELECT term, id, chunks FROM terms WHERE dataset = ? AND id >= ?'),
      ensureDataset: prepare(
        'INSERT INTO datasets (dataset, chunks, generation, terms) VALUES (?, 0, 0, 0) ON CONFLICT DO NOTHING',
      ),
      nextGeneration: prepare('UPDATE datasets SET generation = generation + 1 WHERE dataset = ? RETURNING generation'),
      addChunks: prepare('UPDATE datasets SET chunks = chunks + ? WHERE dataset = ?'),
      setTermCount: prepare('UPDATE datasets SET terms = ? WHERE dataset = ?'),
      putDocument: prepare(
        'INSERT INTO documents (dataset, document, generation) VALUES (?, ?, ?) ' +
          'ON CONFLICT DO UPDATE SET generation = excluded.generation',
      ),
      changedDocuments: prepare('SELECT document FROM documents WHERE dataset = ? AND generation > ?'),
      documentTerms: prepare(`SELECT ${TERMS_COLUMNS} FROM chunks WHERE dataset = ? AND document = ?`),
      datasetTerms: prepare(`SELECT ${TERMS_COLUMNS} FROM chunks WHERE dataset = ?`),
      deleteChunks: prepare('DELETE FROM chunks WHERE dataset = ? AND document = ?'),
      putChunk: prepare(
        `INSERT INTO chunks (dataset, document, length, terms, ${STORED_COLUMNS}) ` +
          `VALUES (?, ?, ?, ?, ${STORED_FIELDS.map(() => '?').join(', ')})`,
      ),
      storedChunk: prepare(`SELECT ${STORED_COLUMNS} FROM chunks WHERE dataset = ? AND document = ? AND position = ?`),
      // chunks_by_position serves both: a range of one document's positions, in order.
      documentChunks: prepare(
        `SELECT ${STORED_COLUMNS} FROM chunks WHERE dataset = ? AND document = ? AND position > ? ORDER BY position LIMIT ?`,
      ),
      documentChunkCount: prepare('SELECT COUNT(*) AS count FROM chunks WHERE dataset = ? AND document = ?'),
      setMetadata: prepare(
        `UPDATE chunks SET ${CHUNK_METADATA_KEYS.map((key) => `${key} = ?`).join(', ')} WHERE dataset = ? AND document = ?`,
      ),
      beginStage: prepare('INSERT INTO stages (dataset, document, stage) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
      stagesOf: prepare('SELECT stage FROM stages WHERE dataset = ? AND document = ?'),
      anyStage: prepare('SELECT 1 AS found FROM stages WHERE dataset = ? LIMIT 1'),
      putStagedChunk: prepare(
        `INSERT INTO staged_chunks (dataset, document, stage, length, terms, ${STORED_COLUMNS}) ` +
          `VALUES (?, ?, ?, ?, ?, ${STORED_FIELDS.map(() => '?').join(', ')})`,
      ),
      stagedTerms: prepare('SELECT terms FROM staged_chunks WHERE dataset = ? AND document = ? AND stage = ?'),
      stagedCount: prepare(
        'SELECT COUNT(*) AS count FROM staged_chunks WHERE dataset = ? AND document = ? AND stage = ?',
      ),
      documentChunkTerms: prepare('SELECT terms FROM chunks WHERE dataset = ? AND document = ?'),
      moveStaged: prepare(
        `INSERT INTO chunks (${CHUNK_ROW_COLUMNS}) SELECT ${CHUNK_ROW_COLUMNS} FROM staged_chunks ` +
          'WHERE dataset = ? AND document = ? AND stage = ? ORDER BY position',
      ),
      deleteStaged: prepare('DELETE FROM staged_chunks WHERE dataset = ? AND document = ? AND stage = ?'),
      endStage: prepare('DELETE FROM stages WHERE dataset = ? AND document = ? AND stage = ?'),
    };
  }

  /** Whether the dataset is in the lexical index (every dataset created by this version is, from before its first row). */
  hasDataset(dataset: string): boolean {
    return this.statements.dataset.get(dataset) !== undefined;
  }

  /** Starts a new, empty dataset; nothing if it exists. */
  ensureDataset(dataset: string): void {
    this.statements.ensureDataset.run(dataset);
  }

  /** The dataset's generation: how many document writes it has seen (-1: none, it is not in the index). */
  generation(dataset: string): number {
    const row = this.statements.dataset.get(dataset) as { generation: number } | undefined;
    return row?.generation ?? -1;
  }

  /** The dataset's chunk count and the document frequency of `terms` (a dataset without statistics: empty). */
  statistics(dataset: string, terms: readonly string[]): TermStatistics {
    const row = this.statements.dataset.get(dataset) as { chunks: number } | undefined;
    const documentFrequency = new Map<string, number>();
    for (const term of new Set(terms)) {
      const found = this.statements.termChunks.get(dataset, term) as { chunks: number } | undefined;
      if (found && found.chunks > 0) documentFrequency.set(term, found.chunks);
    }
    return { chunks: row?.chunks ?? 0, documentFrequency };
  }

  /** Makes `chunks` the document's chunks (null or none: it has none, as after its deletion), in one transaction. */
  setDocument(dataset: string, document: string, chunks: readonly LexicalChunk[] | null): void {
    this.transaction(() => this.applyDocument(dataset, document, chunks ?? []));
  }

  /** Sets many documents' chunks in one transaction (the lexical index of a dataset written before it existed). */
  setDocuments(dataset: string, documents: ReadonlyMap<string, readonly LexicalChunk[]>): void {
    this.transaction(() => {
      this.statements.ensureDataset.run(dataset);
      for (const [document, chunks] of documents) this.applyDocument(dataset, document, chunks);
    });
  }

  /** Sets the labels and custom metadata of every chunk of the document. */
  setMetadata(dataset: string, document: string, metadata: ChunkMetadata): void {
    this.transaction(() => {
      const values = CHUNK_METADATA_KEYS.map((key) => metadata[key]);
      const { changes } = this.statements.setMetadata.run(...values, dataset, document);
      if (Number(changes) > 0) this.touchDocument(dataset, document);
    });
  }

  // -------------------------------------------------------------------------------------------------------------
  // Staged writes (docs/retrieval.md, "Staged writes"): a large document's chunks arrive in parts under a stage, which
  // no reader sees (readers read `chunks` only), and become the document's chunks in one transaction.

  /** Registers a stage of the document before any of its rows is written, so that a stage cut off can be found. */
  beginStage(dataset: string, document: string, stage: string): void {
    this.statements.beginStage.run(dataset, document, stage);
  }

  /** The stages of the document begun and not committed or dropped (in flight, or left by a write cut off). */
  stagesOf(dataset: string, document: string): string[] {
    return (this.statements.stagesOf.all(dataset, document) as { stage: string }[]).map((row) => row.stage);
  }

  /** Whether any document of the dataset has a stage (then its LanceDB table may hold rows no reader may see). */
  hasStages(dataset: string): boolean {
    return this.statements.anyStage.get(dataset) !== undefined;
  }

  /** Adds chunks to a stage, in one transaction; their terms get ids now, the statistics change only at the commit. */
  stageChunks(dataset: string, document: string, stage: string, chunks: readonly LexicalChunk[]): void {
    this.transaction(() => {
      this.statements.ensureDataset.run(dataset);
      const ids = this.termIdsOf(dataset, chunks);
      for (const chunk of chunks) {
        const pairs: [number, number][] = [];
        for (const [term, count] of chunk.counts) pairs.push([ids.get(term) as number, count]);
        this.statements.putStagedChunk.run(
          dataset,
          document,
          stage,
          chunk.length,
          encodePairs(pairs),
          ...STORED_FIELDS.map((field) => chunk[field]),
        );
      }
    });
  }

  /** How many chunks the stage holds. */
  stagedChunkCount(dataset: string, document: string, stage: string): number {
    const row = this.statements.stagedCount.get(dataset, document, stage) as { count: number } | undefined;
    return Number(row?.count ?? 0);
  }

  /**
   * Makes the stage's chunks the document's chunks, in one transaction: the old ones go, the statistics change by
   * the difference, and the document gets the dataset's next generation (readers reload it whole). The chunks' terms
   * are read one row at a time: what this holds is a count per distinct term, never the document.
   */
  commitStage(dataset: string, document: string, stage: string): void {
    const { statements } = this;
    this.transaction(() => {
      statements.ensureDataset.run(dataset);
      const change = new Map<number, number>();
      let removed = 0;
      for (const row of statements.documentChunkTerms.iterate(dataset, document) as Iterable<{ terms: Uint8Array }>) {
        removed++;
        forEachTermPair(row.terms, (id) => change.set(id, (change.get(id) ?? 0) - 1));
      }
      let added = 0;
      for (const row of statements.stagedTerms.iterate(dataset, document, stage) as Iterable<{ terms: Uint8Array }>) {
        added++;
        forEachTermPair(row.terms, (id) => change.set(id, (change.get(id) ?? 0) + 1));
      }
      for (const [id, chunkCount] of change)
        if (chunkCount !== 0) statements.addTermChunks.run(chunkCount, dataset, id);
      statements.addChunks.run(added - removed, dataset);
      statements.deleteChunks.run(dataset, document);
      statements.moveStaged.run(dataset, document, stage);
      statements.deleteStaged.run(dataset, document, stage);
      statements.endStage.run(dataset, document, stage);
      this.touchDocument(dataset, document);
    });
  }

  /** Forgets a stage and its chunks (a staged write that failed, or one cut off, found by the next write). */
  dropStage(dataset: string, document: string, stage: string): void {
    this.transaction(() => {
      this.statements.deleteStaged.run(dataset, document, stage);
      this.statements.endStage.run(dataset, document, stage);
    });
  }

  /**
   * What a reader at generation `since` needs to catch up, read in one snapshot: the dataset's generation now, the
   * terms given an id from `fromTermId` on, and the chunk terms of every document written after `since` (all of the
   * dataset's when `since` is below 0), by document (a deleted document: an empty list).
   */
  changesSince(
    dataset: string,
    since: number,
    fromTermId: number,
  ): { generation: number; terms: TermEntry[]; documents: Map<string, ChunkTerms[]> } {
    return this.readSnapshot(() => {
      const generation = this.generation(dataset);
      const documents = new Map<string, ChunkTerms[]>();
      if (generation <= since) return { generation, terms: [], documents };
      const terms = this.statements.termsSince.all(dataset, fromTermId) as unknown as TermEntry[];
      if (since < 0) {
        for (const row of this.statements.datasetTerms.iterate(dataset) as Iterable<ChunkTerms>) {
          const list = documents.get(row.document);
          if (list) list.push(row);
          else documents.set(row.document, [row]);
        }
        return { generation, terms, documents };
      }
      const changed = this.statements.changedDocuments.all(dataset, since) as { document: string }[];
      for (const { document } of changed) {
        documents.set(document, this.statements.documentTerms.all(dataset, document) as unknown as ChunkTerms[]);
      }
      return { generation, terms, documents };
    });
  }

  /** The stored fields of a chunk, or undefined when the document has no chunk at that position (any more). */
  storedChunk(dataset: string, document: string, position: number): StoredChunk | undefined {
    const row = this.statements.storedChunk.get(dataset, document, position);
    return row ? ({ ...row } as unknown as StoredChunk) : undefined;
  }

  /** Up to `limit` of the document's chunks after `afterPosition` (-1: from the first), in position order. */
  documentChunks(dataset: string, document: string, afterPosition: number, limit: number): StoredChunk[] {
    return this.statements.documentChunks
      .all(dataset, document, afterPosition, limit)
      .map((row) => ({ ...row }) as unknown as StoredChunk);
  }

  /** How many chunks of the document the lexical index holds. */
  documentChunkCount(dataset: string, document: string): number {
    const row = this.statements.documentChunkCount.get(dataset, document) as { count: number } | undefined;
    return Number(row?.count ?? 0);
  }

  close(): void {
    if (this.database.isOpen) this.database.close();
  }

  private applyDocument(dataset: string, document: string, chunks: readonly LexicalChunk[]): void {
    const { statements } = this;
    statements.ensureDataset.run(dataset);
    // df changes by term id: minus what the document's stored chunks held, plus what its new ones hold.
    const change = new Map<number, number>();
    const stored = statements.documentTerms.all(dataset, document) as unknown as ChunkTerms[];
    for (const row of stored) {
      forEachTermPair(row.terms, (id) => change.set(id, (change.get(id) ?? 0) - 1));
    }
    const ids = this.termIdsOf(dataset, chunks);
    const encoded = chunks.map((chunk) => {
      const pairs: [number, number][] = [];
      for (const [term, count] of chunk.counts) {
        const id = ids.get(term) as number;
        pairs.push([id, count]);
        change.set(id, (change.get(id) ?? 0) + 1);
      }
      return encodePairs(pairs);
    });
    for (const [id, chunkCount] of change) if (chunkCount !== 0) statements.addTermChunks.run(chunkCount, dataset, id);
    statements.addChunks.run(chunks.length - stored.length, dataset);
    statements.deleteChunks.run(dataset, document);
    chunks.forEach((chunk, i) => {
      statements.putChunk.run(
        dataset,
        document,
        chunk.length,
        encoded[i],
        ...STORED_FIELDS.map((field) => chunk[field]),
      );
    });
    this.touchDocument(dataset, document);
  }

  /**
   * The ids of the chunks' terms in the dataset, giving the next ids to those that have none (inside the write's
   * transaction): the dataset's count of terms is the next id, read once and written once.
   */
  private termIdsOf(dataset: string, chunks: readonly LexicalChunk[]): Map<string, number> {
    let known = this.termIds.get(dataset);
    if (!known) {
      known = new Map();
      this.termIds.set(dataset, known);
    }
    let next: number | undefined;
    for (const chunk of chunks) {
      for (const term of chunk.counts.keys()) {
        if (known.has(term)) continue;
        const row = this.statements.termId.get(dataset, term) as { id: number } | undefined;
        if (row) {
          known.set(term, row.id);
          continue;
        }
        next ??= (this.statements.termCount.get(dataset) as { terms: number }).terms;
        this.statements.newTerm.run(dataset, term, next);
        known.set(term, next);
        next++;
      }
    }
    if (next !== undefined) this.statements.setTermCount.run(next, dataset);
    return known;
  }

  /** Gives the document the dataset's next generation, so that readers reload it. */
  private touchDocument(dataset: string, document: string): void {
    this.statements.ensureDataset.run(dataset);
    const { generation } = this.statements.nextGeneration.get(dataset) as { generation: number };
    this.statements.putDocument.run(dataset, document, generation);
  }

  private transaction(work: () => void): void {
    this.database.exec('BEGIN IMMEDIATE');
    try {
      work();
      this.database.exec('COMMIT');
    } catch (error) {
      if (this.database.isTransaction) this.database.exec('ROLLBACK');
      // Ids given inside the transaction are undone with it.
      this.termIds.clear();
      throw error;
    }
  }

  /** Reads in one snapshot (a deferred transaction: a writer's commit in between is not seen half). */
  private readSnapshot<T>(read: () => T): T {
    this.database.exec('BEGIN');
    try {
      return read();
    } finally {
      if (this.database.isTransaction) this.database.exec('COMMIT');
    }
  }
}

/** A chunk's terms as stored: (id, count) pairs of little-endian uint32. */
function encodePairs(pairs: readonly [number, number][]): Uint8Array {
  const bytes = new Uint8Array(pairs.length * 8);
  const view = new DataView(bytes.buffer);
  pairs.forEach(([id, count], i) => {
    view.setUint32(i * 8, id, true);
    view.setUint32(i * 8 + 4, count, true);
  });
  return bytes;
}

/**
 * Calls `visit` with each (id, count) pair of a chunk's stored terms. A callback, not a generator: the postings run it
 * once for every posting of a dataset when a process first reads it.
 */
export function forEachTermPair(bytes: Uint8Array | null, visit: (id: number, count: number) => void): void {
  if (!bytes) return;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let offset = 0; offset + 8 <= bytes.byteLength; offset += 8) {
    visit(view.getUint32(offset, true), view.getUint32(offset + 4, true));
  }
}
