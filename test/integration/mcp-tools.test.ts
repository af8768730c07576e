/**
 * Tools of an MCP server in flows, end to end on the local runtime (`bin/local.ts` as a child process): a real MCP
 * server of the SDK on loopback (McpServer behind a Streamable HTTP transport, test/helpers/mcp-server.ts), the
 * scripted model server as the default model, the server's bearer token a secret of the deployment (MCP_SECRETS).
 * Listing at validation (a tool the server does not offer, an allow-list entry it does not offer, an unreachable
 * server: problems at their fields), a tool node's call, a prompt node's model calling the tools (their schemas as the
 * server lists them, arguments checked against them), a tool's error, a slow server cut off at its bound, and loopback
 * refused by a runtime without OUTBOUND_ALLOW_PRIVATE_NETWORK.
 */

import { startMcpServer, type TestMcpServer } from '../helpers/mcp-server';
import {
  type ChatRequest,
  offersTools,
  type ScriptedModelServer,
  startScriptedModelServer,
  toolResults,
} from '../helpers/scripted-model-server';
import { client, startService, type TestService } from '../helpers/service';

jest.setTimeout(120_000);

const SECRET = 'crm-token-7f3a';

let mcp: TestMcpServer;
let model: ScriptedModelServer;
let service: TestService;
let call: ReturnType<typeof client>;
let agentId: string;

interface Problem {
  field: string;
  rule: string;
  message: string;
  flow?: string;
  node?: string;
}

interface Result {
  sessionId: string;
  status: string;
  aiMessages: { node: string; content: string }[];
  outputs: Record<string, Record<string, unknown>>;
  error: { code: string; message: string; node: string | null } | null;
}

const trigger = (name: string) => ({ name, type: 'trigger', triggerType: 'webhook' });
const flow = (name: string, nodes: Record<string, unknown>[]) => ({
  name,
  nodes,
  edges: nodes.slice(1).map((node, i) => ({ from: nodes[i].name, to: node.name, type: 'stepForward' })),
});

function definition(overrides: { mcpServers?: unknown[]; flows?: unknown[] } = {}) {
  return {
    mcpServers: [
      {
        name: 'crm',
        description: 'The customer records',
        url: mcp.url,
        bearerSecret: 'crm',
        tools: ['lookup_customer', 'open_ticket', 'slow_report', 'huge_export'],
        timeoutSeconds: 2,
      },
    ],
    flows: [
      flow('lookup', [
        trigger('Lookup'),
        { name: 'Customer', type: 'tool', toolName: 'crm__lookup_customer', parameters: { customerId: '{memory.id}' } },
        {
          name: 'Reply',
          type: 'promptNode',
          displayName: 'Reply',
          llmConfig: { name: 'ChatOffline' },
          prompt: '{tools.Customer.structuredContent.name} is {tools.Customer.structuredContent.tier}.',
        },
      ]),
      flow('assist', [
        trigger('Assist'),
        {
          name: 'Assistant',
          type: 'promptNode',
          displayName: 'Assistant',
          prompt: 'Help the customer.',
          tools: ['crm__lookup_customer', 'crm__open_ticket'],
        },
      ]),
      flow('slow', [trigger('Slow'), { name: 'Report', type: 'tool', toolName: 'crm__slow_report' }]),
      flow('huge', [trigger('Huge'), { name: 'Export', type: 'tool', toolName: 'crm__huge_export' }]),
    ],
    ...overrides,
  };
}

beforeAll(async () => {
  [mcp, model] = await Promise.all([startMcpServer(), startScriptedModelServer()]);
  service = await startService({
    env: {
      // The MCP server and the model server of this test are on loopback, which the runtime refuses unless told so.
      OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true',
      MODEL_BASE_URL: model.baseUrl,
      MODEL_NAME: 'scripted',
      MCP_SECRETS: JSON.stringify({ crm: { origin: mcp.origin, value: SECRET } }),
    },
  });
  call = client(service);
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Desk' } });
  agentId = agent.body.agentId;
  const put = await call('PUT', `/dashboard/agents/${agentId}/definition/production`, { body: definition() });
  if (put.status !== 200) throw new Error(JSON.stringify(put.body));
});

afterAll(async () => {
  await service?.stop();
  await Promise.all([mcp?.close(), model?.close()]);
});

const validate = (body: unknown) =>
  call<{ valid: boolean; problems: Problem[] }>('POST', `/dashboard/agents/${agentId}/definition/production/validate`, {
    body,
  });
const webhook = (name: string, body: Record<string, unknown>) =>
  call<Result>('POST', `/api/v1/webhooks/${agentId}/production/${name}`, { body });

