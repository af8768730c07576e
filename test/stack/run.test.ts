/**
 * The synthesized stack (`-c knowledgeIndex=dynamodb`, the variant that runs here end to end: no Bedrock) run from
 * its cloud assembly: HTTP requests through the API Gateway the template declares, each function run from its asset
 * in a Node 22 process of its own, each AWS call checked against that function's role, S3 → SQS → the processor
 * through the event source mapping. Then a grant and an environment variable removed from copies of the template.
 */
import * as fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fireSessionId } from '#core/flows/scheduler';
import { deskAgent, stubCrm } from '../../examples/desk-agent/agent';
import { runtimeNodePath, unusedEnvironmentVariables } from '../../lib/stack-check/asset-checks';
import {
  type CfnTemplate,
  type CloudAssembly,
  type Json,
  nodeFunctions,
  synthesizeCloudAssembly,
} from '../../lib/stack-check/cloud-assembly';
import type { PolicyStatement } from '../../lib/stack-check/iam';
import { greetDefinition } from '../helpers/flow-definitions';
import { pollUntil } from '../helpers/poll';
import { api, dataset, uploadProcessed } from '../helpers/stack-api';
import { assetChecks } from '../helpers/stack-assets';
import { type StackProcess, startStackProcess } from '../helpers/stack-process';
import { MUTATIONS, only } from './mutations';

let workdir: string;
let assembly: CloudAssembly;
let nodePath: string;

/** A customer's agent code function, registered with the deployment (`-c agentCodeFunctions`), and one that is not. */
const AGENT_CODE_ARN = 'arn:aws:lambda:us-east-1:111122223333:function:desk-agent';
const UNREGISTERED_ARN = 'arn:aws:lambda:us-east-1:111122223333:function:someone-else';

beforeAll(() => {
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-run-'));
  assembly = synthesizeCloudAssembly(path.join(workdir, 'cdk.out'), {
    knowledgeIndex: 'dynamodb',
    models: 'offline',
    agentCodeFunctions: AGENT_CODE_ARN,
  });
  nodePath = runtimeNodePath();
}, 300_000);

afterAll(() => {
  fs.rmSync(workdir, { recursive: true, force: true });
  fs.rmSync(path.dirname(nodePath), { recursive: true, force: true });
});

describe('its assets', () => {
  assetChecks(
    'knowledgeIndex=dynamodb models=offline',
    () => assembly,
    () => nodePath,
  );
});

/**
 * The customer's function behind AGENT_CODE_ARN: examples/desk-agent's Lambda handler, served for the stack-check's
 * Lambda stand-in (in AWS the function's own resource policy lets the platform's roles invoke it: README). What it
 * was invoked with and answered is kept; `secret` is the agent's, once the test has it.
 */
const agentCode = {
  secret: 'whsec_c2V0IGJ5IHRoZSB0ZXN0',
  calls: [] as { event: string; statusCode: number }[],
  chat: [] as string[],
  server: undefined as Server | undefined,
};

