/** FlowRunQueue on SQS: the queue the flow runner function consumes (lib/constructs/flow-runner.ts). */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type FlowRunMessage, type FlowRunQueue, MAX_RUN_DELAY_SECONDS } from '#ports/flows';

export class SqsFlowRunQueue implements FlowRunQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(message: FlowRunMessage, options: { readonly delaySeconds?: number } = {}): Promise<void> {
    // Whole seconds, as SQS takes them; a message not delayed is sent without the field (the queue's own, 0).
    const delaySeconds = Math.min(Math.max(0, Math.ceil(options.delaySeconds ?? 0)), MAX_RUN_DELAY_SECONDS);
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(message),
        ...(delaySeconds > 0 ? { DelaySeconds: delaySeconds } : {}),
      }),
    );
  }
}
