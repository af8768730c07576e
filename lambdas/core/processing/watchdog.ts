/**
 * The watchdog: no document stays `uploaded` for good. A document still `uploaded` `timeoutSeconds` after its last
 * change is processed again once (its message may have been lost, e.g. a local queue restarted, or sent to the
 * DLQ); if it is still `uploaded` another `timeoutSeconds` later, it ends `failed` with INDEXING_FAILED.
 */
import { failStuck, type ProcessingDeps } from './process-document';

export interface WatchdogReport {
  readonly retried: number;
  readonly failed: number;
}

export async function runWatchdog(
  deps: ProcessingDeps,
  options: { timeoutSeconds: number; maxRetries?: number; batch?: number },
): Promise<WatchdogReport> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - options.timeoutSeconds * 1000).toISOString();
  const maxRetries = options.maxRetries ?? 1;
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
    const minutes = Math.round((options.timeoutSeconds * (maxRetries + 1)) / 60);
    if (await failStuck(deps, doc, `Processing did not finish within ${minutes} minutes (retried ${retries} times)`)) {
      failed += 1;
    }
  }
  return { retried, failed };
}
