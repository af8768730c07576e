import { webhookEndpointsContainer } from '#composition/webhook-container';
import { createWebhookEndpoint } from '#core/webhooks/manage-endpoints';
import { httpHandler } from '#shared/http';
import { createWebhookEndpointSchema } from './schemas';

/** POST /dashboard/webhook-endpoints: the answer is the only one that carries the endpoint's secret. */
export const handler = httpHandler('CreateWebhookEndpoint', createWebhookEndpointSchema, async (input, caller) => ({
  status: 201,
  body: await createWebhookEndpoint(webhookEndpointsContainer, caller, input),
}));
