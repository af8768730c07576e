/** ProcessingQueue on SQS. */
import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { ProcessingMessage, ProcessingQueue } from '#ports/services';

/** Most messages one SendMessageBatch takes. */
const BATCH_MESSAGES = 10;
/** Sends of the entries SQS reports failed (throttling, an internal error) before sendAll fails. */
const BATCH_ATTEMPTS = 3;

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

  async sendAll(messages: readonly ProcessingMessage[]): Promise<void> {
    for (let start = 0; start < messages.length; start += BATCH_MESSAGES) {
      let entries = messages
        .slice(start, start + BATCH_MESSAGES)
        .map((message, i) => ({ Id: String(i), MessageBody: JSON.stringify(message) }));
      for (let attempt = 1; entries.length > 0; attempt++) {
        const { Failed = [] } = await this.client.send(
          new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: entries }),
        );
        if (Failed.length > 0 && attempt >= BATCH_ATTEMPTS) {
          throw new Error(`SQS did not queue ${Failed.length} messages: ${Failed[0].Code} ${Failed[0].Message ?? ''}`);
        }
        const failed = new Set(Failed.map((entry) => entry.Id));
        entries = entries.filter((entry) => failed.has(entry.Id));
      }
    }
  }
}
