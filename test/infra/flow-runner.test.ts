/**
 * The flow runner in the synthesized stack (bin/app.ts with cdk.json's context and cdk-nag, handlers not bundled,
 * once for this file): its queue and dead-letter queue (SQS-managed encryption, TLS only, redrive), the function
 * (15 minutes, under the queue's visibility timeout), the event source (one run per invocation, partial batch
 * responses), what the runner may do, that only the webhook and app-event functions may hand a run over to it, and
 * that the schedule tick sends fires to it and does nothing else of a flow.
 */
import { type CfnElement, Stack } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { ATTACHMENTS_PREFIX } from '#core/flows/attachments';
import { FLOW_RUN_MAX_RECEIVES } from '../../lib/constructs/flow-runner';
import { FLOW_RUN_MAX_RECEIVES as LOCAL_FLOW_RUN_MAX_RECEIVES } from '../../lib/local/engines';
import { RESOURCE_ENV, ROUTES, WORKERS } from '../../lib/routes';
import { type Synthesized, synthesizeUnbundled } from '../helpers/synth';

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}
type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

let synthesized: Synthesized;
let resources: Resources;

beforeAll(() => {
  synthesized = synthesizeUnbundled();
  resources = synthesized.template.toJSON().Resources as Resources;
});
afterAll(() => synthesized.dispose());

const logicalId = (construct: IConstruct): string =>
  Stack.of(construct).getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);
const runner = () => synthesized.stack.flowRunner;
const queueId = () => logicalId(runner().queue);

function statementsOf(fn: IConstruct): Statement[] {
  const roleId = logicalId((fn as unknown as { role: IConstruct }).role);
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .filter((r) => JSON.stringify(r.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

function actionsOn(statements: Statement[], resourceLogicalId: string): string[] {
  return statements
    .filter((s) => s.Effect === 'Allow' && JSON.stringify(s.Resource).includes(`"${resourceLogicalId}"`))
    .flatMap((s) => ([] as string[]).concat(s.Action))
    .sort();
}

function variablesOf(fn: IConstruct): Record<string, unknown> {
  return (resources[logicalId(fn)].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

it('synthesizes with no unacknowledged cdk-nag finding', () => {
  expect(synthesized.violations).toEqual([]);
});

it("runs the runner's handler for up to 15 minutes, under its queue's visibility timeout", () => {
  const fn = resources[logicalId(runner().function)].Properties;
  const queue = resources[queueId()].Properties;
  expect(fn).toMatchObject({ Timeout: 900, Runtime: 'nodejs22.x' });
  expect(WORKERS.flowRunner.handler).toBe('lambdas/handlers/queue/flow-runner.ts');
  expect(queue.VisibilityTimeout as number).toBeGreaterThan(fn.Timeout as number);
});

it('consumes its queue one run per invocation, with partial batch responses', () => {
  synthesized.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
    FunctionName: { Ref: logicalId(runner().function) },
    EventSourceArn: { 'Fn::GetAtt': [queueId(), 'Arn'] },
    BatchSize: 1,
    FunctionResponseTypes: ['ReportBatchItemFailures'],
  });
});

it('moves a message that keeps failing to its dead-letter queue, as the local queue does', () => {
  expect(resources[queueId()].Properties).toMatchObject({
    RedrivePolicy: {
      deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(runner().deadLetterQueue), 'Arn'] },
      maxReceiveCount: FLOW_RUN_MAX_RECEIVES,
    },
  });
  expect(FLOW_RUN_MAX_RECEIVES).toBe(LOCAL_FLOW_RUN_MAX_RECEIVES);
});

it.each([
  ['flow run queue', () => runner().queue],
  ['flow run dead-letter queue', () => runner().deadLetterQueue],
])('the %s is encrypted by SQS and refuses requests without TLS', (_name, queue) => {
  expect(resources[logicalId(queue())].Properties).toMatchObject({ SqsManagedSseEnabled: true });
  synthesized.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
    Queues: [{ Ref: logicalId(queue()) }],
    PolicyDocument: {
      Statement: Match.arrayWith([
        Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      ]),
    },
  });
});

