import { webhookEndpointsContainer } from '#composition/webhook-container';
import { rotateWebhookEndpointSecret } from '#core/webhooks/manage-endpoints';
import { httpHandler } from '#shared/http';
import { webhookEndpointPathSchema } from './schemas';

/** POST /dashboard/webhook-endpoints/:endpointId/secret: the new secret, shown only here. */
export const handler = httpHandler('RotateWebhookEndpointSecret', webhookEndpointPathSchema, async (input, caller) => ({
  status: 201,
  body: await rotateWebhookEndpointSecret(webhookEndpointsContainer, caller, input.endpointId),
}));
