/**
 * Reindexing a knowledge base: the chunks of every `ready` document of it, in one environment or all three, built again
 * from the stored objects and written to the index. For after an index replacement (a changed index configuration
 * replaces the vector index, and every document stays `ready` and is never found again) or on demand. What the API
 * shows of the documents does not change: they stay `ready` throughout, and `indexedChunks` is written as processing
 * writes it (process-document.ts, `reindexDocument`).
 *
 * A job, as a deletion is (knowledge-base-deletion.ts): `reindex` on the knowledge base row (`running`, its page,
 * a cursor — environment and last document id — and counters), each `reindex-knowledge-base` message one page of
 * `pageSize` documents, each page moving the job on in one conditional write with its progress and queueing the
 * next. A page cut off is done again from the same cursor (every document write is idempotent); a copy of a page
 * the job has moved past does nothing, and of two copies of the same page only one moves it; a message lost is
 * found by the watchdog (`resumeStuckReindexes`), and the span of a page that stalled is then gone through one
 * document a page, any error counted as a failure, so no document can hold the job forever. A reindex has no failed
 * outcome: a document whose object cannot be chunked is counted `failed` (and named, the first REINDEX_FAILURES_KEPT)
 * and left as it is; the job goes on.
 */

import type { DocumentRecord } from '#core/knowledge/document';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import type { ProcessingMessage } from '#ports/services';
import {
  type KnowledgeBaseRecord,
  type KnowledgeBaseReindex,
  type KnowledgeBaseStore,
  REINDEX_FAILURES_KEPT,
  type ReindexCursor,
  type ReindexFailure,
} from '#ports/stores';
import { ProcessingError } from './errors';
import { type ProcessingDeps, type ProcessingOutcome, reindexDocument } from './process-document';

export interface KnowledgeBaseReindexSettings {
  /** Documents read by one queue message (of one environment). */
  readonly pageSize: number;
}

export const DEFAULT_REINDEX_SETTINGS: KnowledgeBaseReindexSettings = { pageSize: 25 };

export interface KnowledgeBaseReindexDeps extends ProcessingDeps {
  readonly knowledgeBases: KnowledgeBaseStore;
  readonly knowledgeBaseReindex: KnowledgeBaseReindexSettings;
}

type ReindexMessage = Extract<ProcessingMessage, { kind: 'reindex-knowledge-base' }>;

/** What POST …/reindex and GET …/reindex answer. */
export interface ReindexView extends Omit<KnowledgeBaseReindex, 'page' | 'cursor' | 'slowPages'> {
  readonly knowledgeBaseId: string;
}

export function reindexView(kb: KnowledgeBaseRecord): ReindexView | null {
  if (!kb.reindex) return null;
  const { page: _page, cursor: _cursor, slowPages: _slowPages, ...job } = kb.reindex;
  return { knowledgeBaseId: kb.knowledgeBaseId, ...job };
}

export type StartReindexResult =
  | { readonly started: true; readonly view: ReindexView }
  | { readonly started: false; readonly reason: 'not-found' | 'deleting' | 'running'; readonly view?: ReindexView };

/**
 * Starts a reindex of the knowledge base, unless one runs (or it is gone or being deleted). The job is written first,
 * then page 0 is queued: a crash between the two leaves a job the watchdog resumes.
 */
export async function startKnowledgeBaseReindex(
  deps: Pick<KnowledgeBaseReindexDeps, 'knowledgeBases' | 'documents' | 'queue' | 'clock'>,
  kb: KnowledgeBaseRecord,
  environments: readonly Environment[] = ENVIRONMENTS,
): Promise<StartReindexResult> {
  const { agentId, knowledgeBaseId } = kb;
  if (kb.status === 'deleting') return { started: false, reason: 'deleting' };
  let total = 0;
  for (const environment of environments) {
    total += (await deps.documents.counts({ agentId, environment, knowledgeBaseId })).ready;
  }
  const now = deps.clock.now().toISOString();
  const job: KnowledgeBaseReindex = {
    status: 'running',
    startedAt: now,
    updatedAt: now,
    completedAt: null,
    environments: [...environments],
    page: 0,
    cursor: { environment: environments[0], after: null },
    total,
    reindexed: 0,
    skipped: 0,
    failed: 0,
    failures: [],
  };
  const started = await deps.knowledgeBases.startReindex(agentId, knowledgeBaseId, job);
  if (!started) {
    const current = await deps.knowledgeBases.get(agentId, knowledgeBaseId);
    if (!current) return { started: false, reason: 'not-found' };
    if (current.status === 'deleting') return { started: false, reason: 'deleting' };
    return { started: false, reason: 'running', view: reindexView(current) ?? undefined };
  }
  await deps.queue.send({ kind: 'reindex-knowledge-base', agentId, knowledgeBaseId, page: 0 });
  return { started: true, view: reindexView(started) as ReindexView };
}

