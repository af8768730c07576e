/**
 * Status webhooks (docs/webhooks.md): the events an organization's endpoints may subscribe to, and the one message
 * each status change becomes. Pure: the processing worker builds an event where the status is written
 * (core/processing), publishes it through ports/webhooks.ts, and the delivery worker signs and sends it.
 */
import { createHash } from 'node:crypto';

export const WEBHOOK_EVENT_TYPES = [
  'document.ready',
  'document.failed',
  'zip_import.completed',
  'knowledge_base.deleted',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * One status change, as every endpoint subscribed to it receives it. `id` is the `webhook-id` of each of its
 * deliveries (every endpoint, every attempt): a receiver drops a repeat by it. The body sent is
 * `{ type, timestamp, data }`, the shape Standard Webhooks recommends.
 */
export interface StatusEvent {
  readonly id: string;
  readonly type: WebhookEventType;
  /** When the status changed (ISO 8601). */
  readonly timestamp: string;
  readonly organizationId: string;
  /** The agent the change belongs to: an endpoint scoped to an agent receives only that agent's events. */
  readonly agentId: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/**
 * The id of an event: the same for the same status change, whoever publishes it (a worker that publishes again after
 * a crash, two workers that both saw a ZIP import finish), different for a later change of the same thing.
 */
export function statusEventId(type: WebhookEventType, subject: readonly string[]): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([type, ...subject]), 'utf8')
    .digest('base64url');
  return `msg_${digest.slice(0, 32)}`;
}

/** The body every delivery of `event` sends, byte for byte (what is signed). */
export function deliveryBody(event: StatusEvent): string {
  return JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });
}

export interface DocumentStatusChange {
  readonly organizationId: string;
  readonly agentId: string;
  readonly environment: string;
  readonly knowledgeBaseId: string;
  readonly documentId: string;
  readonly uploadId: string;
  readonly fileName: string;
  readonly customDocumentId?: string | null;
  readonly status: 'ready' | 'failed';
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly chunkCount?: number;
  readonly updatedAt: string;
}

export function documentStatusEvent(change: DocumentStatusChange): StatusEvent {
  const type = change.status === 'ready' ? 'document.ready' : 'document.failed';
  const { organizationId, agentId, environment, knowledgeBaseId, documentId, uploadId, updatedAt } = change;
  return {
    id: statusEventId(type, [agentId, environment, knowledgeBaseId, documentId, uploadId, updatedAt]),
    type,
    timestamp: updatedAt,
    organizationId,
    agentId,
    data: {
      agentId,
      environment,
      knowledgeBaseId,
      documentId,
      customDocumentId: change.customDocumentId ?? null,
      fileName: change.fileName,
      status: change.status,
      ...(change.status === 'ready' ? { chunkCount: change.chunkCount ?? null } : { error: change.error }),
    },
  };
}

export function zipImportCompletedEvent(job: {
  readonly organizationId: string;
  readonly agentId: string;
  readonly environment: string;
  readonly knowledgeBaseId: string;
  readonly zipJobId: string;
  readonly fileCount: number | null;
  readonly failedCount: number;
  readonly completedAt: string;
}): StatusEvent {
  const { organizationId, agentId, environment, knowledgeBaseId, zipJobId } = job;
  return {
    // One completion per import: a second worker that sees it complete publishes the same id.
    id: statusEventId('zip_import.completed', [zipJobId]),
    type: 'zip_import.completed',
    timestamp: job.completedAt,
    organizationId,
    agentId,
    data: {
      agentId,
      environment,
      knowledgeBaseId,
      zipJobId,
      status: 'completed',
      fileCount: job.fileCount,
      failedCount: job.failedCount,
    },
  };
}

export function knowledgeBaseDeletedEvent(kb: {
  readonly organizationId: string;
  readonly agentId: string;
  readonly knowledgeBaseId: string;
  readonly name?: string;
  readonly deletedAt: string;
}): StatusEvent {
  const { organizationId, agentId, knowledgeBaseId } = kb;
  return {
    id: statusEventId('knowledge_base.deleted', [agentId, knowledgeBaseId]),
    type: 'knowledge_base.deleted',
    timestamp: kb.deletedAt,
    organizationId,
    agentId,
    data: { agentId, knowledgeBaseId, name: kb.name ?? null, status: 'deleted' },
  };
}
