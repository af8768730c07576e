/**
 * The functions' IAM as the synthesized template grants it, evaluated offline (@cloud-copilot/iam-simulate): a call is
 * allowed only if the policies attached to that function's role allow its action on its resource ARN, and a grant
 * removed from a copy of the template turns the same call into AccessDenied naming function, action and resource.
 */
import {
  type CfnTemplate,
  type Json,
  nodeFunctions,
  ResourceNames,
  resolveIntrinsics,
  SYNTHETIC_ACCOUNT,
  SYNTHETIC_REGION,
  type TemplateFunction,
} from '../../lib/stack-check/cloud-assembly';
import { AccessDeniedError, FunctionPermissions, grantReport, type PolicyStatement } from '../../lib/stack-check/iam';
import { synthesizeUnbundled } from '../helpers/synth';

const templates: Record<string, CfnTemplate> = {};

beforeAll(() => {
  for (const [variant, context] of [
    ['default', {}],
    ['knowledgeIndex=dynamodb', { knowledgeIndex: 'dynamodb' }],
  ] as const) {
    const synthesized = synthesizeUnbundled(context);
    templates[variant] = synthesized.template.toJSON() as CfnTemplate;
    synthesized.dispose();
  }
}, 120_000);

/** nodeFunctions needs an assembly folder only for asset paths, which IAM does not use. */
const functionsOf = (template: CfnTemplate): TemplateFunction[] =>
  nodeFunctions({ directory: '/unused', templateFile: '/unused', template, templates: [] });

function functionNamed(template: CfnTemplate, prefix: string): TemplateFunction {
  const fn = functionsOf(template).find((f) => f.logicalId.startsWith(prefix));
  if (!fn) throw new Error(`no function ${prefix}* in the template`);
  return fn;
}

function tableLogicalId(template: CfnTemplate, prefix: string): string {
  const id = Object.keys(template.Resources).find(
    (k) => k.startsWith(prefix) && template.Resources[k].Type === 'AWS::DynamoDB::Table',
  );
  if (!id) throw new Error(`no table ${prefix}*`);
  return id;
}

describe.each(['default', 'knowledgeIndex=dynamodb'])('grants of the %s stack', (variant) => {
  test('no role grants an action on "*" where the action can be scoped to a resource', async () => {
    const template = templates[variant];
    const names = new ResourceNames(template);
    const roles = [...new Set(functionsOf(template).map((f) => f.roleLogicalId))];
    const lines = (await Promise.all(roles.map((role) => grantReport(template, role, names)))).flat();
    const own = lines.filter((l) => !l.policy.startsWith('arn:aws:iam::aws:policy/'));
    console.log(
      `[stack] ${variant}: ${roles.length} function roles, ${own.length} granted actions (` +
        `${own.reduce((n, l) => n + l.resources.length, 0)} action × resource pairs) besides AWSLambdaBasicExecutionRole`,
    );
    expect(own.filter((l) => l.wildcardWhereScopable)).toEqual([]);
  });
});

test('a grant on "*" of an action with resource-level permissions is reported', async () => {
  const copy = structuredClone(templates.default);
  const fn = functionNamed(copy, 'HealthFunction');
  const policy = Object.entries(copy.Resources).find(
    ([, r]) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles).includes(fn.roleLogicalId),
  );
  if (!policy) throw new Error('no policy on the Health role');
  const document = policy[1].Properties?.PolicyDocument as unknown as { Statement: PolicyStatement[] };
  document.Statement.push({ Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: '*' });
  const lines = await grantReport(copy, fn.roleLogicalId, new ResourceNames(copy));
  const flagged = lines.filter((l) => l.wildcardWhereScopable);
  // AWSLambdaBasicExecutionRole's logs actions on "*" are flagged too: AWS's own policy, acknowledged in cdk-nag.
  expect(flagged.filter((l) => !l.policy.startsWith('arn:aws:iam::aws:policy/')).map((l) => l.action)).toEqual([
    'dynamodb:GetItem',
  ]);
  expect(flagged.filter((l) => l.policy.startsWith('arn:aws:iam::aws:policy/')).map((l) => l.action)).toEqual([
    'logs:CreateLogGroup',
    'logs:CreateLogStream',
    'logs:PutLogEvents',
  ]);
});

