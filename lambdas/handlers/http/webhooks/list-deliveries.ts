import { webhookEndpointsContainer } from '#composition/webhook-container';
import { listWebhookDeliveries } from '#core/webhooks/manage-endpoints';
import { httpHandler } from '#shared/http';
import { listWebhookDeliveriesSchema } from './schemas';

/** GET /dashboard/webhook-endpoints/:endpointId/deliveries: the attempts, newest first. */
export const handler = httpHandler(
  'ListWebhookDeliveries',
  listWebhookDeliveriesSchema,
  async ({ endpointId, ...page }, caller) => ({
    body: await listWebhookDeliveries(webhookEndpointsContainer, caller, endpointId, page),
  }),
);
