/**
 * A webhook endpoint of an organization (docs/webhooks.md) and what one delivery attempt to it leaves: the records the
 * stores keep (ports/webhooks.ts) and what the dashboard answers of them. The secrets are never answered here: only
 * the create and rotate answers carry the one just made.
 */
import type { WebhookEventType } from './events';

/** `whsec_` and the base64 of 32 random bytes each, as the agents' callback secrets (core/flows/callback-signing.ts). */
export interface WebhookSecrets {
  readonly current: { readonly secret: string; readonly createdAt: string };
  /** The secret the last rotation replaced: it signs beside the current one until `validUntil`. */
  readonly previous?: { readonly secret: string; readonly validUntil: string };
}

export interface WebhookEndpointRecord {
  readonly organizationId: string;
  readonly endpointId: string;
  readonly url: string;
  readonly events: readonly WebhookEventType[];
  /** Only this agent's events; absent: every agent of the organization. */
  readonly agentId?: string;
  readonly description?: string;
  readonly enabled: boolean;
  /** Why it was disabled: `failing` (a day of failed deliveries) or `manual` (PATCH enabled: false). */
  readonly disabledReason?: 'failing' | 'manual';
  readonly disabledAt?: string;
  /** The first failed attempt since the last delivered one; absent while deliveries succeed. */
  readonly failingSince?: string;
  readonly lastDeliveryAt?: string;
  readonly secrets: WebhookSecrets;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** One attempt to deliver one event to one endpoint, kept WEBHOOK_DELIVERY_RETENTION_DAYS. */
export interface WebhookAttemptRecord {
  readonly endpointId: string;
  /** `webhook-id`: the event's id, the same on each attempt. */
  readonly messageId: string;
  readonly eventType: WebhookEventType;
  /** 1 for the first. */
  readonly attempt: number;
  readonly attemptedAt: string;
  readonly outcome: 'delivered' | 'failed';
  /** The receiver's HTTP status; null when no answer came (refused, unreachable, timed out). */
  readonly statusCode: number | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly durationMs: number;
  /** When the next attempt is due; null when none follows (delivered, the schedule ran out, or disabled). */
  readonly nextAttemptAt: string | null;
}

/** How long the attempts of an endpoint are listed (TTL on the deliveries table). */
export const WEBHOOK_DELIVERY_RETENTION_DAYS = 30;

/** Endpoints one organization may have. */
export const MAX_WEBHOOK_ENDPOINTS = 20;

/** What the dashboard shows of an endpoint: everything but its secrets. */
export function endpointView(record: WebhookEndpointRecord) {
  return {
    endpointId: record.endpointId,
    url: record.url,
    events: [...record.events],
    agentId: record.agentId ?? null,
    description: record.description ?? null,
    enabled: record.enabled,
    disabledReason: record.disabledReason ?? null,
    disabledAt: record.disabledAt ?? null,
    failingSince: record.failingSince ?? null,
    lastDeliveryAt: record.lastDeliveryAt ?? null,
    secretCreatedAt: record.secrets.current.createdAt,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

export type WebhookEndpointView = ReturnType<typeof endpointView>;