it('only the webhook, app-event and MCP functions may send to the queue, and they are told its URL', () => {
  // Functions, not routes: the dashboard's mirror of the webhook runs on InvokeWebhook's function (functionOf).
  const functionRoutes = ROUTES.filter((route) => route.functionOf === undefined);
  const senders = functionRoutes.filter((route) => route.access.flowRunQueue === 'send').map((route) => route.id);
  // The MCP server's invoke_agent runs a webhook trigger, and hands a long run over as the webhook does.
  expect(senders.sort()).toEqual(['InvokeWebhook', 'Mcp', 'SendAppEvent']);
  for (const route of functionRoutes) {
    const fn = synthesized.stack.api.functions[route.id];
    const actions = actionsOn(statementsOf(fn), queueId());
    if (senders.includes(route.id)) {
      expect(actions).toEqual(expect.arrayContaining(['sqs:SendMessage']));
      expect(
        actions.filter((a) => !a.startsWith('sqs:Send') && a !== 'sqs:GetQueueAttributes' && a !== 'sqs:GetQueueUrl'),
      ).toEqual([]);
      expect(variablesOf(fn)[RESOURCE_ENV.flowRunQueue]).toEqual({ Ref: queueId() });
    } else {
      expect(actions).toEqual([]);
      expect(variablesOf(fn)).not.toHaveProperty(RESOURCE_ENV.flowRunQueue);
    }
  }
});

it('the schedule tick sends fires to the queue: definitions read, its fire log read and updated, no flow runtime', () => {
  const stack = synthesized.stack;
  const tick = stack.scheduler.tick;
  const statements = statementsOf(tick);
  const sends = actionsOn(statements, queueId());
  expect(sends).toEqual(expect.arrayContaining(['sqs:SendMessage']));
  expect(
    sends.filter((a) => !a.startsWith('sqs:Send') && a !== 'sqs:GetQueueAttributes' && a !== 'sqs:GetQueueUrl'),
  ).toEqual([]);
  expect(variablesOf(tick)[RESOURCE_ENV.flowRunQueue]).toEqual({ Ref: queueId() });
  const tables = stack.data.tables;
  expect(actionsOn(statements, logicalId(tables.agentDefinitions))).not.toContain('dynamodb:PutItem');
  expect(actionsOn(statements, logicalId(tables.agentDefinitions))).toContain('dynamodb:Query');
  expect(actionsOn(statements, logicalId(tables.rateLimits))).toEqual(
    expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:UpdateItem']),
  );
  expect(actionsOn(statements, logicalId(tables.rateLimits))).not.toContain('dynamodb:PutItem');
  // It runs no flow: no session, analytics, model, browser or knowledge index.
  for (const table of ['sessions', 'analytics', 'agents', 'knowledgeBases', 'retrievalConfigs'] as const) {
    expect(actionsOn(statements, logicalId(tables[table]))).toEqual([]);
  }
  expect(actionsOn(statements, logicalId(stack.browserTask.function))).toEqual([]);
  expect(JSON.stringify(statements)).not.toContain('bedrock:');
});

it('the runner runs flows as the webhook does: sessions, the BrowserTask function, its own queue; images read only', () => {
  const fn = runner().function;
  const statements = statementsOf(fn);
  const stack = synthesized.stack;
  // Its own queue: consumed (the event source), and sent to when it hands a run over at its own deadline.
  expect(actionsOn(statements, queueId())).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:SendMessage']));
  expect(actionsOn(statements, logicalId(stack.data.tables.sessions))).toContain('dynamodb:PutItem');
  expect(actionsOn(statements, logicalId(stack.data.tables.agentDefinitions))).not.toContain('dynamodb:PutItem');
  expect(actionsOn(statements, logicalId(stack.browserTask.function))).toEqual(['lambda:InvokeFunction']);
  expect(actionsOn(statements, logicalId(stack.storage.queue))).toEqual([]);
  const bucketId = logicalId(stack.storage.bucket);
  expect(statements.filter((s) => JSON.stringify(s.Resource).includes(`"${bucketId}"`))).toEqual([
    {
      Effect: 'Allow',
      Action: 's3:GetObject',
      Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, `/${ATTACHMENTS_PREFIX}*`]] },
    },
  ]);
  expect(variablesOf(fn)).toMatchObject({
    [RESOURCE_ENV.flowRunQueue]: { Ref: queueId() },
    [RESOURCE_ENV.tables.sessions]: { Ref: logicalId(stack.data.tables.sessions) },
    [RESOURCE_ENV.documentsBucket]: { Ref: bucketId },
    BROWSER_DRIVER: 'lambda',
  });
});
