/**
 * The local Lambda event source mapping: long-polls the processing queue, hands batches to the same SQS handler
 * the stack deploys, and deletes the records it reports as processed (partial batch response). Records that failed
 * stay and come back after the visibility timeout; the queue's redrive policy moves them to the DLQ after 3 receives.
 */
import { randomUUID } from 'node:crypto';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';

export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

export interface QueueWorker {
  stop(): Promise<void>;
  /**
   * Resolves when a poll found the queue empty and no batch is running (the processing worker's, of several pollers:
   * when the queue holds no message at all, received ones included).
   */
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

  let visibilitySeconds: number | undefined;
  const visibilityTimeout = async () => {
    if (visibilitySeconds === undefined) {
      const { Attributes } = await options.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: options.queueUrl, AttributeNames: ['VisibilityTimeout'] }),
      );
      visibilitySeconds = Number(Attributes?.VisibilityTimeout ?? 30);
    }
    return visibilitySeconds;
  };

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
        // Lambda ends a batch at the function's timeout, which is shorter than the queue's visibility timeout; here
        // a batch has no such end, so its messages are kept invisible while it runs. A worker that dies stops doing
        // so, and its messages come back one visibility timeout later, as they would from a Lambda that crashed.
        const heartbeat = keepInvisible(options.sqs, options.queueUrl, event.Records, await visibilityTimeout());
        const result = await options
          .handler(event, {
            functionName: 'ProcessDocuments',
            awsRequestId: randomUUID(),
            getRemainingTimeInMillis: () => 900_000,
          } as Context)
          .finally(() => clearInterval(heartbeat));
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

/** Every half visibility timeout, makes the batch's messages invisible for one more visibility timeout. */
function keepInvisible(
  sqs: SQSClient,
  queueUrl: string,
  records: SQSEvent['Records'],
  seconds: number,
): ReturnType<typeof setInterval> {
  const timer = setInterval(
    () => {
      sqs
        .send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: records.map((record, i) => ({
              Id: String(i),
              ReceiptHandle: record.receiptHandle,
              VisibilityTimeout: seconds,
            })),
          }),
        )
        .catch(() => undefined); // a missed beat only lets a message come back early: processing is idempotent
    },
    Math.max(500, (seconds * 1000) / 2),
  );
  timer.unref();
  return timer;
}

/** How often `queueDrained` asks the queue for its counts. */
const DRAINED_POLL_MS = 100;

/** Resolves once the queue holds no message: none visible, none received and not yet deleted, none delayed. */
export async function queueDrained(sqs: SQSClient, queueUrl: string): Promise<void> {
  for (;;) {
    const { Attributes = {} } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    if (Object.values(Attributes).every((count) => Number(count) === 0)) return;
    await new Promise((done) => setTimeout(done, DRAINED_POLL_MS));
  }
}