describe('validation lists the servers', () => {
  it('a definition naming tools the server offers is valid, listed with the bearer secret of the deployment', async () => {
    mcp.authorizations.length = 0;
    const answer = await validate(definition());
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ valid: true, problems: [] });
    // initialize, notifications/initialized, tools/list: each with the secret's value, which no definition holds.
    expect(mcp.authorizations.length).toBeGreaterThanOrEqual(3);
    expect(new Set(mcp.authorizations)).toEqual(new Set([`Bearer ${SECRET}`]));
  });

  it('a tool the server does not offer, and an allow-list entry it does not offer, are problems at their fields', async () => {
    const body = definition({
      mcpServers: [
        { name: 'crm', url: mcp.url, bearerSecret: 'crm', tools: ['lookup_customer', 'delete_everything'] },
        { name: 'open', url: mcp.url },
      ],
      flows: [
        flow('main', [
          trigger('Start'),
          {
            name: 'Ask',
            type: 'promptNode',
            displayName: 'Ask',
            prompt: 'Hi',
            tools: ['crm__lookup_customer', 'open__refund'],
          },
          { name: 'Do', type: 'tool', toolName: 'open__open_ticket', parameters: { subject: 'x', colour: 'red' } },
        ]),
      ],
    });
    const answer = await validate(body);
    expect(answer.status).toBe(200);
    expect(answer.body.valid).toBe(false);
    expect(answer.body.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          field: 'mcpServers.0.tools.1',
          rule: 'mcp.toolNotOffered',
          message: expect.stringContaining('offers no tool delete_everything (it offers lookup_customer, open_ticket'),
        }),
        expect.objectContaining({
          field: 'flows.0.nodes.1.tools.1',
          rule: 'tool.unknown',
          flow: 'main',
          node: 'Ask',
          message: expect.stringContaining('MCP server open offers no tool refund'),
        }),
      ]),
    );
    expect(answer.body.problems).toHaveLength(2);

    // PUT refuses it with the same problems, and a name outside the allow-list without asking the server.
    const put = await call<{ error: { code: string; details: Problem[] } }>(
      'PUT',
      `/dashboard/agents/${agentId}/definition/production`,
      { body },
    );
    expect(put.status).toBe(400);
    expect(put.body.error.code).toBe('VALIDATION_ERROR');
    expect(put.body.error.details.map((p) => p.field).sort()).toEqual([
      'flows.0.nodes.1.tools.1',
      'mcpServers.0.tools.1',
    ]);

    const outside = await validate(
      definition({
        flows: [flow('main', [trigger('Start'), { name: 'Do', type: 'tool', toolName: 'crm__not_allowed' }])],
      }),
    );
    expect(outside.body.problems).toEqual([
      expect.objectContaining({ field: 'flows.0.nodes.1.toolName', rule: 'tool.notAllowed', node: 'Do' }),
    ]);
  });

  it('a server that cannot be reached, and a secret the deployment does not hold, are problems, not failures', async () => {
    const answer = await validate(
      definition({
        mcpServers: [
          { name: 'gone', url: 'http://127.0.0.1:9/mcp', timeoutSeconds: 2 },
          { name: 'crm', url: mcp.url, bearerSecret: 'unknownSecret' },
        ],
        flows: [flow('main', [trigger('Start'), { name: 'Do', type: 'tool', toolName: 'gone__anything' }])],
      }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.problems).toEqual([
      expect.objectContaining({
        field: 'mcpServers.0.url',
        rule: 'mcp.unreachable',
        message: expect.stringMatching(/^MCP server gone could not be listed: The request to 127\.0\.0\.1:9 failed/),
      }),
      expect.objectContaining({
        field: 'mcpServers.1.bearerSecret',
        rule: 'mcp.secretUnavailable',
        message: expect.stringContaining('holds no such secret'),
      }),
    ]);
  });
});

