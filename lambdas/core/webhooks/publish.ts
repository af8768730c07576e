/**
 * Publishing a status event from the worker that changed the status (processing, ZIP imports, knowledge base
 * deletion). The status write comes first and is what counts: a publication that fails is logged by the caller's
 * `onError` and not retried (the message that changed the status is done; a copy of it finds nothing left to do), so
 * a delivery may be missing, never a status. docs/webhooks.md, "Guarantees".
 */
import type { StatusEventPublisher } from '#ports/webhooks';
import type { StatusEvent } from './events';

export interface PublishDeps {
  /** Absent: a deployment or a test without status webhooks. */
  readonly statusEvents?: StatusEventPublisher;
  readonly onPublishError?: (error: unknown, event: StatusEvent) => void;
}

export async function publishStatusEvent(deps: PublishDeps, event: StatusEvent): Promise<void> {
  if (!deps.statusEvents) return;
  try {
    await deps.statusEvents.publish(event);
  } catch (error) {
    deps.onPublishError?.(error, event);
  }
}
