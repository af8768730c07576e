/**
 * The webhook delivery worker's two messages (ports/webhooks.ts, WebhookQueueMessage; docs/webhooks.md, "Delivery").
 *
 * `webhook-event`, primary course: read the organization's endpoints; queue one `webhook-delivery` (attempt 1) for
 * each that is enabled, subscribed to the event's type and, when scoped to an agent, scoped to the event's agent.
 *
 * `webhook-delivery`, primary course:
 * 1. The endpoint still exists, is enabled and still subscribed: else nothing is sent (and nothing recorded).
 * 2. A wait longer than SQS's 15 minutes is served in hops: a message early for its `notBefore` goes back to wait.
 * 3. The body `{ type, timestamp, data }` is signed with every secret in force (signing.ts) and POSTed through the
 *    outbound guard, within `timeoutMs`; a 2xx answer is delivered, anything else (another status, refused,
 *    unreachable, timed out) failed.
 * 4. The attempt is recorded (listable for WEBHOOK_DELIVERY_RETENTION_DAYS); a delivery ends the endpoint's failure
 *    streak; a failure starts or extends it, and disables the endpoint once the streak is `disableAfterSeconds` long.
 * 5. A failed attempt is queued again after the schedule's next wait, unless the schedule has run out or the endpoint
 *    was disabled.
 * Redelivered messages may send an attempt twice: receivers drop repeats by `webhook-id` (Standard Webhooks).
 */
import { OutboundError, type OutboundHttp } from '#ports/flows';
import type { Clock } from '#ports/services';
import {
  MAX_WEBHOOK_DELAY_SECONDS,
  type WebhookDeliveryLog,
  type WebhookEndpointStore,
  type WebhookQueue,
  type WebhookQueueMessage,
} from '#ports/webhooks';
import type { WebhookAttemptRecord } from './endpoint';
import { deliveryBody, type StatusEvent } from './events';
import { webhookHeaders } from './signing';

export interface WebhookDeliverySettings {
  /** The waits after the 1st, 2nd, … failed attempt; an attempt past the last wait is the last. */
  readonly retryDelaysSeconds: readonly number[];
  /** A failure streak this long disables the endpoint (a day by default). */
  readonly disableAfterSeconds: number;
  /** For one attempt: connecting, sending and reading the answer. */
  readonly timeoutMs: number;
}

/** 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, 24 h: eight attempts over about 45 hours. */
export const DEFAULT_WEBHOOK_RETRY_DELAYS_SECONDS: readonly number[] = [60, 300, 1800, 7200, 21600, 43200, 86400];
export const DEFAULT_WEBHOOK_DISABLE_AFTER_SECONDS = 24 * 60 * 60;
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;

export interface WebhookDeliveryDeps {
  readonly webhookEndpoints: WebhookEndpointStore;
  readonly webhookDeliveries: WebhookDeliveryLog;
  readonly webhookQueue: WebhookQueue;
  readonly http: OutboundHttp;
  readonly clock: Clock;
  readonly webhookSettings: WebhookDeliverySettings;
}

export type WebhookOutcome = 'fanned-out' | 'delivered' | 'failed' | 'waiting' | 'skipped';

export async function runWebhookMessage(
  deps: WebhookDeliveryDeps,
  message: WebhookQueueMessage,
): Promise<WebhookOutcome> {
  return message.kind === 'webhook-event' ? fanOut(deps, message.event) : deliver(deps, message);
}

async function fanOut(deps: WebhookDeliveryDeps, event: StatusEvent): Promise<WebhookOutcome> {
  const endpoints = await deps.webhookEndpoints.list(event.organizationId);
  const receivers = endpoints.filter(
    (endpoint) =>
      endpoint.enabled &&
      endpoint.events.includes(event.type) &&
      (endpoint.agentId === undefined || endpoint.agentId === event.agentId),
  );
  for (const endpoint of receivers) {
    await deps.webhookQueue.send({ kind: 'webhook-delivery', endpointId: endpoint.endpointId, event, attempt: 1 });
  }
  return receivers.length > 0 ? 'fanned-out' : 'skipped';
}

async function deliver(
  deps: WebhookDeliveryDeps,
  message: Extract<WebhookQueueMessage, { kind: 'webhook-delivery' }>,
): Promise<WebhookOutcome> {
  const { event, endpointId, attempt } = message;
  const endpoint = await deps.webhookEndpoints.get(event.organizationId, endpointId);
  if (!endpoint?.enabled || !endpoint.events.includes(event.type)) return 'skipped';

  const startedAt = deps.clock.now();
  if (message.notBefore !== undefined && Date.parse(message.notBefore) > startedAt.getTime()) {
    const waitSeconds = Math.ceil((Date.parse(message.notBefore) - startedAt.getTime()) / 1000);
    await deps.webhookQueue.send(message, { delaySeconds: Math.min(waitSeconds, MAX_WEBHOOK_DELAY_SECONDS) });
    return 'waiting';
  }

  const body = deliveryBody(event);
  const headers = webhookHeaders(endpoint.secrets, { id: event.id, body, now: startedAt });
  let statusCode: number | null = null;
  let error: WebhookAttemptRecord['error'] = null;
  try {
    const answer = await deps.http.request({
      url: endpoint.url,
      method: 'POST',
      headers: { ...headers, 'user-agent': 'agent-platform-webhooks/1' },
      serializedBody: body,
      timeoutMs: deps.webhookSettings.timeoutMs,
    });
    statusCode = answer.status;
    if (answer.status < 200 || answer.status > 299) {
      error = { code: 'ENDPOINT_STATUS', message: `The endpoint answered ${answer.status}` };
    }
  } catch (thrown) {
    if (!(thrown instanceof OutboundError)) throw thrown;
    error = { code: thrown.code, message: thrown.message };
  }
  const finishedAt = deps.clock.now();
  const at = startedAt.toISOString();
  const delivered = error === null;

  let nextAttemptAt: string | null = null;
  if (delivered) {
    await deps.webhookEndpoints.recordDelivered(event.organizationId, endpointId, at);
  } else {
    const { disableAfterSeconds, retryDelaysSeconds } = deps.webhookSettings;
    const disableIfFailingSince = new Date(startedAt.getTime() - disableAfterSeconds * 1000).toISOString();
    const after = await deps.webhookEndpoints.recordFailed(event.organizationId, endpointId, at, disableIfFailingSince);
    const wait = retryDelaysSeconds[attempt - 1];
    if (after?.enabled && wait !== undefined)
      nextAttemptAt = new Date(finishedAt.getTime() + wait * 1000).toISOString();
  }
  await deps.webhookDeliveries.record({
    endpointId,
    messageId: event.id,
    eventType: event.type,
    attempt,
    attemptedAt: at,
    outcome: delivered ? 'delivered' : 'failed',
    statusCode,
    error,
    durationMs: Math.max(0, finishedAt.getTime() - startedAt.getTime()),
    nextAttemptAt,
  });
  if (nextAttemptAt !== null) {
    const waitSeconds = Math.ceil((Date.parse(nextAttemptAt) - finishedAt.getTime()) / 1000);
    await deps.webhookQueue.send(
      { kind: 'webhook-delivery', endpointId, event, attempt: attempt + 1, notBefore: nextAttemptAt },
      { delaySeconds: Math.min(waitSeconds, MAX_WEBHOOK_DELAY_SECONDS) },
    );
  }
  return delivered ? 'delivered' : 'failed';
}