/** Message `reindex-knowledge-base`: one page of the job. */
export async function runKnowledgeBaseReindexPage(
  deps: KnowledgeBaseReindexDeps,
  message: ReindexMessage,
): Promise<ProcessingOutcome> {
  const { agentId, knowledgeBaseId } = message;
  const kb = await deps.knowledgeBases.get(agentId, knowledgeBaseId);
  // A copy of a page the job has moved past does nothing; a knowledge base being deleted is not reindexed.
  const job = kb?.reindex;
  if (!kb || kb.status === 'deleting' || job?.status !== 'running' || job.page !== message.page || !job.cursor) {
    return 'skipped';
  }
  // After a stall (the watchdog resumed the job: its page was lost, or failed every delivery), one document a page, and
  // any error of it counted: a document that kills each attempt is passed over instead of stopping the job for good.
  const slowPages = job.slowPages ?? 0;
  const stalled = slowPages > 0;
  const { documents, next } = await pageOf(
    deps,
    agentId,
    knowledgeBaseId,
    job.environments,
    job.cursor,
    stalled ? 1 : deps.knowledgeBaseReindex.pageSize,
  );
  let reindexed = 0;
  let skipped = 0;
  const failures: ReindexFailure[] = [];
  // One document at a time: the index serializes its writes, and a page is small.
  for (const doc of documents) {
    try {
      if ((await reindexDocument(deps, doc)) === 'reindexed') reindexed += 1;
      else skipped += 1;
    } catch (error) {
      // A document whose object cannot be chunked stays as it is; any other error is transient (the page is retried),
      // unless the job stalled already.
      if (!(error instanceof ProcessingError) && !stalled) throw error;
      failures.push({
        environment: doc.environment,
        documentId: doc.documentId,
        code: error instanceof ProcessingError ? error.code : 'REINDEX_ERROR',
        message: error instanceof ProcessingError ? error.message : 'The document could not be indexed again',
      });
    }
  }
  const moved = await deps.knowledgeBases.advanceReindex(
    agentId,
    knowledgeBaseId,
    message.page,
    {
      cursor: next,
      reindexed,
      skipped,
      failed: failures.length,
      failures: failures.slice(0, REINDEX_FAILURES_KEPT),
      slowPages: Math.max(0, slowPages - 1),
    },
    deps.clock.now().toISOString(),
  );
  // Another copy of this page (or the watchdog) moved the job first, and queued the next page itself.
  if (!moved) return 'skipped';
  if (next) await deps.queue.send({ ...message, page: message.page + 1 });
  return 'ready';
}

/**
 * The watchdog's part: a running job that has not moved for `timeoutSeconds` lost its message (or the queue gave up
 * on it). It is moved on to the next page number at the same cursor and that page queued, so a late copy of the lost
 * one does nothing and no document is left out.
 */
export async function resumeStuckReindexes(
  deps: Pick<KnowledgeBaseReindexDeps, 'knowledgeBases' | 'queue' | 'clock'>,
  options: { timeoutSeconds: number; batch?: number; pageSize: number },
): Promise<number> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - options.timeoutSeconds * 1000).toISOString();
  let resumed = 0;
  for (const { agentId, knowledgeBaseId } of await deps.knowledgeBases.listReindexing(cutoff, options.batch ?? 100)) {
    const kb = await deps.knowledgeBases.get(agentId, knowledgeBaseId);
    const job = kb?.reindex;
    if (!kb || kb.status === 'deleting' || job?.status !== 'running' || job.updatedAt >= cutoff) continue;
    const resume = {
      cursor: job.cursor,
      reindexed: 0,
      skipped: 0,
      failed: 0,
      failures: [],
      slowPages: options.pageSize,
    };
    if (await deps.knowledgeBases.advanceReindex(agentId, knowledgeBaseId, job.page, resume, now.toISOString())) {
      await deps.queue.send({ kind: 'reindex-knowledge-base', agentId, knowledgeBaseId, page: job.page + 1 });
      resumed += 1;
    }
  }
  return resumed;
}

/**
 * The documents of the page at `cursor` (reservations left out), at most `pageSize`, all of one environment, and
 * where the next page starts (null: none). An environment read through moves the cursor to the next one.
 */
async function pageOf(
  deps: Pick<KnowledgeBaseReindexDeps, 'documents'>,
  agentId: string,
  knowledgeBaseId: string,
  environments: readonly Environment[],
  cursor: ReindexCursor,
  pageSize: number,
): Promise<{ documents: DocumentRecord[]; next: ReindexCursor | null }> {
  const dataset = { agentId, environment: cursor.environment, knowledgeBaseId };
  const read: DocumentRecord[] = [];
  // One more than a page: whether the environment goes on past it.
  for await (const doc of deps.documents.listDataset(dataset, {
    pageSize: pageSize + 1,
    ...(cursor.after !== null ? { after: cursor.after } : {}),
  })) {
    read.push(doc);
    if (read.length > pageSize) break;
  }
  const page = read.slice(0, pageSize);
  const documents = page.filter((doc) => doc.status !== 'reserved');
  if (read.length > pageSize) {
    return { documents, next: { environment: cursor.environment, after: page[page.length - 1].documentId } };
  }
  const following = environments[environments.indexOf(cursor.environment) + 1];
  return { documents, next: following ? { environment: following, after: null } : null };
}
