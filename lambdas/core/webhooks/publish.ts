/**
 * Publishing a status event from the worker that changed the status (processing, ZIP imports, knowledge base
 * deletion). The status write comes first and is what counts: a publication that fails is logged by the caller's
 * `onError` and not retried (the message that changed the status is done; a copy of it finds nothing left to do), so
 * a delivery may be missing, never a status. docs/webhooks.md, "Guarantees".
 */
import type { Clock } from '#ports/services';
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
  readonly documents: Pick<DocumentStore, 'zipImportFinished' | 'zipImportFailures'>;
  readonly clock: Clock;
}

/**
 * `zip_import.completed` once the import is what GET …/zip-jobs/{id} calls `completed`: read through, not failed, and
 * every document it created finished. Called when one of its documents finishes and when its archive is read through,
 * so whichever comes last publishes; two that finish together may both publish it, with the same `webhook-id`. The
 * unfinished documents are read from an index, which in AWS may lag their last write by a fraction of a second (the
 * finishing document's own entry is discounted): an import whose last two documents finish within that lag of each
 * other may send no event (docs/webhooks.md, "Guarantees").
 */
export async function publishZipImportIfCompleted(
  deps: ZipCompletionDeps,
  zipJobId: string,
  /** The document whose finishing calls this: the index may still list it as unfinished. */
  finishedDocumentId?: string,
): Promise<void> {
  if (!deps.statusEvents || !deps.zipJobs) return;
  try {
    const job = await deps.zipJobs.get(zipJobId);
    if (!job || job.status === 'failed' || typeof job.fileCount !== 'number') return;
    if (!(await deps.documents.zipImportFinished(zipJobId, finishedDocumentId))) return;
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
