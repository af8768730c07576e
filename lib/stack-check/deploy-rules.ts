/**
 * Rules AWS enforces when the template is deployed or first used, which no local engine enforces by itself: read from
 * the synthesized template, each with the page of AWS's documentation that states it. A deploy that breaks one
 * fails (CloudFormation rolls back) or, where marked, deploys and then silently does nothing. docs/stack-check.md
 * lists them.
 */
import * as path from 'node:path';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import {
  type CfnTemplate,
  type Json,
  logicalIdNamedBy,
  ResourceNames,
  resolveIntrinsics,
  SYNTHETIC_ACCOUNT,
} from './cloud-assembly';
import { type PolicyDocument, type PolicyStatement, rolePolicies } from './iam';
import type { AssemblyTemplate } from './nested-stacks';

type Props = Record<string, Json>;

export interface DeployRule {
  readonly id: string;
  /** What AWS does when the rule is broken. */
  readonly consequence: 'deploy fails' | 'runs, does nothing';
  readonly source: string;
  /**
   * One line per resource that breaks the rule. `template` is the deployed whole (nested stacks merged in:
   * nested-stacks.ts); `templates` each template file as synthesized, for the quotas CloudFormation counts per template
   * (without them, `template` is taken as the one file).
   */
  check(template: CfnTemplate, templates?: readonly AssemblyTemplate[]): Promise<string[]> | string[];
}

/** CloudFormation's quotas per template (AWS CloudFormation User Guide, "CloudFormation quotas"). */
export const TEMPLATE_QUOTAS = { resources: 500, parameters: 200, outputs: 200 } as const;

/** A template not flattened from others: itself, as its one file. */
const asOneFile = (template: CfnTemplate): AssemblyTemplate[] => [{ file: 'template.json', nestedAt: [], template }];

/** The sections of each template that hold more entries than `quota` allows, one line each. */
function overQuota(
  templates: readonly AssemblyTemplate[],
  section: 'Resources' | 'Parameters' | 'Outputs',
  quota: number,
): string[] {
  return templates.flatMap(({ file, template }) => {
    const count = Object.keys((template as unknown as Record<string, object | undefined>)[section] ?? {}).length;
    return count > quota
      ? [`${path.basename(file)} declares ${count} ${section.toLowerCase()} (at most ${quota})`]
      : [];
  });
}

const ofType = (template: CfnTemplate, type: string): [string, Props][] =>
  Object.entries(template.Resources)
    .filter(([, r]) => r.Type === type)
    .map(([id, r]) => [id, (r.Properties ?? {}) as Props]);

/** Lambda's and SQS's defaults where the template leaves a property out. */
const functionTimeout = (template: CfnTemplate, id: string) => Number(template.Resources[id]?.Properties?.Timeout ?? 3);
const queueVisibility = (template: CfnTemplate, id: string) =>
  Number(template.Resources[id]?.Properties?.VisibilityTimeout ?? 30);

/** Whether a service principal may do `action` on `resource` under `policy` (a queue or a function's policy). */
async function servicePrincipalAllowed(
  policy: PolicyDocument | undefined,
  service: string,
  action: string,
  resource: string,
  sourceArn: string,
): Promise<boolean> {
  if (!policy) return false;
  const result = await runSimulation(
    {
      identityPolicies: [],
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      resourcePolicy: policy as never,
      request: {
        action,
        principal: service,
        resource: { accountId: SYNTHETIC_ACCOUNT, resource },
        contextVariables: {
          'aws:SecureTransport': 'true',
          'aws:SourceArn': sourceArn,
          'aws:SourceAccount': SYNTHETIC_ACCOUNT,
        },
      },
    },
    {},
  );
  if (result.resultType === 'error') throw new Error(`simulation of ${service} ${action}: ${JSON.stringify(result)}`);
  return result.overallResult === 'Allowed';
}

/** The queue policies of the template, by the logical id of each queue they name. */
function queuePolicies(template: CfnTemplate, names: ResourceNames): Map<string, PolicyDocument> {
  const byQueue = new Map<string, PolicyDocument>();
  for (const [, p] of ofType(template, 'AWS::SQS::QueuePolicy')) {
    for (const queue of (p.Queues as Json[]) ?? []) {
      const id = logicalIdNamedBy(queue);
      if (id) byQueue.set(id, resolveIntrinsics(p.PolicyDocument, names) as unknown as PolicyDocument);
    }
  }
  return byQueue;
}