async function startAgentCode(): Promise<string> {
  const server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', async () => {
      const body = Buffer.concat(parts).toString('utf8');
      if (request.url === '/chat') {
        agentCode.chat.push((JSON.parse(body) as { text: string }).text);
        response.end('{}');
        return;
      }
      const agent = deskAgent({
        secrets: agentCode.secret,
        crm: stubCrm,
        chatWebhookUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/chat`,
      });
      const event = JSON.parse(body) as { body?: string; headers?: Record<string, string> };
      const result = await agent.lambda(event);
      const sent = JSON.parse(event.body ?? '{}') as { event?: string };
      agentCode.calls.push({ event: String(sent.event), statusCode: result.statusCode });
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(result));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  agentCode.server = server;
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/invoke`;
}

/** The stack of the assembly, or of a changed copy of its template (the same asset folders). */
async function started(template?: CfnTemplate, externalFunctions?: Record<string, string>): Promise<StackProcess> {
  if (!template) return startStackProcess(assembly.directory, undefined, { externalFunctions });
  const file = path.join(workdir, `template-${Date.now()}.json`);
  fs.writeFileSync(file, JSON.stringify(template));
  return startStackProcess(assembly.directory, file);
}

/** A copy of the template with `edit` applied to the resource whose logical id starts with `prefix`. */
function templateWith(prefix: string, type: string, edit: (properties: Record<string, Json>) => void): CfnTemplate {
  const copy = structuredClone(assembly.template);
  const matches = Object.entries(copy.Resources).filter(([id, r]) => id.startsWith(prefix) && r.Type === type);
  expect(matches).toHaveLength(1);
  edit(matches[0][1].Properties as Record<string, Json>);
  return copy;
}

describe('the synthesized stack, run from its assets', () => {
  let stack: StackProcess;
  let startedAt: number;

  beforeAll(async () => {
    startedAt = Date.now();
    stack = await started(undefined, { [AGENT_CODE_ARN]: await startAgentCode() });
  }, 60_000);

  afterAll(async () => {
    if (!stack) return;
    const report = await stack.report();
    const invocations = Object.values(report.invocations).reduce((n, i) => n + i, 0);
    console.log(
      `[stack] ${report.functions} functions in the template, ${report.functionsRun} run (${invocations} ` +
        `invocations), ${report.callsChecked} AWS calls checked against their roles, ${report.denials.length} ` +
        `refused, in ${Date.now() - startedAt} ms. Bedrock is not run here: this variant indexes in DynamoDB and ` +
        'generate answers extractively.',
    );
    await stack.stop();
    agentCode.server?.close();
  });

  test('upload-link → PUT → upload-complete → processed ready → found by a query, every call allowed', async () => {
    const call = api(stack, stack.token);
    const d = await dataset(call);
    const { s3Key, document } = await uploadProcessed(
      call,
      d,
      'zebra.txt',
      'The zebra crossing manual: stripes are repainted every spring.',
    );
    expect(document.body.status).toBe('ready');
    const listed = await call('GET', `/api/v1/knowledge/documents/list?${new URLSearchParams(d)}`);
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).toContain(s3Key);

    const found = await call(
      'POST',
      `/dashboard/agents/${d.agentId}/knowledge/${d.environment}/kb/${d.knowledgeBaseId}/query`,
      {
        query: 'zebra stripes',
      },
    );
    expect(found.status).toBe(200);
    expect(JSON.stringify(found.body.results)).toContain('zebra crossing manual');

    const report = await stack.report();
    expect(report.denials).toEqual([]);
    expect(report.wiringErrors).toEqual([]);
    const processor = Object.keys(report.invocations).find((id) => id.startsWith('DocumentProcessingProcessor'));
    expect(processor).toBeDefined();
    expect(report.callsChecked).toBeGreaterThan(20);
  }, 120_000);

  test('a token restricted to one agent is minted (CreateToken reads the agents table: it had neither the variable nor the grant)', async () => {
    const call = api(stack, stack.token);
    const { agentId } = await dataset(call);
    const minted = await call('POST', '/dashboard/tokens', {
      name: 'one agent',
      scopes: ['webhook'],
      agentIds: [agentId],
    });
    expect(minted).toMatchObject({ status: 201, body: { agentIds: [agentId] } });
    const report = await stack.report();
    expect(report.denials).toEqual([]);
  });

  test("people: sign-up is closed (by invitation), an owner's invitation reaches the user pool, a token manages nobody, every call allowed", async () => {
    const signUp = await api(stack, null)('POST', '/dashboard/signup', {
      email: 'someone@example.com',
      password: 'Some-pass-1',
      organizationName: 'Theirs',
    });
    expect(signUp).toMatchObject({ status: 403, body: { error: { code: 'SIGNUP_CLOSED' } } });
    const owner = api(stack, stack.owner.idToken);
    const me = await owner('GET', '/dashboard/me');
    expect(me).toMatchObject({
      status: 200,
      body: { organizations: [{ organizationId: stack.owner.organizationId, role: 'owner' }] },
    });
    const invited = await owner('POST', '/dashboard/members', { email: 'Invited@Example.com', role: 'member' });
    expect(invited).toMatchObject({ status: 201, body: { email: 'invited@example.com', status: 'invited' } });
    expect((await owner('GET', '/dashboard/members')).body).toMatchObject({
      data: [
        { email: 'owner@stack-check.example.com', role: 'owner', status: 'active' },
        { email: 'invited@example.com', role: 'member', status: 'invited' },
      ],
    });
    expect((await owner('DELETE', '/dashboard/members/invited@example.com')).body).toMatchObject({
      status: 'invitationCancelled',
    });
    // A token of an organization invites nobody.
    const byToken = await api(stack, stack.token)('POST', '/dashboard/members', { email: 'x@example.com' });
    expect(byToken).toMatchObject({ status: 403, body: { error: { details: [{ rule: 'members.person' }] } } });
    const report = await stack.report();
    expect(report.denials).toEqual([]);
    for (const route of ['SignUp', 'InviteMember', 'ListMembers', 'RemoveMember', 'GetMe']) {
      expect(Object.keys(report.invocations).some((id) => id.startsWith(`${route}Function`))).toBe(true);
    }
  });

  test('the scheduled rule and schedule invoke the watchdog and the flow scheduler with the events AWS sends', async () => {
    const fired = await stack.fireSchedules();
    expect(fired.map((f) => f.functionId).sort()).toEqual([
      expect.stringMatching(/^DocumentProcessingWatchdogFunction/),
      expect.stringMatching(/^FlowSchedulerScheduleTickFunction/),
    ]);
    expect(fired.filter((f) => f.error)).toEqual([]);
    const report = await stack.report();
    expect(report.denials).toEqual([]);
    expect(report.wiringErrors).toEqual([]);
  });

  test("a flow's browserTask node is handed to the flow runner, which invokes BrowserTask through Lambda's Invoke API, with its grant", async () => {
    const call = api(stack, stack.token);
    const { agentId } = await dataset(call);
    const definition = {
      instructions: 'You are a buyer.',
      flows: [
        {
          name: 'order',
          nodes: [
            { name: 'Order', type: 'trigger', triggerType: 'webhook' },
            { name: 'Browse', type: 'browserTask', prompt: 'Read the page', url: 'https://example.invalid/' },
          ],
          edges: [{ from: 'Order', to: 'Browse', type: 'stepForward' }],
        },
      ],
    };
    expect((await call('PUT', `/dashboard/agents/${agentId}/definition/production`, definition)).status).toBe(200);
    const run = await call('POST', `/api/v1/webhooks/${agentId}/production/Order`, {});
    // The task's bound (120 s) does not fit in the request's 28 s: the run goes to the runner before it starts.
    expect([run.status, run.body.status]).toEqual([202, 'running']);
    const report = await pollUntil(
      () => stack.report(),
      (r) => Object.keys(r.invocations).some((id) => id.startsWith('BrowserTaskBrowserTaskFunction')),
      60_000,
    );
    expect(Object.keys(report.invocations).some((id) => id.startsWith('BrowserTaskBrowserTaskFunction'))).toBe(true);
    expect(report.denials).toEqual([]);
  }, 90_000);

  test('agent code registered as a Lambda function is invoked through the grant the stack made: signed trigger event first, then the AI message', async () => {
    const call = api(stack, stack.token);
    const { agentId } = await dataset(call);
    const rotated = await call('POST', `/dashboard/agents/${agentId}/callback-secret`, {});
    expect(rotated.status).toBe(201);
    agentCode.secret = String(rotated.body.secret);
    const definition = (functionArn: string) =>
      greetDefinition('Hello, {memory.tier}.', { agentCode: { functionArn } }, { name: 'ChatOffline' });
    const refused = await call(
      'PUT',
      `/dashboard/agents/${agentId}/definition/production`,
      definition(UNREGISTERED_ARN),
    );
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('agentCode.functionNotRegistered');
    expect(
      (await call('PUT', `/dashboard/agents/${agentId}/definition/production`, definition(AGENT_CODE_ARN))).status,
    ).toBe(200);

    const run = await call('POST', `/api/v1/webhooks/${agentId}/production/Start`, { customerId: 'cust-1' });
    expect(run.status).toBe(200);
    const [message] = run.body.aiMessages as { content: string; callback: { delivered: boolean } }[];
    // The tier the trigger handler loaded reached the prompt; the AI message reached the same function, and the chat.
    expect(message.content).toContain('Hello, tier:gold.');
    expect(message.callback.delivered).toBe(true);
    expect(agentCode.calls).toEqual([
      { event: 'TRIGGER_EVENT', statusCode: 200 },
      { event: 'AgentEvents.AI_MESSAGE', statusCode: 204 },
    ]);
    expect(agentCode.chat).toEqual([message.content]);
    const report = await stack.report();
    expect(report.denials).toEqual([]);
    // The grant names the registered function alone (and BrowserTask): no wildcard, nothing unregistered.
    const invokable = new Set(
      Object.values(assembly.template.Resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .flatMap(
          (r) =>
            (r.Properties as unknown as { PolicyDocument: { Statement: PolicyStatement[] } }).PolicyDocument.Statement,
        )
        .filter((statement) => ([] as string[]).concat(statement.Action ?? []).includes('lambda:InvokeFunction'))
        .flatMap((statement) => ([] as unknown[]).concat(statement.Resource ?? []))
        .map((resource) => (typeof resource === 'string' ? resource : 'BrowserTask')),
    );
    expect([...invokable].sort()).toEqual(['BrowserTask', AGENT_CODE_ARN]);
  }, 90_000);

  test('a schedule fire goes from the tick through the flow run queue to the flow runner, each with its grants', async () => {
    const call = api(stack, stack.token);
    const { agentId } = await dataset(call);
    // The first whole minute after the definition is stored, as a cron that fires then only.
    const fireAt = new Date(Math.ceil((Date.now() + 2_000) / 60_000) * 60_000);
    const cron = `${fireAt.getUTCMinutes()} ${fireAt.getUTCHours()} ${fireAt.getUTCDate()} ${fireAt.getUTCMonth() + 1} *`;
    const definition = {
      flows: [
        {
          name: 'nightly',
          nodes: [
            { name: 'Tick', type: 'trigger', triggerType: 'schedule', cronExpression: cron },
            { name: 'Report', type: 'promptNode', displayName: 'Report', prompt: 'Report for {memory.scheduledAt}.' },
          ],
          edges: [{ from: 'Tick', to: 'Report', type: 'stepForward' }],
        },
      ],
    };
    expect((await call('PUT', `/dashboard/agents/${agentId}/definition/production`, definition)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, fireAt.getTime() - Date.now() + 1_000)));
    // As EventBridge Scheduler invokes it (the stack's own minute may have sent the fire already: sent once either way).
    expect((await stack.fireSchedules()).filter((f) => f.error)).toEqual([]);
    const sessionPath = `/dashboard/agents/${agentId}/sessions/production/${fireSessionId(agentId, 'production', 'Tick', fireAt)}`;
    const session = await pollUntil(
      () => call('GET', sessionPath),
      (r) => r.status === 200 && r.body.status === 'completed',
      60_000,
    );
    expect(session.body).toMatchObject({
      status: 'completed',
      trigger: { name: 'Tick', type: 'schedule' },
      memory: { scheduledAt: fireAt.toISOString() },
    });
    const report = await stack.report();
    expect(Object.keys(report.invocations).some((id) => id.startsWith('FlowRunnerFlowRunnerFunction'))).toBe(true);
    expect(report.denials).toEqual([]);
    expect(report.wiringErrors).toEqual([]);
  }, 150_000);

  // Last of this stack's tests: it replays what they made the functions do.
  test.each(MUTATIONS.filter((m) => m.caughtBy === 'IAM replay' && m.variant !== 'bedrock').map((m) => [m.id, m]))(
    'mutation %s is caught: a call the functions made is refused by the mutated roles',
    async (_id, mutation) => {
      const copy = structuredClone(assembly.template);
      mutation.apply(copy);
      const file = path.join(workdir, `mutation-${mutation.id}.json`);
      fs.writeFileSync(file, JSON.stringify(copy));
      const refused = await stack.replay(file);
      const lines = refused.map((d) => `${d.functionId} ${d.action} ${d.resource}`);
      expect(lines.some((line) => mutation.expected.test(line))).toBe(true);
    },
  );

  test('the same calls replayed against the template as synthesized are all allowed', async () => {
    const unchanged = path.join(workdir, 'unchanged.json');
    fs.writeFileSync(unchanged, JSON.stringify(assembly.template));
    expect(await stack.replay(unchanged)).toEqual([]);
  });

  test('the gateway answers as the template declares: 401 without a token, 404 for a path it does not know', async () => {
    const anonymous = api(stack, null);
    const missing = await anonymous('POST', '/dashboard/agents', { displayName: 'x' });
    expect(missing).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHORIZED' } } });
    // API Gateway's MISSING_AUTHENTICATION_TOKEN, which the template's RouteNotFound response makes a 404.
    expect(await anonymous('GET', '/no/such/route')).toMatchObject({
      status: 404,
      body: { success: false, error: { code: 'ROUTE_NOT_FOUND' } },
    });
    expect((await anonymous('GET', '/health')).status).toBe(200);
  });
});

test('a grant removed from the template fails the call with AccessDenied naming function, action and resource', async () => {
  const copy = structuredClone(assembly.template);
  const uploadLink = nodeFunctions({ ...assembly, template: copy }).find((f) =>
    f.logicalId.startsWith('UploadLinkFunction'),
  );
  if (!uploadLink) throw new Error('no UploadLink function');
  const uploads = Object.keys(copy.Resources).find(
    (id) => id.startsWith('DataUploadsTable') && copy.Resources[id].Type === 'AWS::DynamoDB::Table',
  ) as string;
  let removed = 0;
  for (const r of Object.values(copy.Resources)) {
    if (r.Type !== 'AWS::IAM::Policy' || !JSON.stringify(r.Properties?.Roles).includes(uploadLink.roleLogicalId))
      continue;
    const document = r.Properties?.PolicyDocument as unknown as { Statement: PolicyStatement[] };
    const before = document.Statement.length;
    document.Statement = document.Statement.filter(
      (s) => !(JSON.stringify(s.Resource).includes(`"${uploads}"`) && JSON.stringify(s.Action).includes('PutItem')),
    );
    removed += before - document.Statement.length;
  }
  expect(removed).toBe(1);

  const stack = await started(copy);
  try {
    const call = api(stack, stack.token);
    const link = await call('POST', '/api/v1/knowledge/documents/upload-link', {
      ...(await dataset(call)),
      fileName: 'a.txt',
    });
    expect(link.status).toBeGreaterThanOrEqual(500);
    // The statement removed granted writes to the documents and uploads tables; the first write is refused.
    expect((await stack.report()).denials).toContainEqual({
      functionId: uploadLink.logicalId,
      action: 'dynamodb:PutItem',
      resource: expect.stringMatching(/^arn:aws:dynamodb:us-east-1:000000000000:table\/Data(Documents|Uploads)Table/),
    });
  } finally {
    await stack.stop();
  }
}, 60_000);

test('an environment variable removed from the template fails the function that needs it, naming the variable', async () => {
  const copy = templateWith('UploadLinkFunction', 'AWS::Lambda::Function', (p) => {
    const variables = (p.Environment as { Variables: Record<string, Json> }).Variables;
    expect(variables.UPLOADS_TABLE).toBeDefined();
    delete variables.UPLOADS_TABLE;
  });
  const stack = await started(copy);
  try {
    const call = api(stack, stack.token);
    const link = await call('POST', '/api/v1/knowledge/documents/upload-link', {
      ...(await dataset(call)),
      fileName: 'a.txt',
    });
    expect(link.status).toBe(500);
    const { output } = await stack.report();
    const uploadLink = Object.keys(output).find((id) => id.startsWith('UploadLinkFunction')) as string;
    expect(output[uploadLink]).toContain('Missing configuration: environment variable UPLOADS_TABLE');
  } finally {
    await stack.stop();
  }
}, 60_000);

const mutation = (id: string) => {
  const found = MUTATIONS.find((m) => m.id === id);
  if (!found) throw new Error(`no mutation ${id}`);
  return found;
};

test('mutation notification-filtered-to-an-unused-prefix is caught: the run reports the upload S3 would not notify', async () => {
  const filtered = mutation('notification-filtered-to-an-unused-prefix');
  const copy = structuredClone(assembly.template);
  filtered.apply(copy);
  const stack = await started(copy);
  try {
    const call = api(stack, stack.token);
    const link = await call('POST', '/api/v1/knowledge/documents/upload-link', {
      ...(await dataset(call)),
      fileName: 'a.txt',
    });
    expect(link.status).toBe(200);
    const put = await fetch(String(link.body.uploadUrl), {
      method: 'PUT',
      headers: link.body.requiredHeaders as Record<string, string>,
      body: 'text',
    });
    expect(put.status).toBe(200);
    const report = await pollUntil(
      () => stack.report(),
      (r) => r.wiringErrors.length > 0,
      10_000,
    );
    expect(report.wiringErrors.some((e) => filtered.expected.test(e))).toBe(true);
  } finally {
    await stack.stop();
  }
}, 60_000);

test('mutation environment-variable-misspelt is caught: the asset check names the variable no bundle reads', () => {
  const misspelt = mutation('environment-variable-misspelt');
  const copy = structuredClone(assembly.template);
  misspelt.apply(copy);
  const uploadLink = nodeFunctions({ ...assembly, template: copy }).find((f) =>
    f.logicalId.startsWith('UploadLinkFunction'),
  );
  if (!uploadLink) throw new Error('no UploadLink function');
  expect(unusedEnvironmentVariables(uploadLink).filter((name) => misspelt.expected.test(name))).toHaveLength(1);
  const original = nodeFunctions(assembly).find((f) => f.logicalId === uploadLink.logicalId);
  expect(original && unusedEnvironmentVariables(original)).toEqual([]);
});

test('a run past its request budget is handed over: the flow runner takes it from its queue and completes it', async () => {
  // FLOW_SYNC_BUDGET_MS=1 on the webhook function (20 s in the stack): the run is handed over before its first node.
  const copy = structuredClone(assembly.template);
  const [, webhook] = only(copy, 'InvokeWebhookFunction', 'AWS::Lambda::Function');
  (webhook.Environment as { Variables: Record<string, Json> }).Variables.FLOW_SYNC_BUDGET_MS = '1';
  const stack = await started(copy);
  try {
    const call = api(stack, stack.token);
    const { agentId } = await dataset(call);
    const definition = {
      instructions: 'You greet people.',
      flows: [
        {
          name: 'greet',
          nodes: [
            { name: 'Start', type: 'trigger', triggerType: 'webhook' },
            {
              name: 'Greet',
              type: 'promptNode',
              displayName: 'Greet',
              llmConfig: { name: 'ChatOffline' },
              prompt: 'Say hello to {memory.name}',
            },
          ],
          edges: [{ from: 'Start', to: 'Greet', type: 'stepForward' }],
        },
      ],
    };
    expect((await call('PUT', `/dashboard/agents/${agentId}/definition/production`, definition)).status).toBe(200);
    const run = await call('POST', `/api/v1/webhooks/${agentId}/production/Start`, { name: 'Ada' });
    expect(run).toMatchObject({ status: 202, body: { status: 'running' } });
    const session = await pollUntil(
      () => call('GET', `/dashboard/agents/${agentId}/sessions/production/${String(run.body.sessionId)}`),
      (r) => r.body.status !== 'running',
      60_000,
    );
    expect(session.body.status).toBe('completed');
    const report = await stack.report();
    expect(Object.keys(report.invocations).some((id) => id.startsWith('FlowRunnerFlowRunnerFunction'))).toBe(true);
    expect(report.denials).toEqual([]);
    expect(report.wiringErrors).toEqual([]);
  } finally {
    await stack.stop();
  }
}, 90_000);
