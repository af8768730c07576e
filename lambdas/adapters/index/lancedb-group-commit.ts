/**
 * Group commit of the local index's writes (docs/retrieval.md, "Writes"). Every write of one dataset table in this
 * process goes through one queue, in the order it was asked for, one commit at a time. Replacements of documents
 * that wait together are written in one LanceDB commit and one lexical index transaction: a document's chunks are
 * all in that commit or none, so each document stays atomic, and the merge on the chunk's identity keeps a repeated
 * write idempotent. Nothing waits for a group to fill: a write that finds the queue idle is committed at once; those
 * arriving while a commit runs form the next group.
 *
 * One queue a table also keeps LanceDB from committing two concurrent merge-inserts of the same new rows, which it
 * does not see as a conflict (both commit, and the chunks are there twice: lancedb/lancedb#2463).
 */
import type * as lancedb from '@lancedb/lancedb';
import { sqlString } from './lancedb-sql';
import { type ChunkRow, MERGE_KEY, withCommitRetry } from './lancedb-tables';
import type { LexicalChunk, LexicalStore } from './lexical-store';

/** A group holds at most this many chunks (a document larger than that is written alone). */
export const MAX_GROUP_CHUNKS = 4096;
/** And at most this many documents (the length of the `IN` list of the commit's delete clause). */
export const MAX_GROUP_DOCUMENTS = 256;

/**
 * One document's new content: its rows for LanceDB, and its chunks for the lexical index, analyzed only once the rows
 * are committed (a large document's term counts and its rows' Arrow copy are then not held at once).
 */
export interface DocumentContent {
  readonly documentId: string;
  readonly rows: readonly ChunkRow[];
  readonly lexical: () => readonly LexicalChunk[];
}

/** Where a write goes: the open table and the lexical index of the same directory. */
export interface WriteTarget {
  readonly table: lancedb.Table;
  readonly lexical: LexicalStore;
}

interface Settle {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

type Operation =
  | ({ readonly kind: 'replace'; readonly target: WriteTarget; readonly content: DocumentContent } & Settle)
  | ({ readonly kind: 'other'; readonly run: () => Promise<void> } & Settle);

/** What a group commit did, for tests and benchmarks: commits of replacements, and the documents they held. */
export interface GroupCommitStats {
  commits: number;
  documents: number;
}

/** The write queue of one dataset table in this process. */
class TableWrites {
  private readonly waiting: Operation[] = [];
  private draining = false;

  constructor(
    private readonly stats: GroupCommitStats,
    private readonly onEmpty: () => void,
  ) {}

  replace(target: WriteTarget, content: DocumentContent): Promise<void> {
    return this.push((settle) => ({ kind: 'replace', target, content, ...settle }));
  }

  other(run: () => Promise<void>): Promise<void> {
    return this.push((settle) => ({ kind: 'other', run, ...settle }));
  }

  private push(operation: (settle: Settle) => Operation): Promise<void> {
    const done = new Promise<void>((resolve, reject) => {
      this.waiting.push(operation({ resolve, reject }));
    });
    if (!this.draining) void this.drain();
    return done;
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      for (let next = this.waiting[0]; next; next = this.waiting[0]) {
        if (next.kind === 'other') {
          this.waiting.shift();
          await next.run().then(next.resolve, next.reject);
          continue;
        }
        await this.commitGroup(this.takeGroup());
      }
    } finally {
      this.draining = false;
      this.onEmpty();
    }
  }

  /** The replacements at the head of the queue, within the group's limits (at least one). */
  private takeGroup(): Extract<Operation, { kind: 'replace' }>[] {
    const group: Extract<Operation, { kind: 'replace' }>[] = [];
    const documents = new Set<string>();
    let chunks = 0;
    for (const head of this.waiting) {
      if (head.kind !== 'replace') break;
      const adds = head.content.rows.length;
      const isNew = !documents.has(head.content.documentId);
      if (group.length > 0 && (chunks + adds > MAX_GROUP_CHUNKS || (isNew && documents.size >= MAX_GROUP_DOCUMENTS)))
        break;
      group.push(head);
      documents.add(head.content.documentId);
      chunks += adds;
    }
    this.waiting.splice(0, group.length);
    return group;
  }

  /**
   * One commit of the group. If it fails, each document is tried alone, so that one document's failure (its rows
   * refused, say) is its own and the others are written.
   */
  private async commitGroup(group: Extract<Operation, { kind: 'replace' }>[]): Promise<void> {
    try {
      await commitReplacements(
        group[0].target,
        group.map(({ content }) => content),
      );
      this.stats.commits++;
      this.stats.documents += group.length;
      for (const operation of group) operation.resolve();
    } catch (error) {
      if (group.length === 1) {
        group[0].reject(error);
        return;
      }
      for (const operation of group) {
        await commitReplacements(operation.target, [operation.content]).then(() => {
          this.stats.commits++;
          this.stats.documents++;
          operation.resolve();
        }, operation.reject);
      }
    }
  }
}

/**
 * Writes the documents' contents in one commit: the new chunks upserted, and every other chunk of these documents
 * deleted, so a reader sees each document's old chunks or its new ones, never a mix. A document given twice gets its
 * last content. Then the same change in the lexical index, in one transaction.
 */
async function commitReplacements(target: WriteTarget, contents: readonly DocumentContent[]): Promise<void> {
  const latest = new Map<string, DocumentContent>();
  for (const content of contents) {
    latest.delete(content.documentId);
    latest.set(content.documentId, content);
  }
  const ids = [...latest.keys()];
  const where =
    ids.length === 1 ? `documentId = ${sqlString(ids[0])}` : `documentId IN (${ids.map(sqlString).join(', ')})`;
  const rows = [...latest.values()].flatMap((content) => content.rows);
  await withCommitRetry(() =>
    rows.length === 0
      ? target.table.delete(where)
      : target.table
          .mergeInsert(MERGE_KEY)
          .whenMatchedUpdateAll()
          .whenNotMatchedInsertAll()
          .whenNotMatchedBySourceDelete({ where })
          .execute(rows as ChunkRow[]),
  );
  target.lexical.setDocuments(
    target.table.name,
    new Map([...latest].map(([documentId, content]) => [documentId, content.lexical()])),
  );
}

/**
 * The write queues of this process, by index directory and table: every handle this process has on a directory
 * shares them.
 */
const queues = new Map<string, TableWrites>();

/** Counters of the group commits of this process (all tables). */
export const groupCommitStats: GroupCommitStats = { commits: 0, documents: 0 };

export function tableWrites(directory: string, table: string): TableWrites {
  const key = `${directory}\u0000${table}`;
  let queue = queues.get(key);
  if (!queue) {
    const created = new TableWrites(groupCommitStats, () => {
      if (queues.get(key) === created) queues.delete(key);
    });
    queue = created;
    queues.set(key, queue);
  }
  return queue;
}
