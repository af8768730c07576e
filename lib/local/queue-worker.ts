/**
 * The local Lambda event source mapping: long-polls the processing queue, hands batches to the same SQS handler
 * the stack deploys, and deletes the records it reports as processed (partial batch response). Records that failed
 * stay and come back after the visibility timeout; the queue's redrive policy moves them to the DLQ after 3 receives.
 */
import { randomUUID } from 'node:crypto';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';

export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

export interface QueueWorker {
  stop(): Promise<void>;
  /** Resolves when a poll found the queue empty and no batch is running. */
  idle(): Promise<void>;
}

export function startQueueWorker(options: {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  handler: SqsHandler;
  batchSize?: number;
  log?: (message: string, error?: unknown) => void;
}): QueueWorker {
  const log = options.log ?? ((message: string, error?: unknown) => console.error(message, error ?? ''));
  let running = true;
  let idleWaiters: (() => void)[] = [];
  const controller = new AbortController();

  const loop = (async () => {
    while (running) {
      try {
        const received = await options.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: options.batchSize ?? 10,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
          }),
          { abortSignal: controller.signal },
        );
        const messages = received.Messages ?? [];
        if (messages.length === 0) {
          for (const resolve of idleWaiters) resolve();
          idleWaiters = [];
          continue;
        }
        for (const message of messages) {
          const receives = Number(message.Attributes?.ApproximateReceiveCount ?? 1);
          // A message comes back when its handler failed, or its worker died, before deleting it.
          if (receives > 1)
            log(`local queue worker: message ${message.MessageId} delivered again (receive ${receives})`);
        }
        const event: SQSEvent = {
          Records: messages.map((message) => ({
            messageId: message.MessageId ?? randomUUID(),
            receiptHandle: message.ReceiptHandle ?? '',
            body: message.Body ?? '',
            attributes: (message.Attributes ?? {}) as SQSEvent['Records'][number]['attributes'],
            messageAttributes: {},
            md5OfBody: message.MD5OfBody ?? '',
            eventSource: 'aws:sqs',
            eventSourceARN: options.queueArn,
            awsRegion: 'us-east-1',
          })),
        };
        const result = await options.handler(event, {
          functionName: 'ProcessDocuments',
          awsRequestId: randomUUID(),
          getRemainingTimeInMillis: () => 900_000,
        } as Context);
        const failed = new Set(result.batchItemFailures.map((f) => f.itemIdentifier));
        const done = event.Records.filter((record) => !failed.has(record.messageId));
        if (done.length > 0) {
          await options.sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: options.queueUrl,
              Entries: done.map((record, i) => ({ Id: String(i), ReceiptHandle: record.receiptHandle })),
            }),
          );
        }
      } catch (error) {
        if (!running) break;
        log('local queue worker: poll failed', error);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  })();

  return {
    async stop() {
      running = false;
      controller.abort();
      await loop;
    },
    idle() {
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}
