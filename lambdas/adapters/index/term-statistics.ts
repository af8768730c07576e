/**
 * The term statistics of each dataset of the local index (docs/retrieval.md, "Scores"): how many chunks it holds and
 * how many of them contain each term, for the weights of the lexical score. They live in one SQLite file beside the
 * tables (`node:sqlite`, Node 22), which every process reading the index opens: a query reads a few rows by key.
 *
 * A document's contribution is kept with it (which terms its chunks contain, and how often), and replacing it applies
 * the difference to the totals in one transaction. So a replay of the same replacement changes nothing, and one cut
 * off between the chunks' commit and this one is completed by the redelivery that processes the document again.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { TermStatistics } from './lexical-score';

/** What a document adds to its dataset's statistics. */
export interface DocumentTerms {
  /** Its chunks. */
  readonly chunks: number;
  /** Of them, how many contain each term. */
  readonly terms: ReadonlyMap<string, number>;
}

export const STATISTICS_FILE = 'term-statistics.sqlite';

/** How long a write waits for another process's transaction before it fails (SQLite's busy timeout). */
const BUSY_TIMEOUT_MS = 10_000;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS datasets (dataset TEXT PRIMARY KEY, chunks INTEGER NOT NULL) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS terms (
    dataset TEXT NOT NULL, term TEXT NOT NULL, chunks INTEGER NOT NULL, PRIMARY KEY (dataset, term)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS documents (
    dataset TEXT NOT NULL, document TEXT NOT NULL, chunks INTEGER NOT NULL, terms TEXT NOT NULL,
    PRIMARY KEY (dataset, document)
  ) WITHOUT ROWID;
`;

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

export class TermStatisticsStore {
  private readonly database: DatabaseSync;
  private readonly statements: {
    readonly datasetChunks: StatementSync;
    readonly termChunks: StatementSync;
    readonly document: StatementSync;
    readonly ensureDataset: StatementSync;
    readonly addChunks: StatementSync;
    readonly addTerm: StatementSync;
    readonly dropEmptyTerm: StatementSync;
    readonly putDocument: StatementSync;
    readonly deleteDocument: StatementSync;
  };

  constructor(path: string) {
    const { DatabaseSync } = sqlite();
    this.database = new DatabaseSync(path, { timeout: BUSY_TIMEOUT_MS });
    // WAL: readers in other processes never wait for the writer.
    this.database.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
    this.database.exec(SCHEMA);
    const prepare = (sql: string) => this.database.prepare(sql);
    this.statements = {
      datasetChunks: prepare('SELECT chunks FROM datasets WHERE dataset = ?'),
      termChunks: prepare('SELECT chunks FROM terms WHERE dataset = ? AND term = ?'),
      document: prepare('SELECT chunks, terms FROM documents WHERE dataset = ? AND document = ?'),
      ensureDataset: prepare('INSERT INTO datasets (dataset, chunks) VALUES (?, 0) ON CONFLICT DO NOTHING'),
      addChunks: prepare('UPDATE datasets SET chunks = chunks + ? WHERE dataset = ?'),
      addTerm: prepare(
        'INSERT INTO terms (dataset, term, chunks) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET chunks = chunks + excluded.chunks',
      ),
      dropEmptyTerm: prepare('DELETE FROM terms WHERE dataset = ? AND term = ? AND chunks <= 0'),
      putDocument: prepare(
        'INSERT INTO documents (dataset, document, chunks, terms) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT DO UPDATE SET chunks = excluded.chunks, terms = excluded.terms',
      ),
      deleteDocument: prepare('DELETE FROM documents WHERE dataset = ? AND document = ?'),
    };
  }

  /** Whether the dataset has statistics (every dataset created by this version has, from before its first row). */
  hasDataset(dataset: string): boolean {
    return this.statements.datasetChunks.get(dataset) !== undefined;
  }

  /** Starts the statistics of a new, empty dataset; nothing if it has some. */
  ensureDataset(dataset: string): void {
    this.statements.ensureDataset.run(dataset);
  }

  /** The dataset's chunk count and the document frequency of `terms` (a dataset without statistics: empty). */
  statistics(dataset: string, terms: readonly string[]): TermStatistics {
    const row = this.statements.datasetChunks.get(dataset) as { chunks: number } | undefined;
    const documentFrequency = new Map<string, number>();
    for (const term of new Set(terms)) {
      const found = this.statements.termChunks.get(dataset, term) as { chunks: number } | undefined;
      if (found) documentFrequency.set(term, found.chunks);
    }
    return { chunks: row?.chunks ?? 0, documentFrequency };
  }

  /** Makes `terms` the document's contribution (null: it has none, as after its deletion), in one transaction. */
  setDocument(dataset: string, document: string, terms: DocumentTerms | null): void {
    this.transaction(() => this.applyDocument(dataset, document, terms));
  }

  /** Sets many documents' contributions in one transaction (the statistics of a dataset written before they existed). */
  setDocuments(dataset: string, documents: ReadonlyMap<string, DocumentTerms>): void {
    this.transaction(() => {
      this.statements.ensureDataset.run(dataset);
      for (const [document, terms] of documents) this.applyDocument(dataset, document, terms);
    });
  }

  close(): void {
    if (this.database.isOpen) this.database.close();
  }

  private applyDocument(dataset: string, document: string, terms: DocumentTerms | null): void {
    const { statements } = this;
    const stored = statements.document.get(dataset, document) as { chunks: number; terms: string } | undefined;
    const before = stored ? new Map<string, number>(Object.entries(JSON.parse(stored.terms))) : new Map();
    const after = terms?.terms ?? new Map<string, number>();
    statements.ensureDataset.run(dataset);
    statements.addChunks.run((terms?.chunks ?? 0) - (stored?.chunks ?? 0), dataset);
    for (const [term, chunks] of after) {
      const change = chunks - (before.get(term) ?? 0);
      if (change !== 0) statements.addTerm.run(dataset, term, change);
      if (change < 0) statements.dropEmptyTerm.run(dataset, term);
    }
    for (const [term, chunks] of before) {
      if (after.has(term)) continue;
      statements.addTerm.run(dataset, term, -chunks);
      statements.dropEmptyTerm.run(dataset, term);
    }
    if (terms && terms.chunks > 0) {
      statements.putDocument.run(dataset, document, terms.chunks, JSON.stringify(Object.fromEntries(terms.terms)));
    } else if (stored) {
      statements.deleteDocument.run(dataset, document);
    }
  }

  private transaction(work: () => void): void {
    this.database.exec('BEGIN IMMEDIATE');
    try {
      work();
      this.database.exec('COMMIT');
    } catch (error) {
      if (this.database.isTransaction) this.database.exec('ROLLBACK');
      throw error;
    }
  }
}

/** What a document's chunks add to the statistics, from each chunk's distinct terms. */
export function documentTermsOf(chunkTerms: readonly Iterable<string>[]): DocumentTerms {
  const terms = new Map<string, number>();
  for (const distinct of chunkTerms) for (const term of distinct) terms.set(term, (terms.get(term) ?? 0) + 1);
  return { chunks: chunkTerms.length, terms };
}
