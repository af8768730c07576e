/**
 * One-line changes of the synthesized stack that would break a deploy, or the product after it, each with the part of
 * the stack-check that must notice it (issue 34). test/stack/deploy-rules.test.ts applies the static ones to a
 * template synthesized without bundles; test/stack/run.test.ts applies the others to the template of the stack it
 * runs, and replays what the functions did against it. Each must be caught: a mutation that passes is a hole.
 */
import type { CfnTemplate, Json } from '../../lib/stack-check/cloud-assembly';
import type { PolicyStatement } from '../../lib/stack-check/iam';

type Props = Record<string, Json>;

export interface Mutation {
  readonly id: string;
  /** The change, as a person would make it in the constructs. */
  readonly change: string;
  /**
   * What catches it: `deploy rules` (lib/stack-check/deploy-rules.ts), `template wiring` (the runner refuses the
   * template), `run wiring` (the running stack reports a wiring error), `IAM replay` (a call the functions made,
   * refused by the mutated roles), `asset check` (a variable the template sets that the bundle does not read).
   */
  readonly caughtBy: 'deploy rules' | 'template wiring' | 'run wiring' | 'IAM replay' | 'asset check';
  /**
   * The variant whose run replays it: `dynamodb` (run.test.ts), or `bedrock`, the default variant with a generate
   * model (bedrock-run.test.ts), for the grants only that variant has. Only for `IAM replay`.
   */
  readonly variant?: 'dynamodb' | 'bedrock';
  /** Edits `template` (a copy) in place; throws if what it changes is not there. */
  apply(template: CfnTemplate): void;
  /** What the catching check must say. */
  readonly expected: RegExp;
}

/** The one resource of `type` whose logical id starts with `prefix`. */
export function only(template: CfnTemplate, prefix: string, type: string): [string, Props] {
  const found = Object.entries(template.Resources).filter(([id, r]) => id.startsWith(prefix) && r.Type === type);
  if (found.length !== 1) throw new Error(`expected one ${type} ${prefix}*, found ${found.length}`);
  return [found[0][0], (found[0][1].Properties ?? {}) as Props];
}

/** The statements of the default policy of the role of the function whose id starts with `functionPrefix`. */
function statementsOf(template: CfnTemplate, functionPrefix: string): PolicyStatement[] {
  const [, policy] = only(template, `${functionPrefix}ServiceRoleDefaultPolicy`, 'AWS::IAM::Policy');
  return (policy.PolicyDocument as unknown as { Statement: PolicyStatement[] }).Statement;
}

