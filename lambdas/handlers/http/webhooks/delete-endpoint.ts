import { webhookEndpointsContainer } from '#composition/webhook-container';
import { deleteWebhookEndpoint } from '#core/webhooks/manage-endpoints';
import { httpHandler } from '#shared/http';
import { webhookEndpointPathSchema } from './schemas';

/** DELETE /dashboard/webhook-endpoints/:endpointId: no delivery is sent to it after this answer. */
export const handler = httpHandler('DeleteWebhookEndpoint', webhookEndpointPathSchema, async (input, caller) => ({
  body: await deleteWebhookEndpoint(webhookEndpointsContainer, caller, input.endpointId),
}));