export const DEPLOY_RULES: readonly DeployRule[] = [
  {
    id: 'sqs-visibility-covers-function-timeout',
    consequence: 'deploy fails',
    source:
      'Lambda Developer Guide, "Using Lambda with Amazon SQS": CreateEventSourceMapping refuses a queue whose ' +
      'visibility timeout is less than the function timeout (InvalidParameterValueException)',
    check: (template) =>
      ofType(template, 'AWS::Lambda::EventSourceMapping').flatMap(([id, p]) => {
        const queue = logicalIdNamedBy(p.EventSourceArn);
        const fn = logicalIdNamedBy(p.FunctionName);
        if (!queue || !fn || template.Resources[queue]?.Type !== 'AWS::SQS::Queue') return [];
        const visibility = queueVisibility(template, queue);
        const timeout = functionTimeout(template, fn);
        return visibility < timeout
          ? [`${id}: ${queue}'s visibility timeout ${visibility} s is less than ${fn}'s timeout ${timeout} s`]
          : [];
      }),
  },
  {
    id: 'sqs-batch-window-above-ten',
    consequence: 'deploy fails',
    source:
      'Lambda API Reference, CreateEventSourceMapping: for SQS, BatchSize 1-10,000; above 10, ' +
      'MaximumBatchingWindowInSeconds must be at least 1',
    check: (template) =>
      ofType(template, 'AWS::Lambda::EventSourceMapping').flatMap(([id, p]) => {
        const queue = logicalIdNamedBy(p.EventSourceArn);
        if (!queue || template.Resources[queue]?.Type !== 'AWS::SQS::Queue') return [];
        const batch = Number(p.BatchSize ?? 10);
        const window = Number(p.MaximumBatchingWindowInSeconds ?? 0);
        if (batch < 1 || batch > 10_000) return [`${id}: BatchSize ${batch} is outside 1-10,000`];
        return batch > 10 && window < 1 ? [`${id}: BatchSize ${batch} needs a batching window of at least 1 s`] : [];
      }),
  },
  {
    id: 's3-notification-queue-allows-s3',
    consequence: 'deploy fails',
    source:
      'Amazon S3 User Guide, "Granting permissions to publish event notification messages to a destination": ' +
      'PutBucketNotificationConfiguration fails ("Unable to validate the following destination configurations") ' +
      'unless the queue policy lets s3.amazonaws.com send from the bucket',
    check: async (template) => {
      const names = new ResourceNames(template);
      const policies = queuePolicies(template, names);
      const problems: string[] = [];
      for (const [id, p] of ofType(template, 'Custom::S3BucketNotifications')) {
        const bucket = logicalIdNamedBy(p.BucketName);
        const configuration = p.NotificationConfiguration as { QueueConfigurations?: Props[] } | undefined;
        for (const queueConfiguration of configuration?.QueueConfigurations ?? []) {
          const queue = logicalIdNamedBy(queueConfiguration.QueueArn);
          if (!bucket || !queue) continue;
          const allowed = await servicePrincipalAllowed(
            policies.get(queue),
            's3.amazonaws.com',
            'sqs:SendMessage',
            names.arn(queue),
            names.arn(bucket),
          );
          if (!allowed) problems.push(`${id}: ${queue}'s policy does not let s3.amazonaws.com send from ${bucket}`);
        }
      }
      return problems;
    },
  },
  {
    id: 'notified-queue-has-a-consumer',
    consequence: 'runs, does nothing',
    source:
      'Lambda Developer Guide, "Using Lambda with Amazon SQS": a queue is read by a function only through an event ' +
      'source mapping; a bucket that notifies a queue nobody reads fills it until messages expire',
    check: (template) => {
      const consumed = new Set(
        ofType(template, 'AWS::Lambda::EventSourceMapping').map(([, p]) => logicalIdNamedBy(p.EventSourceArn)),
      );
      return ofType(template, 'Custom::S3BucketNotifications').flatMap(([id, p]) =>
        ((p.NotificationConfiguration as { QueueConfigurations?: Props[] } | undefined)?.QueueConfigurations ?? [])
          .map((c) => logicalIdNamedBy(c.QueueArn))
          .filter((queue): queue is string => queue !== undefined && !consumed.has(queue))
          .map((queue) => `${id}: notifies ${queue}, which no event source mapping reads`),
      );
    },
  },
  {
    id: 'eventbridge-rule-may-invoke-its-function',
    consequence: 'runs, does nothing',
    source:
      'Amazon EventBridge User Guide, "Using resource-based policies for Amazon EventBridge": a rule invokes a ' +
      'Lambda target only if the function policy lets events.amazonaws.com invoke it from that rule',
    check: async (template) => {
      const names = new ResourceNames(template);
      const problems: string[] = [];
      for (const [ruleId, p] of ofType(template, 'AWS::Events::Rule')) {
        for (const t of (p.Targets as Props[] | undefined) ?? []) {
          const fn = logicalIdNamedBy(t.Arn);
          if (!fn || template.Resources[fn]?.Type !== 'AWS::Lambda::Function') continue;
          const allowed = await servicePrincipalAllowed(
            functionPolicy(template, fn, names),
            'events.amazonaws.com',
            'lambda:InvokeFunction',
            names.arn(fn),
            names.arn(ruleId),
          );
          if (!allowed) problems.push(`${ruleId}: events.amazonaws.com may not invoke ${fn} from this rule`);
        }
      }
      return problems;
    },
  },
  {
    id: 'scheduler-role-may-invoke-its-target',
    consequence: 'runs, does nothing',
    source:
      'Amazon EventBridge Scheduler User Guide, "Set up the execution role": the role must trust ' +
      'scheduler.amazonaws.com and allow the target action (lambda:InvokeFunction, sqs:SendMessage) on the target',
    check: async (template) => {
      const names = new ResourceNames(template);
      const problems: string[] = [];
      for (const [id, p] of ofType(template, 'AWS::Scheduler::Schedule')) {
        const t = p.Target as Props;
        const role = logicalIdNamedBy(t.RoleArn);
        const destination = logicalIdNamedBy(t.Arn);
        if (!role || !destination) {
          problems.push(`${id}: its target or role is not a resource of the stack`);
          continue;
        }
        const trust = resolveIntrinsics(
          template.Resources[role]?.Properties?.AssumeRolePolicyDocument as Json,
          names,
        ) as unknown as PolicyDocument;
        const trusts = JSON.stringify(trust?.Statement ?? []).includes('scheduler.amazonaws.com');
        if (!trusts) problems.push(`${id}: ${role} does not trust scheduler.amazonaws.com`);
        const type = template.Resources[destination]?.Type;
        const action = type === 'AWS::Lambda::Function' ? 'lambda:InvokeFunction' : 'sqs:SendMessage';
        if (!(await roleAllows(template, role, action, names.arn(destination), names))) {
          problems.push(`${id}: ${role} may not ${action} on ${destination}`);
        }
      }
      return problems;
    },
  },
  {
    id: 'lambda-limits',
    consequence: 'deploy fails',
    source: 'Lambda Developer Guide, "Lambda quotas": timeout 1-900 s, memory 128-10,240 MB',
    check: (template) =>
      ofType(template, 'AWS::Lambda::Function').flatMap(([id, p]) => {
        const timeout = Number(p.Timeout ?? 3);
        const memory = Number(p.MemorySize ?? 128);
        return [
          ...(timeout < 1 || timeout > 900 ? [`${id}: timeout ${timeout} s is outside 1-900`] : []),
          ...(memory < 128 || memory > 10_240 ? [`${id}: memory ${memory} MB is outside 128-10,240`] : []),
        ];
      }),
  },
  {
    id: 'sqs-limits',
    consequence: 'deploy fails',
    source:
      'Amazon SQS API Reference, SetQueueAttributes: VisibilityTimeout 0-43,200 s, MessageRetentionPeriod ' +
      '60-1,209,600 s, RedrivePolicy maxReceiveCount 1-1,000',
    check: (template) =>
      ofType(template, 'AWS::SQS::Queue').flatMap(([id, p]) => {
        const visibility = Number(p.VisibilityTimeout ?? 30);
        const retention = Number(p.MessageRetentionPeriod ?? 345_600);
        const receives = (p.RedrivePolicy as { maxReceiveCount?: number } | undefined)?.maxReceiveCount;
        return [
          ...(visibility < 0 || visibility > 43_200 ? [`${id}: visibility timeout ${visibility} s`] : []),
          ...(retention < 60 || retention > 1_209_600 ? [`${id}: retention ${retention} s`] : []),
          ...(receives !== undefined && (receives < 1 || receives > 1000)
            ? [`${id}: maxReceiveCount ${receives}`]
            : []),
        ];
      }),
  },
  {
    id: 'template-resource-count',
    consequence: 'deploy fails',
    source:
      'AWS CloudFormation User Guide, "CloudFormation quotas": at most 500 resources in a template, counted in ' +
      "each template: the stack's own and each nested stack's",
    check: (template, templates = asOneFile(template)) => overQuota(templates, 'Resources', TEMPLATE_QUOTAS.resources),
  },
  {
    id: 'template-parameter-and-output-count',
    consequence: 'deploy fails',
    source:
      'AWS CloudFormation User Guide, "CloudFormation quotas": at most 200 parameters and 200 outputs in a template ' +
      "(a nested stack gets a parameter for each value of its parent's it uses and an output for each of its values " +
      'the parent uses)',
    check: (template, templates = asOneFile(template)) => [
      ...overQuota(templates, 'Parameters', TEMPLATE_QUOTAS.parameters),
      ...overQuota(templates, 'Outputs', TEMPLATE_QUOTAS.outputs),
    ],
  },
];