describe('calls', () => {
  it('a tool node calls the tool with its rendered parameters; its output is the structured content and the text', async () => {
    const before = mcp.calls.length;
    const result = await webhook('Lookup', { id: 'C-1' });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    expect(mcp.calls.slice(before)).toEqual([{ name: 'lookup_customer', arguments: { customerId: 'C-1' } }]);
    expect(result.body.outputs.Customer).toEqual({
      text: JSON.stringify({ name: 'Ada Lovelace', tier: 'gold' }),
      content: [{ type: 'text', text: JSON.stringify({ name: 'Ada Lovelace', tier: 'gold' }) }],
      structuredContent: { name: 'Ada Lovelace', tier: 'gold' },
    });
    expect(result.body.aiMessages.map((m) => m.content)).toEqual(['Ada Lovelace is gold.']);
  });

  it("a tool's error (isError) fails a tool node with TOOL_FAILED and the server's text", async () => {
    const result = await webhook('Lookup', { id: 'C-404' });
    expect(result.body).toMatchObject({
      status: 'failed',
      error: { code: 'TOOL_FAILED', node: 'Customer', message: expect.stringContaining('no customer C-404') },
    });
  });

  it("a prompt node's model sees the tools as the server lists them and calls them; bad arguments never reach the server", async () => {
    const before = mcp.calls.length;
    model.script((request: ChatRequest, index) => {
      if (!offersTools(request)) return { content: 'ok' };
      if (index === 0) {
        return {
          toolCalls: [
            { id: 'c1', name: 'crm__lookup_customer', arguments: { customerId: 'C-1' } },
            { id: 'c2', name: 'crm__open_ticket', arguments: { subject: 'Router broken', priority: 9 } },
          ],
        };
      }
      return { content: 'Ada is a gold customer; the ticket needs a priority from 1 to 3.' };
    });
    const result = await webhook('Assist', { message: 'Is C-1 a gold customer? Open a ticket.' });
    expect(result.body).toMatchObject({ status: 'completed', error: null });

    const [first, second] = model.requests;
    expect(first.tools?.map((t) => t.function.name)).toEqual(['crm__lookup_customer', 'crm__open_ticket']);
    expect(first.tools?.[0].function).toMatchObject({
      description: 'Finds a customer by id',
      parameters: {
        type: 'object',
        properties: { customerId: { type: 'string', minLength: 3, description: 'the customer id, such as C-1' } },
        required: ['customerId'],
      },
    });
    expect(first.tools?.[1].function.parameters).toMatchObject({
      properties: { priority: { type: 'integer', minimum: 1, maximum: 3 } },
    });
    expect(toolResults(second)).toEqual([
      {
        callId: 'c1',
        content: expect.objectContaining({ structuredContent: { name: 'Ada Lovelace', tier: 'gold' } }),
      },
      {
        callId: 'c2',
        content: {
          error: {
            code: 'TOOL_PARAMETERS_INVALID',
            message: expect.stringContaining('arguments.priority must be at most 3'),
          },
        },
      },
    ]);
    // Only the valid call reached the server.
    expect(mcp.calls.slice(before)).toEqual([{ name: 'lookup_customer', arguments: { customerId: 'C-1' } }]);
    const calls = result.body.outputs.Assistant.calls as { tool: string; status: string }[];
    expect(calls.map((c) => [c.tool, c.status])).toEqual([
      ['crm__lookup_customer', 'succeeded'],
      ['crm__open_ticket', 'failed'],
    ]);
  });

  it('a server slower than its bound is cut off: the node fails with OUTBOUND_FAILED', async () => {
    mcp.slowMs = 6_000;
    const started = Date.now();
    const result = await webhook('Slow', {});
    expect(result.body).toMatchObject({
      status: 'failed',
      error: {
        code: 'OUTBOUND_FAILED',
        node: 'Report',
        message: expect.stringContaining('timed out after 2000 ms (tools/call)'),
      },
    });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('an answer over 1 MiB is refused: OUTBOUND_FAILED', async () => {
    const result = await webhook('Huge', {});
    expect(result.body).toMatchObject({
      status: 'failed',
      error: { code: 'OUTBOUND_FAILED', node: 'Export', message: expect.stringContaining('larger than 1048576 bytes') },
    });
  });
});

describe('a runtime without OUTBOUND_ALLOW_PRIVATE_NETWORK', () => {
  let strict: TestService;

  beforeAll(async () => {
    strict = await startService({
      env: { MCP_SECRETS: JSON.stringify({ crm: { origin: mcp.origin, value: SECRET } }) },
    });
  });

  afterAll(async () => {
    await strict?.stop();
  });

  it('refuses the loopback server when the definition is validated, and no request reaches it', async () => {
    const strictCall = client(strict);
    const agent = await strictCall<{ agentId: string }>('POST', '/dashboard/agents', {
      body: { displayName: 'Strict' },
    });
    const before = mcp.authorizations.length;
    const answer = await strictCall<{ valid: boolean; problems: Problem[] }>(
      'POST',
      `/dashboard/agents/${agent.body.agentId}/definition/production/validate`,
      { body: definition() },
    );
    expect(answer.status).toBe(200);
    expect(answer.body.problems).toEqual([
      expect.objectContaining({ field: 'mcpServers.0.url', rule: 'mcp.targetRefused' }),
    ]);
    expect(mcp.authorizations.length).toBe(before);
  });
});
