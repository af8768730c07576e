/** What the status webhooks need (core/webhooks, docs/webhooks.md): their two stores, their queue, and the URL check. */
import type { WebhookAttemptRecord, WebhookEndpointRecord, WebhookSecrets } from '#core/webhooks/endpoint';
import type { StatusEvent } from '#core/webhooks/events';

export interface WebhookEndpointStore {
  put(record: WebhookEndpointRecord): Promise<void>;
  get(organizationId: string, endpointId: string): Promise<WebhookEndpointRecord | undefined>;
  /** Every endpoint of the organization (at most MAX_WEBHOOK_ENDPOINTS), oldest first. */
  list(organizationId: string): Promise<WebhookEndpointRecord[]>;
  /** Writes `record` only over the version last read (`updatedAt` still `expectedUpdatedAt`); false otherwise. */
  replace(record: WebhookEndpointRecord, expectedUpdatedAt: string): Promise<boolean>;
  /** False when there was none. */
  delete(organizationId: string, endpointId: string): Promise<boolean>;
  /** Sets the secrets only while the current one is still `expected`: two rotations never overwrite each other. */
  replaceSecrets(
    organizationId: string,
    endpointId: string,
    secrets: WebhookSecrets,
    expected: string,
  ): Promise<boolean>;
  /** A delivered attempt: the failure streak ends. */
  recordDelivered(organizationId: string, endpointId: string, at: string): Promise<void>;
  /**
   * A failed attempt: starts the failure streak (`failingSince`) unless one runs, and disables the endpoint
   * (`disabledReason: failing`) when the streak began at or before `disableIfFailingSince`. The endpoint after the
   * write; undefined when it is gone.
   */
  recordFailed(
    organizationId: string,
    endpointId: string,
    at: string,
    disableIfFailingSince: string,
  ): Promise<WebhookEndpointRecord | undefined>;
}

export interface WebhookDeliveryLog {
  record(attempt: WebhookAttemptRecord): Promise<void>;
  /** The endpoint's attempts, newest first, after the position `after` (a page's last); `next`: more follow. */
  list(
    endpointId: string,
    options: { readonly limit: number; readonly after?: string },
  ): Promise<{ attempts: WebhookAttemptRecord[]; next?: string }>;
}

/** What the webhook queue carries: an event to fan out to its endpoints, or one delivery attempt to one endpoint. */
export type WebhookQueueMessage =
  | { readonly kind: 'webhook-event'; readonly event: StatusEvent }
  | {
      readonly kind: 'webhook-delivery';
      readonly endpointId: string;
      readonly event: StatusEvent;
      readonly attempt: number;
      /** Not before this time (a wait longer than SQS's 15-minute delay is served in several hops). */
      readonly notBefore?: string;
    };

/** SQS's longest message delay. */
export const MAX_WEBHOOK_DELAY_SECONDS = 900;

export interface WebhookQueue {
  send(message: WebhookQueueMessage, options?: { readonly delaySeconds?: number }): Promise<void>;
}

/** Where status events go from the workers that change a status: the webhook queue, or nowhere (no deliveries). */
export interface StatusEventPublisher {
  publish(event: StatusEvent): Promise<void>;
}

/**
 * The outbound guard's check of a URL an endpoint is registered with: rejects with OutboundError TARGET_REFUSED for a
 * target the deployment may not reach (a private address, a non-http(s) URL, credentials in it).
 */
export interface WebhookUrlCheck {
  check(url: string): Promise<void>;
}
