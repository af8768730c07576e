/**
 * The webhook queue on SQS (lib/constructs/webhook-delivery.ts): status events published by the workers that change
 * a status, and the delivery attempts the delivery worker queues for itself.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { StatusEvent } from '#core/webhooks/events';
import {
  MAX_WEBHOOK_DELAY_SECONDS,
  type StatusEventPublisher,
  type WebhookQueue,
  type WebhookQueueMessage,
} from '#ports/webhooks';

export class SqsWebhookQueue implements WebhookQueue, StatusEventPublisher {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(message: WebhookQueueMessage, options: { readonly delaySeconds?: number } = {}): Promise<void> {
    const delaySeconds = Math.min(Math.max(0, Math.ceil(options.delaySeconds ?? 0)), MAX_WEBHOOK_DELAY_SECONDS);
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(message),
        ...(delaySeconds > 0 ? { DelaySeconds: delaySeconds } : {}),
      }),
    );
  }

  publish(event: StatusEvent): Promise<void> {
    return this.send({ kind: 'webhook-event', event });
  }
}
