/**
 * The status webhooks in AWS (docs/webhooks.md): the processing worker publishes each status change to this queue;
 * the WebhookDelivery function fans it out to the organization's endpoints and makes each delivery attempt, queueing
 * a failed one again after its wait (SQS message delay, at most 15 minutes a hop). The same handler the local
 * runtime's delivery worker runs (lambdas/handlers/queue/deliver-webhooks.ts). Grants follow WORKERS.webhookDelivery
 * in lib/routes.ts; the processing function gets `webhookQueue: 'send'`.
 */
import { Duration } from 'aws-cdk-lib';
import { RecursiveLoop } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { WORKERS } from '../routes';
import { grantAccess, type PlatformResources, resourceEnvironment } from './resource-access';
import { ServiceFunction } from './service-function';

/** A batch of 10 attempts, each bounded by WEBHOOK_TIMEOUT_MS (10 s), run side by side. */
export const WEBHOOK_DELIVERY_TIMEOUT = Duration.minutes(1);
/** Six times the function's timeout, as AWS recommends for a queue a function consumes. */
export const WEBHOOK_VISIBILITY_TIMEOUT = Duration.minutes(WEBHOOK_DELIVERY_TIMEOUT.toMinutes() * 6);
/** Receives before the dead-letter queue: only a failure of the service itself fails a message. */
export const WEBHOOK_MAX_RECEIVES = 5;
/** Invocations at once: a burst of status changes waits in the queue rather than flooding the receivers. */
export const WEBHOOK_DELIVERY_CONCURRENCY = 5;

export interface WebhookDeliveryProps {
  /** What the worker gets: the webhook tables (the queue is its own). */
  readonly resources: PlatformResources;
  /** Reserve WEBHOOK_DELIVERY_CONCURRENCY for the worker (default true), so its own batches are never throttled. */
  readonly reservedConcurrency?: boolean;
}

export class WebhookDelivery extends Construct {
  public readonly queue: Queue;
  public readonly deadLetterQueue: Queue;
  public readonly function: ServiceFunction;

  constructor(scope: Construct, id: string, props: WebhookDeliveryProps) {
    super(scope, id);
    this.deadLetterQueue = new Queue(this, 'WebhookDeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.queue = new Queue(this, 'WebhookQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: WEBHOOK_VISIBILITY_TIMEOUT,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: WEBHOOK_MAX_RECEIVES },
    });

    const { handler, access } = WORKERS.webhookDelivery;
    const resources: PlatformResources = { ...props.resources, webhookQueue: this.queue };
    this.function = new ServiceFunction(this, 'WebhookDeliveryFunction', {
      handlerFile: handler,
      description: 'Signs and sends status webhooks to the endpoints organizations registered, with retries',
      timeout: WEBHOOK_DELIVERY_TIMEOUT,
      environment: resourceEnvironment(resources, access),
      ...(props.reservedConcurrency === false ? {} : { reservedConcurrentExecutions: WEBHOOK_DELIVERY_CONCURRENCY }),
      // A failed attempt is queued again on this same queue, after its wait.
      recursiveLoop: RecursiveLoop.ALLOW,
    });
    grantAccess(this.function, resources, access);
    this.function.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: WEBHOOK_DELIVERY_CONCURRENCY,
      }),
    );
  }
}
