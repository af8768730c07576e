/**
 * The flow runner in AWS (docs/flows.md, "Long runs"): a webhook or app event that reaches its budget
 * (FLOW_SYNC_BUDGET_MS) stores its session with where the run goes on and sends a `continue-run` message to this
 * queue; the FlowRunner function takes the session over and goes on with the run, one message per invocation (batch
 * size 1), the same runtime code the local runtime's flow runner runs (lambdas/handlers/queue/flow-runner.ts). Grants
 * follow WORKERS.flowRunner in lib/routes.ts; the webhook and app-event functions get `flowRunQueue: 'send'`.
 */
import { Duration } from 'aws-cdk-lib';
import { RecursiveLoop } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { WORKERS } from '../routes';
import { grantAccess, type PlatformResources, resourceEnvironment } from './resource-access';
import { ServiceFunction } from './service-function';

/** Lambda's longest: a runner that reaches its own deadline (5 minutes before) hands the run over to the next. */
export const FLOW_RUNNER_TIMEOUT = Duration.minutes(15);
/**
 * Six times the function's timeout, as AWS recommends for a queue a function consumes: a message comes back only
 * once the runner that received it has surely ended (Lambda stops it at its timeout), by then its session's lease
 * (60 s, no longer renewed) has run out too, and a message the poller could not hand over (throttled) is not counted
 * as a failed receive while it waits.
 */
export const FLOW_RUN_VISIBILITY_TIMEOUT = Duration.minutes(FLOW_RUNNER_TIMEOUT.toMinutes() * 6);
/** Runner invocations at once: the event source starts no more, and as many are reserved (docs/operations.md). */
export const FLOW_RUNNER_CONCURRENCY = 20;
/** Receives before a message moves to the dead-letter queue: only a failure of the service itself fails one. */
export const FLOW_RUN_MAX_RECEIVES = 5;

export interface FlowRunnerProps {
  /** What the flow functions get (tables, the knowledge index, the model, the BrowserTask function, the bucket). */
  readonly resources: PlatformResources;
  /** Reserve FLOW_RUNNER_CONCURRENCY for the runner (default true). */
  readonly reservedConcurrency?: boolean;
}

export class FlowRunner extends Construct {
  public readonly queue: Queue;
  public readonly deadLetterQueue: Queue;
  public readonly function: ServiceFunction;

  constructor(scope: Construct, id: string, props: FlowRunnerProps) {
    super(scope, id);
    // Encrypted as the processing queue is (SQS-managed keys: no key policy to keep).
    this.deadLetterQueue = new Queue(this, 'FlowRunDeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.queue = new Queue(this, 'FlowRunQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: FLOW_RUN_VISIBILITY_TIMEOUT,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: FLOW_RUN_MAX_RECEIVES },
    });

    const { handler, access } = WORKERS.flowRunner;
    const resources: PlatformResources = { ...props.resources, flowRunQueue: this.queue };
    this.function = new ServiceFunction(this, 'FlowRunnerFunction', {
      handlerFile: handler,
      description: 'Goes on with agent flow runs handed over by a webhook or app event past its time budget',
      timeout: FLOW_RUNNER_TIMEOUT,
      environment: resourceEnvironment(resources, access),
      ...(props.reservedConcurrency === false ? {} : { reservedConcurrentExecutions: FLOW_RUNNER_CONCURRENCY }),
      // A run that reaches the runner's deadline is handed to the next runner through this same queue.
      recursiveLoop: RecursiveLoop.ALLOW,
    });
    grantAccess(this.function, resources, access);
    this.function.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: 1,
        reportBatchItemFailures: true,
        maxConcurrency: FLOW_RUNNER_CONCURRENCY,
      }),
    );
  }
}
