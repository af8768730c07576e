/** FlowRunQueue on SQS: the queue the flow runner function consumes (lib/constructs/flow-runner.ts). */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { FlowRunMessage, FlowRunQueue } from '#ports/flows';

export class SqsFlowRunQueue implements FlowRunQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(message: FlowRunMessage): Promise<void> {
    await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(message) }));
  }
}
