/**
 * Success bodies of the status webhook routes (without the `success: true` every answer carries), one zod schema per
 * route id of lib/routes.ts. Handlers import these as types only (`satisfies`), so no bundle grows.
 */
import * as z from 'zod';
import { WEBHOOK_EVENT_TYPES } from '#core/webhooks/events';

const isoTime = z.iso.datetime();
const eventType = z.enum(WEBHOOK_EVENT_TYPES);

const endpoint = z.strictObject({
  endpointId: z.uuid(),
  url: z.string(),
  events: z.array(eventType),
  agentId: z.uuid().nullable(),
  description: z.string().nullable(),
  enabled: z.boolean(),
  disabledReason: z.enum(['failing', 'manual']).nullable(),
  disabledAt: isoTime.nullable(),
  failingSince: isoTime.nullable(),
  lastDeliveryAt: isoTime.nullable(),
  secretCreatedAt: isoTime,
  createdAt: isoTime,
  updatedAt: isoTime,
});

const secret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/=]+$/)
  .meta({ description: 'Shown only in this answer.' });

const attempt = z.strictObject({
  messageId: z.string().meta({ description: 'The webhook-id header: the same on every attempt of one event.' }),
  eventType,
  attempt: z.int().min(1),
  attemptedAt: isoTime,
  outcome: z.enum(['delivered', 'failed']),
  statusCode: z.int().nullable(),
  error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
  durationMs: z.int().min(0),
  nextAttemptAt: isoTime.nullable(),
});

export const RESPONSES: Readonly<Record<string, z.ZodType>> = {
  CreateWebhookEndpoint: endpoint.extend({ secret }),
  ListWebhookEndpoints: z.strictObject({ endpoints: z.array(endpoint) }),
  GetWebhookEndpoint: endpoint,
  UpdateWebhookEndpoint: endpoint,
  DeleteWebhookEndpoint: z.strictObject({ endpointId: z.uuid(), deleted: z.literal(true) }),
  RotateWebhookEndpointSecret: z.strictObject({
    endpointId: z.uuid(),
    secret,
    createdAt: isoTime,
    previousSecretValidUntil: isoTime.nullable(),
  }),
  ListWebhookDeliveries: z.strictObject({ deliveries: z.array(attempt), nextToken: z.string().nullable() }),
};