/** The policy of a function: its AWS::Lambda::Permission resources as statements. */
function functionPolicy(template: CfnTemplate, fn: string, names: ResourceNames): PolicyDocument {
  const statements = ofType(template, 'AWS::Lambda::Permission')
    .filter(([, p]) => logicalIdNamedBy(p.FunctionName) === fn)
    .map(([, p]): PolicyStatement => {
      const resolved = resolveIntrinsics(p as Json, names) as Props;
      const principal = String(resolved.Principal);
      const statement: PolicyStatement = {
        Effect: 'Allow',
        Principal: { [principal.endsWith('.amazonaws.com') ? 'Service' : 'AWS']: principal },
        Action: String(resolved.Action),
        Resource: names.arn(fn),
      };
      return resolved.SourceArn
        ? { ...statement, Condition: { ArnLike: { 'aws:SourceArn': resolved.SourceArn } } }
        : statement;
    });
  return { Version: '2012-10-17', Statement: statements };
}

/** Whether a role's identity policies in the template allow `action` on `resource`. */
async function roleAllows(
  template: CfnTemplate,
  role: string,
  action: string,
  resource: string,
  names: ResourceNames,
): Promise<boolean> {
  const result = await runSimulation(
    {
      identityPolicies: rolePolicies(template, role, names).map(({ name, policy }) => ({
        name,
        policy: policy as never,
      })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      request: {
        action,
        principal: `arn:aws:sts::${SYNTHETIC_ACCOUNT}:assumed-role/${names.physicalName(role)}/scheduler`,
        resource: { accountId: SYNTHETIC_ACCOUNT, resource },
        contextVariables: { 'aws:SecureTransport': 'true' },
      },
    },
    {},
  );
  if (result.resultType === 'error') throw new Error(`simulation of ${role} ${action}: ${JSON.stringify(result)}`);
  return result.overallResult === 'Allowed';
}

/**
 * Every broken rule of the template, as `<rule id>: <problem>`. `templates`: the template files it was flattened from
 * (CloudAssembly.templates); without them, the template is taken as the one file.
 */
export async function deployRuleViolations(
  template: CfnTemplate,
  templates: readonly AssemblyTemplate[] = asOneFile(template),
): Promise<string[]> {
  const found: string[] = [];
  for (const rule of DEPLOY_RULES) {
    for (const problem of await rule.check(template, templates)) found.push(`${rule.id}: ${problem}`);
  }
  return found;
}
