/**
 * Publishing a status event from the worker that changed the status (processing, ZIP imports, knowledge base
 * deletion). The status write comes first and is what counts: a publication that fails is logged by the caller's
 * `onError` and not retried (the message that changed the status is done; a copy of it finds nothing left to do), so
 * a delivery may be missing, never a status. docs/webhooks.md, "Guarantees".
 */
import type { Clock, ProcessingQueue } from '#ports/services';
import type { DocumentStore } from '#ports/stores';
import type { StatusEventPublisher } from '#ports/webhooks';
import type { ZipJobStore } from '#ports/zip-jobs';
import { type StatusEvent, type WebhookEventType, zipImportCompletedEvent } from './events';

export interface PublishDeps {
  /** Absent: a deployment or a test without status webhooks. */
  readonly statusEvents?: StatusEventPublisher;
  readonly onPublishError?: (error: unknown, eventType: WebhookEventType) => void;
}

export async function publishStatusEvent(deps: PublishDeps, event: StatusEvent): Promise<void> {
  if (!deps.statusEvents) return;
  try {
    await deps.statusEvents.publish(event);
  } catch (error) {
    deps.onPublishError?.(error, event.type);
  }
}

export interface ZipCompletionDeps extends PublishDeps {
  readonly zipJobs?: Pick<ZipJobStore, 'get'>;
  readonly documents: Pick<DocumentStore, 'zipImportUnfinished' | 'zipImportFailures'>;
  readonly queue: Pick<ProcessingQueue, 'send'>;
  readonly clock: Clock;
}

/** How long after a document finishes its import is asked again, when the index may not have caught up yet. */
export const ZIP_COMPLETION_RECHECK_SECONDS = 2;

/**
 * `zip_import.completed` once the import is what GET …/zip-jobs/{id} calls `completed`: read through, not failed, and
 * every document it created finished. Asked when one of its documents finishes (`finishedDocumentId`), when its
 * archive is read through, and by a `check-zip-completion` message. The unfinished documents are read from an index
 * which, in AWS, may lag their writes by a fraction of a second: the finishing document's own entry is discounted,
 * and when one or two others are still listed (maybe finished a moment ago) the question is queued again for
 * ZIP_COMPLETION_RECHECK_SECONDS later, so the last documents finishing together do not each wait for the other.
 * Several may then publish it: with the same `webhook-id` (docs/webhooks.md, "Guarantees").
 */
export async function publishZipImportIfCompleted(
  deps: ZipCompletionDeps,
  zipJobId: string,
  finishedDocumentId?: string,
): Promise<void> {
  if (!deps.statusEvents || !deps.zipJobs) return;
  try {
    // The unfinished documents first: while more than two are left (nearly every document of a large import), there
    // is nothing to publish nor to ask again, whatever the job says, so the job is not read (a GetItem a document).
    const unfinished = (await deps.documents.zipImportUnfinished(zipJobId, 3)).filter(
      (documentId) => documentId !== finishedDocumentId,
    );
    if (unfinished.length > 2) return;
    const job = await deps.zipJobs.get(zipJobId);
    if (!job || job.status === 'failed' || typeof job.fileCount !== 'number') return;
    if (unfinished.length > 0) {
      if (finishedDocumentId !== undefined && unfinished.length <= 2) {
        const { agentId, environment, knowledgeBaseId } = job;
        await deps.queue.send(
          { kind: 'check-zip-completion', agentId, environment, knowledgeBaseId, zipJobId },
          { delaySeconds: ZIP_COMPLETION_RECHECK_SECONDS },
        );
      }
      return;
    }
    const failedCount = await deps.documents.zipImportFailures(zipJobId);
    await deps.statusEvents.publish(
      zipImportCompletedEvent({
        organizationId: job.organizationId,
        agentId: job.agentId,
        environment: job.environment,
        knowledgeBaseId: job.knowledgeBaseId,
        zipJobId,
        fileCount: job.fileCount,
        failedCount,
        completedAt: deps.clock.now().toISOString(),
      }),
    );
  } catch (error) {
    deps.onPublishError?.(error, 'zip_import.completed');
  }
}
