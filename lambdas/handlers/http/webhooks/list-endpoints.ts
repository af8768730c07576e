import { webhookEndpointsContainer } from '#composition/webhook-container';
import { listWebhookEndpoints } from '#core/webhooks/manage-endpoints';
import { httpHandler } from '#shared/http';
import { noWebhookInputSchema } from './schemas';

/** GET /dashboard/webhook-endpoints */
export const handler = httpHandler('ListWebhookEndpoints', noWebhookInputSchema, async (_input, caller) => ({
  body: await listWebhookEndpoints(webhookEndpointsContainer, caller),
}));
