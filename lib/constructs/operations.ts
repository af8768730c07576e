/**
 * What an operator watches: the alarms of the service, all to one SNS topic (its ARN is the stack output
 * AlarmTopicArn) that `-c alarmEmail` subscribes an address to and that `-c alarmTopicArn` forwards to (each alarm
 * also notifies that topic), each alarm's description naming its section of docs/operations.md; and one CloudWatch
 * dashboard with a row per area (documents, retrieval, flows, API, workers, sign-in).
 * The service's own metrics are the EMF metrics of lambdas/ports/metrics.ts in the stage's namespace, with the
 * Powertools `service` dimension.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRIC, type MetricName } from '#ports/metrics';
import { SERVICE_NAME } from './service-function';

/** Alarm period: the watchdog runs every 5 minutes, and API Gateway's metrics are per minute. */
export const ALARM_PERIOD = Duration.minutes(5);
/** Share of API requests answered 5xx (average of API Gateway's 5XXError) above which the API alarm fires. */
export const API_5XX_RATE_THRESHOLD = 0.05;
/** p99 of API Gateway's Latency (ms) above which, for 15 minutes, the latency alarm fires. */
export const API_P99_LATENCY_THRESHOLD_MS = 10_000;
/** Age of the oldest message (s) above which a queue's age alarm fires: work waiting, not being done. */
export const QUEUE_AGE_THRESHOLD_SECONDS = 30 * 60;

/** Where each alarm's runbook is: a section of docs/operations.md (test/infra/operations.test.ts checks each exists). */
export const RUNBOOK = 'docs/operations.md';
export function runbook(section: string): string {
  return `Runbook: ${RUNBOOK}#${section}`;
}

export interface OperationsProps {
  /** CloudWatch namespace of the stage's EMF metrics (POWERTOOLS_METRICS_NAMESPACE). */
  readonly metricsNamespace: string;
  readonly api: RestApi;
  /** Dead-letter queues whose every message is work the service gave up on. */
  readonly deadLetterQueues: Readonly<Record<string, IQueue>>;
  /** Queues whose oldest message's age is alarmed: work that waits instead of being done. */
  readonly workQueues: Readonly<Record<string, IQueue>>;
  /** Functions whose every failed invocation is alarmed: the queue consumers, the scheduled jobs, the browser task. */
  readonly workers: Readonly<Record<string, IFunction>>;
  /** Scheduled functions that must run: an alarm when one has not run for three periods (missing data breaches). */
  readonly heartbeats: Readonly<Record<string, IFunction>>;
  readonly processor: IFunction;
  readonly authorizer: IFunction;
  /** Functions whose throttling is alarmed (the queue consumers, scheduled jobs and the authorizer; at most 10). */
  readonly throttleWatched: Readonly<Record<string, IFunction>>;
  /** Requests the firewall's rate rule answered 429 (ApiFirewall.rateLimitedMetric); none when deployed without WAF. */
  readonly rateLimited?: IMetric;
  /** Subscribed to the alarm topic at deploy (the address confirms the subscription from the mail AWS sends). */
  readonly alarmEmail?: string;
  /** A topic of the deployer's (a pager, a chat bot) every alarm notifies as well. */
  readonly alarmTopicArn?: string;
}

export class Operations extends Construct {
  /** Every alarm of the service notifies this topic: subscribe an email address, a chat bot or a pager to it. */
  public readonly alarmTopic: Topic;
  public readonly alarms: Readonly<Record<string, Alarm>>;
  public readonly dashboard: Dashboard;

