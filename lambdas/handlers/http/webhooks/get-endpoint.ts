import { webhookEndpointsContainer } from '#composition/webhook-container';
import { getWebhookEndpoint } from '#core/webhooks/manage-endpoints';
import { httpHandler } from '#shared/http';
import { webhookEndpointPathSchema } from './schemas';

/** GET /dashboard/webhook-endpoints/:endpointId */
export const handler = httpHandler('GetWebhookEndpoint', webhookEndpointPathSchema, async (input, caller) => ({
  body: await getWebhookEndpoint(webhookEndpointsContainer, caller, input.endpointId),
}));
