/**
 * The watchdog: no document stays `uploaded` for good. A document still `uploaded` `timeoutSeconds` after its last
 * change is processed again once (its message may have been lost, e.g. a local queue restarted, or sent to the
 * DLQ); if it is still `uploaded` another `timeoutSeconds` later, it ends `failed` with INDEXING_FAILED.
 * ZIP imports alike: a job whose archive is not read through `timeoutSeconds` after its last change (its message
 * lost, or dead-lettered after the import was cut off three times) is queued again once, then `failed` with
 * IMPORT_FAILED; the documents it had created by then go on as any other.
 * Knowledge base deletions and reindexes: a job that has not moved for `timeoutSeconds` is resumed
 * (knowledge-base-deletion.ts, knowledge-base-reindex.ts).
 * Owed work (a document's erasure after its delete, its chunks' metadata after a change): work not done
 * `timeoutSeconds` after it was owed, or after the watchdog last queued it, is queued again, as often as it stalls
 * (each message is idempotent, and neither work has a failed outcome: a delete always ends erased).
 */
import { METRIC } from '#ports/metrics';
import type { AgentStore, KnowledgeBaseStore, OwedWork } from '#ports/stores';
import type { ZipJobStore } from '#ports/zip-jobs';
import { resumeStuckAgentDeletions } from './agent-deletion';
import { resumeStuckDeletions } from './knowledge-base-deletion';
import {
  DEFAULT_REINDEX_SETTINGS,
  type KnowledgeBaseReindexSettings,
  resumeStuckReindexes,
} from './knowledge-base-reindex';
import { failStuck, type ProcessingDeps } from './process-document';
import { wasRead } from './zip-job';

export interface WatchdogReport {
  readonly retried: number;
  readonly failed: number;
  readonly importsRetried: number;
  readonly importsFailed: number;
  readonly deletionsResumed: number;
  readonly reindexesResumed: number;
  readonly agentDeletionsResumed: number;
  /** Erasures of deleted documents queued again. */
  readonly erasuresRequeued: number;
  /** Metadata syncs queued again. */
  readonly metadataSyncsRequeued: number;
}