describe('a call is checked against the role of the function that makes it', () => {
  const template = () => templates.default;
  const names = () => new ResourceNames(template());
  const tableArn = (prefix: string) => names().arn(tableLogicalId(template(), prefix));

  test('UploadLink may write its upload session and sign a PUT of an object, and nothing in the tokens table', async () => {
    const permissions = new FunctionPermissions(template(), functionNamed(template(), 'UploadLinkFunction'), names());
    await permissions.check('dynamodb:PutItem', tableArn('DataUploadsTable'));
    await permissions.check('s3:PutObject', `${names().arn(bucketId(template()))}/agent/kb/doc/file.pdf`);
    await expect(permissions.check('dynamodb:PutItem', tableArn('DataTokensTable'))).rejects.toBeInstanceOf(
      AccessDeniedError,
    );
    expect(permissions.calls.map((c) => c.allowed)).toEqual([true, true, false]);
  });

  test('a call of a service the request mapping does not know is refused and recorded, not let through', async () => {
    const permissions = new FunctionPermissions(template(), functionNamed(template(), 'UploadLinkFunction'), names());
    // What lambda-child.cjs makes of a request it cannot read: the service and the path, on '*'.
    await expect(permissions.check('unknown:/2015-03-31/something', '*')).rejects.toThrow(/NotEvaluated|Denied/);
    expect(permissions.calls).toEqual([{ action: 'unknown:/2015-03-31/something', resource: '*', allowed: false }]);
  });

  test('the authorizer may read tokens and update them (last use), and may not create or delete one', async () => {
    const permissions = new FunctionPermissions(
      template(),
      functionNamed(template(), 'PlatformApiAuthorizer'),
      names(),
    );
    await permissions.check('dynamodb:GetItem', tableArn('DataTokensTable'));
    await permissions.check('dynamodb:UpdateItem', tableArn('DataTokensTable'));
    for (const action of ['dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem']) {
      await expect(permissions.check(action, tableArn('DataTokensTable'))).rejects.toThrow(
        new RegExp(`AccessDenied: PlatformApiAuthorizerFunction\\w+ may not ${action} on arn:aws:dynamodb:`),
      );
    }
  });

  test('the MCP server may read knowledge bases and write sessions (invoke_agent), and may change no knowledge base or token', async () => {
    const permissions = new FunctionPermissions(template(), functionNamed(template(), 'McpFunction'), names());
    await permissions.check('dynamodb:Query', tableArn('DataKnowledgeBasesTable'));
    await permissions.check('dynamodb:PutItem', tableArn('DataSessionsTable'));
    for (const table of ['DataKnowledgeBasesTable', 'DataTokensTable']) {
      await expect(permissions.check('dynamodb:PutItem', tableArn(table))).rejects.toBeInstanceOf(AccessDeniedError);
    }
    await expect(permissions.check('dynamodb:GetItem', tableArn('DataTokensTable'))).rejects.toBeInstanceOf(
      AccessDeniedError,
    );
    expect(permissions.calls.map((c) => c.allowed)).toEqual([true, true, false, false, false]);
  });

  test('WebhookDelivery may record attempts and update endpoints, and may neither delete an endpoint nor read documents', async () => {
    const queue = Object.keys(template().Resources).find(
      (k) => k.startsWith('WebhookDeliveryWebhookQueue') && template().Resources[k].Type === 'AWS::SQS::Queue',
    ) as string;
    const worker = new FunctionPermissions(
      template(),
      functionNamed(template(), 'WebhookDeliveryWebhookDeliveryFunction'),
      names(),
    );
    await worker.check('dynamodb:PutItem', tableArn('DataWebhookDeliveriesTable'));
    await worker.check('dynamodb:Query', tableArn('DataWebhookEndpointsTable'));
    await worker.check('dynamodb:UpdateItem', tableArn('DataWebhookEndpointsTable'));
    await worker.check('sqs:SendMessage', names().arn(queue));
    await expect(worker.check('dynamodb:DeleteItem', tableArn('DataWebhookEndpointsTable'))).rejects.toBeInstanceOf(
      AccessDeniedError,
    );
    await expect(worker.check('dynamodb:GetItem', tableArn('DataDocumentsTable'))).rejects.toBeInstanceOf(
      AccessDeniedError,
    );
    // The processor publishes status events to it; the endpoints' routes read the deliveries, never write them.
    const processor = new FunctionPermissions(
      template(),
      functionNamed(template(), 'DocumentProcessingProcessor'),
      names(),
    );
    await processor.check('sqs:SendMessage', names().arn(queue));
    const list = new FunctionPermissions(
      template(),
      functionNamed(template(), 'ListWebhookDeliveriesFunction'),
      names(),
    );
    await list.check('dynamodb:Query', tableArn('DataWebhookDeliveriesTable'));
    await expect(list.check('dynamodb:PutItem', tableArn('DataWebhookDeliveriesTable'))).rejects.toBeInstanceOf(
      AccessDeniedError,
    );
  });

  test('a statement deleted from a copy of the template refuses the call it allowed, naming function, action and resource', async () => {
    const copy = structuredClone(template());
    const fn = functionNamed(copy, 'UploadLinkFunction');
    const uploads = tableLogicalId(copy, 'DataUploadsTable');
    const resource = `arn:aws:dynamodb:${SYNTHETIC_REGION}:${SYNTHETIC_ACCOUNT}:table/${uploads}`;
    await new FunctionPermissions(copy, fn, new ResourceNames(copy)).check('dynamodb:PutItem', resource);

    let removed = 0;
    for (const r of Object.values(copy.Resources)) {
      if (r.Type !== 'AWS::IAM::Policy' || !JSON.stringify(r.Properties?.Roles).includes(fn.roleLogicalId)) continue;
      const document = r.Properties?.PolicyDocument as unknown as { Statement: PolicyStatement[] };
      const before = document.Statement.length;
      document.Statement = document.Statement.filter(
        (s) => !(JSON.stringify(s.Resource).includes(`"${uploads}"`) && JSON.stringify(s.Action).includes('PutItem')),
      );
      removed += before - document.Statement.length;
    }
    expect(removed).toBe(1);

    const denied = new FunctionPermissions(copy, fn, new ResourceNames(copy)).check('dynamodb:PutItem', resource);
    await expect(denied).rejects.toMatchObject({
      name: 'AccessDeniedError',
      functionId: fn.logicalId,
      action: 'dynamodb:PutItem',
      resource,
    });
    await expect(denied).rejects.toThrow(`AccessDenied: ${fn.logicalId} may not dynamodb:PutItem on ${resource}`);
  });
});