const asList = (value: string | string[] | undefined): string[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** Removes `action` from every statement of the function's role that grants it; throws if none did. */
function withoutAction(template: CfnTemplate, functionPrefix: string, action: string): void {
  let removed = 0;
  for (const statement of statementsOf(template, functionPrefix)) {
    const actions = asList(statement.Action);
    if (!actions.includes(action)) continue;
    (statement as { Action: string[] }).Action = actions.filter((a) => a !== action);
    removed += 1;
  }
  if (removed === 0) throw new Error(`${functionPrefix}'s role grants no ${action}`);
}

/** Points the function's grant of `action` at another resource; throws if its role does not grant the action. */
function regranted(template: CfnTemplate, functionPrefix: string, action: string, resource: string): void {
  const statement = statementsOf(template, functionPrefix).find((s) => asList(s.Action).includes(action));
  if (!statement) throw new Error(`${functionPrefix}'s role grants no ${action}`);
  (statement as { Resource: string }).Resource = resource;
}

export const MUTATIONS: readonly Mutation[] = [
  {
    id: 'upload-grant-without-put-object-tagging',
    change: "the upload functions' bucket grant lists s3:PutObject but not s3:PutObjectTagging",
    caughtBy: 'IAM replay',
    apply: (t) => {
      for (const fn of ['UploadLinkFunction', 'UploadCompleteFunction']) {
        withoutAction(t, fn, 's3:PutObjectTagging');
      }
    },
    // The signed upload carries x-amz-tagging (checked against the signer's role), upload-complete retags.
    expected: /s3:PutObjectTagging/,
  },
  {
    id: 'notification-filtered-to-an-unused-prefix',
    change: 'the bucket notification filtered to a prefix no upload uses',
    caughtBy: 'run wiring',
    apply: (t) => {
      const [, notification] = only(t, 'DocumentStorageDocumentsBucketNotifications', 'Custom::S3BucketNotifications');
      const [queue] = (notification.NotificationConfiguration as { QueueConfigurations: Props[] }).QueueConfigurations;
      queue.Filter = { Key: { FilterRules: [{ Name: 'prefix', Value: 'incoming/' }] } };
    },
    expected: /keeps S3 from notifying the processing queue/,
  },
  {
    id: 'processing-queue-denies-s3',
    change: "the processing queue's policy denies s3.amazonaws.com",
    caughtBy: 'deploy rules',
    apply: (t) => {
      const [, policy] = only(t, 'DocumentStorageProcessingQueuePolicy', 'AWS::SQS::QueuePolicy');
      (policy.PolicyDocument as unknown as { Statement: PolicyStatement[] }).Statement.push({
        Effect: 'Deny',
        Principal: { Service: 's3.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: '*',
      });
    },
    expected: /^s3-notification-queue-allows-s3: .*does not let s3\.amazonaws\.com send/,
  },
  {
    id: 'processing-visibility-below-processor-timeout',
    change: "the processing queue's visibility timeout below the processor's timeout",
    caughtBy: 'deploy rules',
    apply: (t) => {
      const [, processor] = only(t, 'DocumentProcessingProcessorFunction', 'AWS::Lambda::Function');
      const [, queue] = only(t, 'DocumentStorageProcessingQueue', 'AWS::SQS::Queue');
      queue.VisibilityTimeout = Number(processor.Timeout) - 1;
    },
    expected: /^sqs-visibility-covers-function-timeout: .*less than DocumentProcessingProcessorFunction/,
  },
  {
    id: 'processing-event-source-removed',
    change: "the processor's event source mapping removed",
    caughtBy: 'deploy rules',
    apply: (t) => {
      const [id] = only(t, 'DocumentProcessingProcessorFunctionSqsEventSource', 'AWS::Lambda::EventSourceMapping');
      delete t.Resources[id];
    },
    expected: /^notified-queue-has-a-consumer: .*DocumentStorageProcessingQueue/,
  },
  {
    id: 'bucket-notification-removed',
    change: "the documents bucket's notification removed",
    caughtBy: 'template wiring',
    apply: (t) => {
      const [id] = only(t, 'DocumentStorageDocumentsBucketNotifications', 'Custom::S3BucketNotifications');
      delete t.Resources[id];
    },
    expected: /expected one bucket notification, found 0/,
  },
  {
    id: 'watchdog-rule-permission-removed',
    change: "the watchdog's Lambda permission for its EventBridge rule removed",
    caughtBy: 'deploy rules',
    apply: (t) => {
      const [id] = only(t, 'DocumentProcessingWatchdogScheduleAllowEventRule', 'AWS::Lambda::Permission');
      delete t.Resources[id];
    },
    expected: /^eventbridge-rule-may-invoke-its-function: .*DocumentProcessingWatchdogFunction/,
  },
  {
    id: 'scheduler-role-without-invoke',
    change: "the flow scheduler's role loses lambda:InvokeFunction on the tick function",
    caughtBy: 'deploy rules',
    apply: (t) => {
      const [, policy] = only(t, 'FlowSchedulerSchedulerRoleDefaultPolicy', 'AWS::IAM::Policy');
      const document = policy.PolicyDocument as unknown as { Statement: PolicyStatement[] };
      document.Statement = document.Statement.filter((s) => !asList(s.Action).includes('lambda:InvokeFunction'));
    },
    expected: /^scheduler-role-may-invoke-its-target: .*may not lambda:InvokeFunction/,
  },
  {
    id: 'table-write-grant-removed',
    change: "upload-link's role loses dynamodb:PutItem",
    caughtBy: 'IAM replay',
    apply: (t) => withoutAction(t, 'UploadLinkFunction', 'dynamodb:PutItem'),
    expected: /UploadLinkFunction.* dynamodb:PutItem /,
  },
  {
    id: 'index-grant-removed',
    change: "the document list's grant on the documents table's indexes (`/index/*`) removed",
    caughtBy: 'IAM replay',
    apply: (t) => {
      let removed = 0;
      for (const statement of statementsOf(t, 'ListDocumentsFunction')) {
        const resources = statement.Resource as Json[];
        if (!Array.isArray(resources)) continue;
        const kept = resources.filter((r) => !JSON.stringify(r).includes('/index/*'));
        removed += resources.length - kept.length;
        (statement as { Resource: Json[] }).Resource = kept;
      }
      if (removed === 0) throw new Error('no /index/* grant on the document list');
    },
    expected: /ListDocumentsFunction.* dynamodb:Query .*\/index\//,
  },
  {
    id: 'user-pool-grant-on-a-wrong-pool',
    change: "invite-member's cognito-idp:AdminCreateUser granted on another pool's ARN",
    caughtBy: 'IAM replay',
    apply: (t) =>
      regranted(
        t,
        'InviteMemberFunction',
        'cognito-idp:AdminCreateUser',
        'arn:aws:cognito-idp:us-east-1:000000000000:userpool/another',
      ),
    expected: /InviteMemberFunction.* cognito-idp:AdminCreateUser /,
  },
  {
    id: 'browser-invoke-grant-on-a-wrong-arn',
    // A webhook hands a run over before its browser task (the task's bound does not fit in a request): the flow
    // runner is the function that invokes BrowserTask.
    change: "the flow runner's lambda:InvokeFunction on BrowserTask points at another function's ARN",
    caughtBy: 'IAM replay',
    apply: (t) =>
      regranted(
        t,
        'FlowRunnerFlowRunnerFunction',
        'lambda:InvokeFunction',
        'arn:aws:lambda:us-east-1:000000000000:function:BrowserTaskOld',
      ),
    expected: /FlowRunnerFlowRunnerFunction.* lambda:InvokeFunction .*BrowserTask/,
  },
  {
    id: 'schedule-tick-without-send',
    // The tick runs no flow: it sends each due fire to the flow runner's queue (docs/flows.md, "Schedules").
    change: "the schedule tick's role loses sqs:SendMessage on the flow runner's queue",
    caughtBy: 'IAM replay',
    apply: (t) => withoutAction(t, 'FlowSchedulerScheduleTickFunction', 'sqs:SendMessage'),
    expected: /FlowSchedulerScheduleTickFunction.* sqs:SendMessage /,
  },
  {
    id: 'processor-ingest-grant-removed',
    change: "the processor's role loses bedrock:IngestKnowledgeBaseDocuments (the default variant's knowledge bases)",
    caughtBy: 'IAM replay',
    variant: 'bedrock',
    apply: (t) => withoutAction(t, 'DocumentProcessingProcessorFunction', 'bedrock:IngestKnowledgeBaseDocuments'),
    expected:
      /DocumentProcessingProcessorFunction\S* bedrock:IngestKnowledgeBaseDocuments arn:aws:bedrock:[^:]+:\d{12}:knowledge-base\//,
  },
  {
    id: 'chunk-view-manifest-grant-removed',
    change: "the chunk view's role loses s3:GetObject on the chunk manifests (the default variant's Bedrock index)",
    caughtBy: 'IAM replay',
    variant: 'bedrock',
    apply: (t) => withoutAction(t, 'ListDocumentChunksFunction', 's3:GetObject'),
    expected: /ListDocumentChunksFunction\S* s3:GetObject arn:aws:s3:::\S+\/_chunks\/manifest\.json\.gz/,
  },
  {
    id: 'generate-model-grant-on-another-model',
    change: "generate's bedrock:InvokeModel granted on another foundation model than the default of `-c models`",
    caughtBy: 'IAM replay',
    variant: 'bedrock',
    apply: (t) =>
      regranted(
        t,
        'GenerateFromKnowledgeBaseFunction',
        'bedrock:InvokeModel',
        'arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-text-lite-v1',
      ),
    expected: /GenerateFromKnowledgeBaseFunction\S* bedrock:InvokeModel .*foundation-model\/amazon\.nova-lite-v1:0/,
  },
  {
    id: 'environment-variable-misspelt',
    change: "upload-link's UPLOADS_TABLE spelt UPLOAD_TABLE",
    caughtBy: 'asset check',
    apply: (t) => {
      const [, fn] = only(t, 'UploadLinkFunction', 'AWS::Lambda::Function');
      const variables = (fn.Environment as { Variables: Props }).Variables;
      if (!('UPLOADS_TABLE' in variables)) throw new Error('upload-link has no UPLOADS_TABLE');
      variables.UPLOAD_TABLE = variables.UPLOADS_TABLE;
      delete variables.UPLOADS_TABLE;
    },
    // The bundle reads UPLOADS_TABLE; the template sets a variable nothing reads.
    expected: /^UPLOAD_TABLE$/,
  },
];