export async function runWatchdog(
  deps: ProcessingDeps & {
    readonly zipJobs: ZipJobStore;
    /** Absent where only documents and imports are watched (tests of those races). */
    readonly knowledgeBases?: KnowledgeBaseStore;
    readonly agents?: AgentStore;
    /** The page size a resumed reindex goes through one document at a time (default: DEFAULT_REINDEX_SETTINGS). */
    readonly knowledgeBaseReindex?: KnowledgeBaseReindexSettings;
  },
  options: { timeoutSeconds: number; maxRetries?: number; batch?: number },
): Promise<WatchdogReport> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - options.timeoutSeconds * 1000).toISOString();
  const maxRetries = options.maxRetries ?? 1;
  const minutes = Math.round((options.timeoutSeconds * (maxRetries + 1)) / 60);
  let retried = 0;
  let failed = 0;
  for (const ref of await deps.documents.listPending(cutoff, options.batch ?? 100)) {
    const doc = await deps.documents.get(ref, ref.documentId);
    if (doc?.status !== 'uploaded' || doc.updatedAt >= cutoff) continue;
    const retries = doc.watchdogRetries ?? 0;
    if (retries < maxRetries) {
      const recorded = await deps.documents.recordWatchdogRetry(
        doc,
        doc.documentId,
        doc.uploadId,
        retries + 1,
        now.toISOString(),
      );
      if (recorded) {
        await deps.queue.send({ kind: 'process-document', ...ref, uploadId: doc.uploadId });
        retried += 1;
      }
      continue;
    }
    // A message first, then the failure: the watchdog runs in a worker that may die between the `failed` status and
    // the removal of the chunks a worker killed mid-indexing left, and that message, finding the document failed,
    // removes them (process-document.ts). Should it find the document still waiting, it simply processes it.
    await deps.queue.send({ kind: 'process-document', ...ref, uploadId: doc.uploadId });
    if (await failStuck(deps, doc, `Processing did not finish within ${minutes} minutes (retried ${retries} times)`)) {
      failed += 1;
    }
  }
  // Every run, zero included, so the stuck-documents alarm sees a value rather than missing data.
  deps.metrics.count(METRIC.documentsStuckUploaded, retried + failed);
  let importsRetried = 0;
  let importsFailed = 0;
  for (const zipJobId of await deps.zipJobs.listPending(cutoff, options.batch ?? 100)) {
    const job = await deps.zipJobs.get(zipJobId);
    if (!job || job.status === 'failed' || wasRead(job) || job.updatedAt >= cutoff) continue;
    const retries = job.watchdogRetries ?? 0;
    if (retries < maxRetries) {
      if (await deps.zipJobs.recordWatchdogRetry(zipJobId, retries + 1, now.toISOString())) {
        const { agentId, environment, knowledgeBaseId, uploadId } = job;
        await deps.queue.send({ kind: 'process-zip', agentId, environment, knowledgeBaseId, zipJobId, uploadId });
        importsRetried += 1;
      }
      continue;
    }
    const error = {
      code: 'IMPORT_FAILED',
      message: `The archive was not imported within ${minutes} minutes (retried ${retries} times)`,
    };
    if (await deps.zipJobs.failUnread(zipJobId, error, now.toISOString())) importsFailed += 1;
  }
  const { knowledgeBases } = deps;
  const deletionsResumed = knowledgeBases
    ? await resumeStuckDeletions(
        { knowledgeBases, queue: deps.queue, clock: deps.clock },
        { timeoutSeconds: options.timeoutSeconds, batch: options.batch },
      )
    : 0;
  const reindexesResumed = knowledgeBases
    ? await resumeStuckReindexes(
        { knowledgeBases, queue: deps.queue, clock: deps.clock },
        {
          timeoutSeconds: options.timeoutSeconds,
          batch: options.batch,
          pageSize: (deps.knowledgeBaseReindex ?? DEFAULT_REINDEX_SETTINGS).pageSize,
        },
      )
    : 0;
  const { agents } = deps;
  const agentDeletionsResumed = agents
    ? await resumeStuckAgentDeletions(
        { agents, queue: deps.queue, clock: deps.clock },
        { timeoutSeconds: options.timeoutSeconds, batch: options.batch },
      )
    : 0;
  const owed = await requeueOwedWork(deps, cutoff, now.toISOString(), options.batch ?? 100);
  return {
    retried,
    failed,
    importsRetried,
    importsFailed,
    deletionsResumed,
    reindexesResumed,
    agentDeletionsResumed,
    erasuresRequeued: owed['delete-document'],
    metadataSyncsRequeued: owed['sync-metadata'],
  };
}

/**
 * Owed work whose last progress is before `cutoff` lost its message (or the queue gave up on it): its clock restarts
 * and its message is queued again. The restart is conditional, so of two watchdogs reading the same debt one queues.
 */
async function requeueOwedWork(
  deps: Pick<ProcessingDeps, 'documents' | 'queue' | 'metrics'>,
  cutoff: string,
  now: string,
  batch: number,
): Promise<Record<OwedWork, number>> {
  const requeued: Record<OwedWork, number> = { 'delete-document': 0, 'sync-metadata': 0 };
  for (const ref of await deps.documents.listOwed(cutoff, batch)) {
    const owed = await deps.documents.getOwed(ref, ref.documentId, ref.work);
    if (!owed || owed.updatedAt >= cutoff) continue;
    if (!(await deps.documents.recordOwedRetry(ref, ref.documentId, ref.work, owed.updatedAt, now))) continue;
    const { agentId, environment, knowledgeBaseId, documentId } = ref;
    await deps.queue.send({ kind: ref.work, agentId, environment, knowledgeBaseId, documentId });
    requeued[ref.work] += 1;
  }
  // Every run, zero included, so an alarm on it sees a value rather than missing data.
  for (const work of Object.keys(requeued) as OwedWork[]) {
    deps.metrics.count(METRIC.documentWorkRequeued, requeued[work], { work });
  }
  return requeued;
}
