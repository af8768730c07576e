/** Request schemas of the status webhook endpoints (docs/webhooks.md). */
import * as z from 'zod';
import { uuid } from '#core/knowledge/fields';
import { pageLimit } from '#core/paging/pages';
import { WEBHOOK_EVENT_TYPES } from '#core/webhooks/events';

/** Longest endpoint URL (what browsers and CDNs commonly accept). */
const URL_MAX_LENGTH = 2048;

const url = z
  .string()
  .max(URL_MAX_LENGTH)
  .refine((value) => /^https?:\/\/[^\s]+$/i.test(value) && URL.canParse(value), {
    message: 'url must be an absolute http or https URL',
    params: { rule: 'url.format' },
  })
  .meta({ description: 'Where deliveries are POSTed: http(s), a public address unless the deployment allows others.' });

const events = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length * 2)
  .meta({ description: 'The event types this endpoint receives.' });

const description = z.string().trim().max(500);

export const createWebhookEndpointSchema = z.strictObject({
  url,
  events,
  agentId: uuid.optional().meta({ description: "Only this agent's events; absent: every agent of the organization." }),
  description: description.optional(),
});

export const webhookEndpointPathSchema = z.strictObject({ endpointId: uuid });

export const noWebhookInputSchema = z.strictObject({});

export const updateWebhookEndpointSchema = z
  .strictObject({
    endpointId: uuid,
    url: url.optional(),
    events: events.optional(),
    description: description.nullable().optional(),
    enabled: z.boolean().optional().meta({ description: 'true enables a disabled endpoint again; false stops it.' }),
  })
  .refine(
    (v) => v.url !== undefined || v.events !== undefined || v.description !== undefined || v.enabled !== undefined,
    { message: 'give url, events, description or enabled', params: { rule: 'atLeastOneOf' } },
  );

export const listWebhookDeliveriesSchema = z.strictObject({
  endpointId: uuid,
  limit: pageLimit('Attempts'),
  nextToken: z.string().min(1).max(1000).optional(),
});
