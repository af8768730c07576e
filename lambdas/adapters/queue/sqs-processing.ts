/** ProcessingQueue on SQS. */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { ProcessingMessage, ProcessingQueue } from '#ports/services';

export class SqsProcessingQueue implements ProcessingQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(message: ProcessingMessage, options: { delaySeconds?: number } = {}): Promise<void> {
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(message),
        ...(options.delaySeconds ? { DelaySeconds: Math.min(900, Math.max(0, Math.round(options.delaySeconds))) } : {}),
      }),
    );
  }
}