describe.each(['default', 'knowledgeIndex=dynamodb'])('scheduled targets of the %s stack', (variant) => {
  const template = () => templates[variant];
  const ofType = (t: CfnTemplate, type: string) =>
    Object.entries(t.Resources).filter(([, r]) => r.Type === type) as [string, { Properties: Record<string, Json> }][];

  test("each EventBridge Scheduler schedule's role trusts the scheduler and may invoke its target function", async () => {
    const schedules = ofType(template(), 'AWS::Scheduler::Schedule');
    expect(schedules.length).toBeGreaterThan(0);
    const names = new ResourceNames(template());
    const functions = new Set(functionsOf(template()).map((f) => f.logicalId));
    for (const [id, schedule] of schedules) {
      const target = schedule.Properties.Target as { Arn: Json; RoleArn: Json };
      const [targetId] = (target.Arn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
      const [roleId] = (target.RoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
      expect(functions.has(targetId)).toBe(true);
      expect(JSON.stringify(template().Resources[roleId].Properties?.AssumeRolePolicyDocument)).toContain(
        'scheduler.amazonaws.com',
      );
      await new FunctionPermissions(template(), { logicalId: id, roleLogicalId: roleId }, names).check(
        'lambda:InvokeFunction',
        names.arn(targetId),
      );
    }
  });

  test('each EventBridge rule may invoke its target functions (a Lambda permission for the rule)', () => {
    const names = new ResourceNames(template());
    const permissions = ofType(template(), 'AWS::Lambda::Permission').map(([, p]) => ({
      fn: JSON.stringify(p.Properties.FunctionName),
      principal: p.Properties.Principal,
      source: p.Properties.SourceArn === undefined ? undefined : resolveIntrinsics(p.Properties.SourceArn, names),
    }));
    const rules = ofType(template(), 'AWS::Events::Rule');
    expect(rules.length).toBeGreaterThan(0);
    for (const [id, rule] of rules) {
      for (const target of rule.Properties.Targets as { Arn: Json }[]) {
        expect(permissions).toContainEqual({
          fn: JSON.stringify(target.Arn),
          principal: 'events.amazonaws.com',
          source: names.arn(id),
        });
      }
    }
  });

  test('a schedule whose role lost its policy is refused, naming the schedule, action and function', async () => {
    const copy = structuredClone(template());
    const [id, schedule] = ofType(copy, 'AWS::Scheduler::Schedule')[0];
    const target = schedule.Properties.Target as { Arn: Json; RoleArn: Json };
    const [roleId] = (target.RoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
    for (const [policyId, policy] of ofType(copy, 'AWS::IAM::Policy')) {
      if (JSON.stringify(policy.Properties.Roles).includes(`"${roleId}"`)) delete copy.Resources[policyId];
    }
    const names = new ResourceNames(copy);
    const [targetId] = (target.Arn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
    await expect(
      new FunctionPermissions(copy, { logicalId: id, roleLogicalId: roleId }, names).check(
        'lambda:InvokeFunction',
        names.arn(targetId),
      ),
    ).rejects.toThrow(`AccessDenied: ${id} may not lambda:InvokeFunction on ${names.arn(targetId)}`);
  });
});

function bucketId(template: CfnTemplate): string {
  const id = Object.keys(template.Resources).find(
    (k) => k.startsWith('DocumentStorageDocumentsBucket') && template.Resources[k].Type === 'AWS::S3::Bucket',
  );
  if (!id) throw new Error('no documents bucket');
  return id;
}
