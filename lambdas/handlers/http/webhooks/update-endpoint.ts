import { webhookEndpointsContainer } from '#composition/webhook-container';
import { updateWebhookEndpoint } from '#core/webhooks/manage-endpoints';
import { httpHandler } from '#shared/http';
import { updateWebhookEndpointSchema } from './schemas';

/** PATCH /dashboard/webhook-endpoints/:endpointId */
export const handler = httpHandler(
  'UpdateWebhookEndpoint',
  updateWebhookEndpointSchema,
  async ({ endpointId, ...changes }, caller) => ({
    body: await updateWebhookEndpoint(webhookEndpointsContainer, caller, endpointId, changes),
  }),
);
