/**
 * The webhook queue's consumer (lib/constructs/webhook-delivery.ts; docs/webhooks.md): fans each status event out
 * to its endpoints and makes each delivery attempt (core/webhooks/deliver.ts). A failed attempt is not a failed
 * record: it is recorded and queued again after its wait. Only a failure of the service itself (a store unreachable)
 * fails the record, which comes back after the visibility timeout and moves to the dead-letter queue after five
 * receives. A message this worker cannot read is dropped with a warning: it would never read better.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { webhookDeliveryContainer } from '#composition/webhook-container';
import { runWebhookMessage } from '#core/webhooks/deliver';
import { WEBHOOK_EVENT_TYPES } from '#core/webhooks/events';
import type { WebhookQueueMessage } from '#ports/webhooks';
import { logger } from '#shared/logger';
import { observed } from '#shared/observed';
import { tracedUseCase } from '#shared/tracer';

const id = z.string().min(1).max(200);
const event = z.strictObject({
  id,
  type: z.enum(WEBHOOK_EVENT_TYPES),
  timestamp: z.iso.datetime(),
  organizationId: id,
  agentId: id,
  data: z.record(z.string(), z.unknown()),
});

const messageSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('webhook-event'), event }),
  z.strictObject({
    kind: z.literal('webhook-delivery'),
    endpointId: id,
    event,
    attempt: z.int().min(1).max(100),
    notBefore: z.iso.datetime().optional(),
  }),
]);

const processor = new BatchProcessor(EventType.SQS);

async function recordHandler(record: SQSRecord): Promise<void> {
  let message: WebhookQueueMessage;
  try {
    message = messageSchema.parse(JSON.parse(record.body));
  } catch (error) {
    logger.warn('dropped a webhook queue message it cannot read', {
      messageId: record.messageId,
      error: error as Error,
    });
    return;
  }
  const outcome = await tracedUseCase(message.kind, { agentId: message.event.agentId }, () =>
    runWebhookMessage(webhookDeliveryContainer, message),
  );
  logger.info('webhook message handled', {
    kind: message.kind,
    outcome,
    eventType: message.event.type,
    ...(message.kind === 'webhook-delivery' ? { endpointId: message.endpointId, attempt: message.attempt } : {}),
  });
}

export const handler = observed(async (event: SQSEvent, context: Context) =>
  processPartialResponse(event, recordHandler, processor, { context }),
);