  private readonly namespace: string;

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id);
    this.namespace = props.metricsNamespace;
    this.alarmTopic = new Topic(this, 'AlarmTopic', { enforceSSL: true, displayName: 'Agent platform alarms' });
    Validations.of(this.alarmTopic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        'CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed SNS key, and a customer key costs ' +
        'per month; alarm notifications carry alarm names and states, no customer data.',
    });

    if (props.alarmEmail) this.alarmTopic.addSubscription(new EmailSubscription(props.alarmEmail));

    const alarms: Record<string, Alarm> = {};
    for (const [name, queue] of Object.entries(props.deadLetterQueues)) {
      alarms[`${name}DeadLetters`] = new Alarm(this, `${name}DeadLettersAlarm`, {
        alarmDescription: `Messages in the ${name} dead-letter queue: work the service gave up on. ${runbook('dead-letter-queues')}`,
        metric: queue.metricApproximateNumberOfMessagesVisible({ period: ALARM_PERIOD, statistic: 'Maximum' }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    }
    alarms.StuckDocuments = new Alarm(this, 'StuckDocumentsAlarm', {
      alarmDescription: `Documents still \`uploaded\` past the processing time limit, found by the watchdog. ${runbook('stuck-documents')}`,
      metric: this.serviceMetric(METRIC.documentsStuckUploaded, 'Sum'),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    alarms.Api5xxRate = new Alarm(this, 'Api5xxRateAlarm', {
      alarmDescription: `More than ${API_5XX_RATE_THRESHOLD * 100}% of API requests answered 5xx. ${runbook('api-errors')}`,
      metric: props.api.metricServerError({ period: ALARM_PERIOD, statistic: 'Average' }),
      threshold: API_5XX_RATE_THRESHOLD,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 2,
      datapointsToAlarm: 2,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    alarms.ApiLatency = new Alarm(this, 'ApiLatencyAlarm', {
      alarmDescription: `API p99 latency above ${API_P99_LATENCY_THRESHOLD_MS / 1000} s for 15 minutes. ${runbook('api-latency')}`,
      metric: props.api.metricLatency({ period: ALARM_PERIOD, statistic: 'p99' }),
      threshold: API_P99_LATENCY_THRESHOLD_MS,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    for (const [name, queue] of Object.entries(props.workQueues)) {
      alarms[`${name}QueueAge`] = new Alarm(this, `${name}QueueAgeAlarm`, {
        alarmDescription: `The oldest message of the ${name} queue waited over ${QUEUE_AGE_THRESHOLD_SECONDS / 60} minutes. ${runbook('queue-age')}`,
        metric: queue.metricApproximateAgeOfOldestMessage({ period: ALARM_PERIOD, statistic: 'Maximum' }),
        threshold: QUEUE_AGE_THRESHOLD_SECONDS,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    }
    for (const [name, fn] of Object.entries(props.workers)) {
      alarms[`${name}Errors`] = new Alarm(this, `${name}ErrorsAlarm`, {
        alarmDescription: `Failed invocations of the ${name} function. ${runbook('function-errors')}`,
        metric: fn.metricErrors({ period: ALARM_PERIOD, statistic: 'Sum' }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    }
    for (const [name, fn] of Object.entries(props.heartbeats)) {
      // Missing data is the very failure watched here: a schedule that stopped invoking the function.
      alarms[`${name}Silent`] = new Alarm(this, `${name}SilentAlarm`, {
        alarmDescription: `The ${name} function has not run for 15 minutes. ${runbook('silent-schedules')}`,
        metric: fn.metricInvocations({ period: ALARM_PERIOD, statistic: 'Sum' }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
        treatMissingData: TreatMissingData.BREACHING,
      });
    }
    const throttles = Object.entries(props.throttleWatched);
    alarms.Throttles = new Alarm(this, 'ThrottlesAlarm', {
      alarmDescription: `Throttled invocations of ${throttles.map(([name]) => name).join(', ')}. ${runbook('throttles')}`,
      metric: new MathExpression({
        expression: throttles.map((_, i) => `t${i}`).join(' + '),
        usingMetrics: Object.fromEntries(
          throttles.map(([, fn], i) => [`t${i}`, fn.metricThrottles({ period: ALARM_PERIOD, statistic: 'Sum' })]),
        ),
        period: ALARM_PERIOD,
        label: 'Throttles',
      }),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    // A denied token is an invocation error too (the authorizer throws 'Unauthorized' for API Gateway's 401): the
    // alarm counts the errors that are not denials.
    alarms.AuthorizerErrors = new Alarm(this, 'AuthorizerErrorsAlarm', {
      alarmDescription: `Authorizer invocations that failed for another reason than a denied token. ${runbook('authorizer-errors')}`,
      metric: new MathExpression({
        expression: 'errors - FILL(denied, 0)',
        usingMetrics: {
          errors: props.authorizer.metricErrors({ period: ALARM_PERIOD, statistic: 'Sum' }),
          denied: this.serviceMetric(METRIC.authorizerDenied, 'Sum'),
        },
        period: ALARM_PERIOD,
        label: 'Authorizer errors (not denials)',
      }),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    const actions = [
      new SnsAction(this.alarmTopic),
      ...(props.alarmTopicArn ? [new SnsAction(Topic.fromTopicArn(this, 'DeployerTopic', props.alarmTopicArn))] : []),
    ];
    for (const alarm of Object.values(alarms)) {
      alarm.addAlarmAction(...actions);
      alarm.addOkAction(...actions);
    }
    this.alarms = alarms;

    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) });
    const graph = (title: string, metrics: IMetric[]) => new GraphWidget({ title, left: metrics, width: 6 });
    this.dashboard.addWidgets(new TextWidget({ markdown: '## Documents', width: 24, height: 1 }));
    this.dashboard.addWidgets(
      graph('Ready / failed / stuck', [
        this.serviceMetric(METRIC.documentsReady, 'Sum'),
        this.serviceMetric(METRIC.documentsStuckUploaded, 'Sum'),
        new MathExpression({
          expression: `SUM(SEARCH('{${this.namespace},errorCode,service} MetricName="${METRIC.documentsFailed}"', 'Sum', 300))`,
          label: 'Failed (all codes)',
          period: ALARM_PERIOD,
        }),
      ]),
      graph('Processing duration (ms)', [
        this.serviceMetric(METRIC.processingDuration, 'p50'),
        this.serviceMetric(METRIC.processingDuration, 'p95'),
      ]),
      graph('Chunks indexed, ZIP files imported', [
        this.serviceMetric(METRIC.chunksIndexed, 'Sum'),
        this.serviceMetric(METRIC.zipFilesImported, 'Sum'),
      ]),
      graph(
        'Dead-letter queues',
        Object.entries(props.deadLetterQueues).map(([name, queue]) =>
          queue.metricApproximateNumberOfMessagesVisible({ label: name, statistic: 'Maximum' }),
        ),
      ),
    );
    this.dashboard.addWidgets(new TextWidget({ markdown: '## Retrieval', width: 24, height: 1 }));
    this.dashboard.addWidgets(
      graph('Query latency (ms)', [
        this.serviceMetric(METRIC.queryLatency, 'p50'),
        this.serviceMetric(METRIC.queryLatency, 'p95'),
      ]),
      graph('Results', [this.serviceMetric(METRIC.queryResults, 'Sum')]),
      graph('Empty results', [this.serviceMetric(METRIC.emptyResults, 'Sum')]),
    );
    const byDimension = (name: MetricName, dimension: string, label: string) =>
      new MathExpression({
        expression: `SEARCH('{${this.namespace},${dimension},service} MetricName="${name}"', 'Sum', 300)`,
        label,
        period: ALARM_PERIOD,
      });
    this.dashboard.addWidgets(new TextWidget({ markdown: '## Flows', width: 24, height: 1 }));
    this.dashboard.addWidgets(
      graph('Runs by status', [byDimension(METRIC.runs, 'status', 'Runs')]),
      graph('Failures by code', [byDimension(METRIC.nodeFailures, 'errorCode', 'Failures')]),
      graph('Model and tool calls', [
        this.serviceMetric(METRIC.modelCalls, 'Sum'),
        this.serviceMetric(METRIC.toolCalls, 'Sum'),
      ]),
      graph('Browser steps', [this.serviceMetric(METRIC.browserSteps, 'Sum')]),
    );
    this.dashboard.addWidgets(new TextWidget({ markdown: '## API', width: 24, height: 1 }));
    this.dashboard.addWidgets(
      graph('Requests', [props.api.metricCount({ statistic: 'Sum' })]),
      graph('5xx rate', [props.api.metricServerError({ statistic: 'Average' })]),
      graph('4xx rate', [props.api.metricClientError({ statistic: 'Average' })]),
      graph('Latency (ms)', [props.api.metricLatency({ statistic: 'p95' })]),
      ...(props.rateLimited ? [graph('Rate limited (429 by the firewall)', [props.rateLimited])] : []),
    );
    this.dashboard.addWidgets(new TextWidget({ markdown: '## Workers', width: 24, height: 1 }));
    this.dashboard.addWidgets(
      graph('Processor errors', [props.processor.metricErrors({ statistic: 'Sum' })]),
      graph(
        'Throttles',
        throttles.map(([name, fn]) => fn.metricThrottles({ label: name, statistic: 'Sum' })),
      ),
    );
    this.dashboard.addWidgets(new TextWidget({ markdown: '## Sign-in', width: 24, height: 1 }));
    this.dashboard.addWidgets(
      graph('Authorizer', [
        this.serviceMetric(METRIC.authorizerDenied, 'Sum'),
        props.authorizer.metricErrors({ statistic: 'Sum', label: 'Errors (denials included)' }),
      ]),
    );
  }

  /** One of the service's EMF metrics without dimensions of its own (only Powertools' `service`). */
  private serviceMetric(name: MetricName, statistic: string): Metric {
    return new Metric({
      namespace: this.namespace,
      metricName: name,
      dimensionsMap: { service: SERVICE_NAME },
      statistic,
      period: ALARM_PERIOD,
    });
  }
}
