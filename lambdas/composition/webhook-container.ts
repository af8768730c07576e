/**
 * Composition root of the status webhooks (docs/webhooks.md): the endpoint and delivery stores, the webhook queue,
 * the URL check and outbound HTTP behind the outbound guard, and the delivery settings. The dashboard's endpoint
 * routes use `webhookEndpointsContainer`, the delivery worker `webhookDeliveryContainer`, and the workers that change a
 * status `statusEventPublisher()` (none where WEBHOOK_QUEUE_URL is not given).
 */
import { GuardedOutboundHttp } from '#adapters/network/outbound-http';
import { type AddressKind, allowPrivateNetworkFromEnv, checkTarget } from '#adapters/network/url-guard';
import { SqsWebhookQueue } from '#adapters/queue/sqs-webhooks';
import { DynamoWebhookDeliveryLog, DynamoWebhookEndpointStore } from '#adapters/store/dynamodb/webhook-stores';
import {
  DEFAULT_WEBHOOK_DISABLE_AFTER_SECONDS,
  DEFAULT_WEBHOOK_RETRY_DELAYS_SECONDS,
  DEFAULT_WEBHOOK_TIMEOUT_MS,
  type WebhookDeliveryDeps,
  type WebhookDeliverySettings,
} from '#core/webhooks/deliver';
import type { WebhookEndpointDeps } from '#core/webhooks/manage-endpoints';
import { OutboundError } from '#ports/flows';
import type { StatusEventPublisher, WebhookDeliveryLog, WebhookUrlCheck } from '#ports/webhooks';
import { config, positiveInteger } from '#shared/config';
import { handlerVariable } from '#shared/environment';
import { dynamoDocumentClient } from './clients/dynamodb';
import { sqsClient } from './clients/sqs';
import { agentsStore, clock, ids } from './container';
import { once } from './once';

const endpoints = once(
  () => new DynamoWebhookEndpointStore(dynamoDocumentClient(), config.tableName('webhookEndpoints')),
);
const deliveries = once(
  () => new DynamoWebhookDeliveryLog(dynamoDocumentClient(), config.tableName('webhookDeliveries')),
);
const queue = once(() => {
  const url = config.webhookQueueUrl();
  if (!url) throw new Error(`Missing configuration: environment variable WEBHOOK_QUEUE_URL`);
  return new SqsWebhookQueue(sqsClient(), url);
});

/**
 * The outbound guard's options for webhook targets: OUTBOUND_ALLOW_PRIVATE_NETWORK as for every outbound call, and
 * WEBHOOK_ALLOW_LOOPBACK=true to let a receiver on the same machine through (local development) while private
 * networks and the metadata endpoint stay refused.
 */
const guardOptions = once(() => {
  const loopback = handlerVariable('WEBHOOK_ALLOW_LOOPBACK');
  if (loopback !== undefined && loopback !== '' && loopback !== 'true' && loopback !== 'false') {
    throw new Error("Invalid configuration: WEBHOOK_ALLOW_LOOPBACK must be 'true' or 'false'");
  }
  const allowedKinds: AddressKind[] = loopback === 'true' ? ['loopback'] : [];
  return { allowPrivateNetwork: allowPrivateNetworkFromEnv(), allowedKinds };
});

/** At registration a refused target is a 400; a name that does not resolve now is let through (DNS may be late). */
const urlCheck: WebhookUrlCheck = {
  async check(url) {
    try {
      await checkTarget(url, guardOptions());
    } catch (error) {
      if (error instanceof OutboundError && error.code === 'TARGET_REFUSED') throw error;
    }
  },
};

/**
 * WEBHOOK_RETRY_DELAYS_SECONDS (comma-separated whole seconds, each 1 to 86400), WEBHOOK_DISABLE_AFTER_SECONDS and
 * WEBHOOK_TIMEOUT_MS; unset: the defaults of core/webhooks/deliver.ts. Tests shorten them.
 */
export function webhookSettingsFromEnv(): WebhookDeliverySettings {
  const raw = handlerVariable('WEBHOOK_RETRY_DELAYS_SECONDS');
  let retryDelaysSeconds = DEFAULT_WEBHOOK_RETRY_DELAYS_SECONDS;
  if (raw !== undefined && raw !== '') {
    const delays = raw.split(',').map((part) => Number(part.trim()));
    if (!delays.every((d) => Number.isInteger(d) && d >= 1 && d <= 86_400)) {
      throw new Error('Invalid configuration: WEBHOOK_RETRY_DELAYS_SECONDS must be whole seconds from 1 to 86400');
    }
    retryDelaysSeconds = delays;
  }
  return {
    retryDelaysSeconds,
    disableAfterSeconds: positiveInteger('WEBHOOK_DISABLE_AFTER_SECONDS', DEFAULT_WEBHOOK_DISABLE_AFTER_SECONDS),
    timeoutMs: positiveInteger('WEBHOOK_TIMEOUT_MS', DEFAULT_WEBHOOK_TIMEOUT_MS),
  };
}

const settings = once(webhookSettingsFromEnv);
const http = once(() => new GuardedOutboundHttp({ ...guardOptions(), timeoutMs: DEFAULT_WEBHOOK_TIMEOUT_MS }));

export const webhookEndpointsContainer: WebhookEndpointDeps & { readonly webhookDeliveries: WebhookDeliveryLog } = {
  get webhookEndpoints() {
    return endpoints();
  },
  get webhookDeliveries() {
    return deliveries();
  },
  // As they are, not cached: an agent being deleted gets no endpoint.
  get agents() {
    return agentsStore();
  },
  urlCheck,
  clock,
  ids,
};

export const webhookDeliveryContainer: WebhookDeliveryDeps = {
  get webhookEndpoints() {
    return endpoints();
  },
  get webhookDeliveries() {
    return deliveries();
  },
  get webhookQueue() {
    return queue();
  },
  get http() {
    return http();
  },
  clock,
  get webhookSettings() {
    return settings();
  },
};

/** Where the processing worker publishes status events: the webhook queue, or nowhere when it was given none. */
export const statusEventPublisher = once((): StatusEventPublisher | undefined =>
  config.webhookQueueUrl() ? queue() : undefined,
);
