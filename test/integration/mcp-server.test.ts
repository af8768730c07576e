/**
 * The MCP server (POST /api/v1/mcp, docs/mcp.md) through the local runtime, with the SDK's own client and its
 * Streamable HTTP transport, an organization token as the bearer: the tools a token sees by its scopes, a knowledge
 * base searched and generated from, an agent's webhook flow invoked and continued, a token restricted to one agent
 * kept to it, bad arguments answered as tool errors; then the HTTP edges a client meets without the SDK.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { greetDefinition } from '../helpers/flow-definitions';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;
/** Another agent of the same organization, with a knowledge base and the same flow. */
let sibling: Dataset;
const tokens = {} as Record<'dashboard' | 'webhook' | 'analytics' | 'restricted', string>;
const open: Client[] = [];
/** A loopback tool that answers after SLOW_TOOL_MS: a run that outlives FLOW_SYNC_BUDGET_MS (1 s here). */
let slowTool: Server;
const SLOW_TOOL_MS = 2_500;
/** An agent whose webhook flow calls the slow tool twice. */
let slowAgentId: string;

const ALL_TOOLS = ['list_knowledge_bases', 'search_knowledge_base', 'generate_from_knowledge_base', 'invoke_agent'];

async function connect(token: string): Promise<Client> {
  const mcp = new Client({ name: 'mcp-server-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${service.baseUrl}/api/v1/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await mcp.connect(transport);
  open.push(mcp);
  return mcp;
}

async function callTool(mcp: Client, name: string, args: Record<string, unknown>) {
  return (await mcp.callTool({ name, arguments: args })) as CallToolResult;
}

/** A tool's structured answer, which its text content repeats as JSON. */
function structured<T>(result: CallToolResult): T {
  expect(result.isError).toBeFalsy();
  const [text] = result.content;
  expect(text.type === 'text' && JSON.parse(text.text)).toEqual(result.structuredContent);
  return result.structuredContent as T;
}

function toolError(result: CallToolResult) {
  expect(result.isError).toBe(true);
  return (result.structuredContent as { error: { code: string; message: string; details: unknown[] } }).error;
}

async function newToken(body: Record<string, unknown>): Promise<string> {
  const response = await call<{ token: string }>('POST', '/dashboard/tokens', { body: { name: 'mcp', ...body } });
  if (response.status !== 200 && response.status !== 201) throw new Error(JSON.stringify(response.body));
  return response.body.token;
}

beforeAll(async () => {
  slowTool = createServer((request, response) => {
    request.resume();
    setTimeout(() => response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), SLOW_TOOL_MS);
  });
  await new Promise<void>((done) => slowTool.listen(0, '127.0.0.1', done));
  // Loopback tools allowed, and a run handed to the flow runner after 1 s (docs/flows.md, "Long runs").
  service = await startService({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true', FLOW_SYNC_BUDGET_MS: '1000' } });
  call = client(service);
  dataset = await createDataset(call);
  sibling = await createDataset(call);
  const { link } = await uploadDocument(
    call,
    dataset,
    { fileName: 'refunds.txt', label1: 'team:billing' },
    'Refunds for the router are paid within ten days by the billing team. Shipping takes two days.',
  );
  await pollUntil(
    () => call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key: link.s3Key } }),
    (r) => r.body.status === 'ready',
  );
  for (const agent of [dataset, sibling]) {
    const put = await call('PUT', `/dashboard/agents/${agent.agentId}/definition/production`, {
      body: greetDefinition('Hello {memory.customerId}.'),
    });
    expect(put.status).toBe(200);
  }
  const slow = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Slow' } });
  slowAgentId = slow.body.agentId;
  const slowPut = await call('PUT', `/dashboard/agents/${slowAgentId}/definition/production`, {
    body: {
      tools: [{ name: 'report', url: `http://127.0.0.1:${(slowTool.address() as AddressInfo).port}/report` }],
      flows: [
        {
          name: 'reports',
          nodes: [
            { name: 'Start', type: 'trigger', triggerType: 'webhook' },
            { name: 'Report', type: 'tool', toolName: 'report' },
            { name: 'Again', type: 'tool', toolName: 'report' },
          ],
          // The budget is looked at between nodes: past it after Report, Again runs in the flow runner.
          edges: [
            { from: 'Start', to: 'Report', type: 'stepForward' },
            { from: 'Report', to: 'Again', type: 'stepForward' },
          ],
        },
      ],
    },
  });
  expect(slowPut.status).toBe(200);
  tokens.dashboard = await newToken({ scopes: ['dashboard'] });
  tokens.webhook = await newToken({ scopes: ['webhook'] });
  tokens.analytics = await newToken({ scopes: ['analytics'] });
  tokens.restricted = await newToken({ scopes: ['dashboard', 'webhook'], agentIds: [dataset.agentId] });
});

afterAll(async () => {
  await Promise.all(open.map((mcp) => mcp.close()));
  await service?.stop();
  slowTool?.closeAllConnections();
  await new Promise<void>((done) => slowTool?.close(() => done()));
});

describe('with a token of every scope', () => {
  let mcp: Client;
  beforeAll(async () => {
    mcp = await connect(service.tokens[0]);
  });

  it('initializes as a stateless tools server and lists the four tools with their input schemas', async () => {
    expect(mcp.getServerVersion()).toMatchObject({ name: 'agent-platform-service' });
    expect(mcp.getServerCapabilities()).toMatchObject({ tools: {} });
    const { tools } = await mcp.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(ALL_TOOLS);
    const search = tools.find((tool) => tool.name === 'search_knowledge_base');
    expect(search?.inputSchema).toMatchObject({
      type: 'object',
      required: ['agentId', 'environment', 'knowledgeBaseId', 'query'],
    });
    expect(Object.keys(search?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(['filters', 'minScore', 'numberOfResults', 'explain']),
    );
  });

  it('lists the knowledge bases of every agent of the organization', async () => {
    const { knowledgeBases } = structured<{ knowledgeBases: { agentId: string; knowledgeBaseId: string }[] }>(
      await callTool(mcp, 'list_knowledge_bases', {}),
    );
    expect(knowledgeBases).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          agentId: dataset.agentId,
          knowledgeBaseId: dataset.knowledgeBaseId,
          name: 'Manuals',
        }),
        expect.objectContaining({ agentId: sibling.agentId, knowledgeBaseId: sibling.knowledgeBaseId }),
      ]),
    );
    const one = structured<{ knowledgeBases: { agentId: string }[] }>(
      await callTool(mcp, 'list_knowledge_bases', { agentId: sibling.agentId }),
    );
    expect(one.knowledgeBases.map((kb) => kb.agentId)).toEqual([sibling.agentId]);
  });

  it('finds the uploaded document by search, with the query endpoint’s filters', async () => {
    const found = structured<{ results: { content: string; score: number; metadata: { label1: string } }[] }>(
      await callTool(mcp, 'search_knowledge_base', { ...dataset, query: 'router refunds' }),
    );
    expect(found.results[0].content).toContain('ten days');
    expect(found.results[0].metadata.label1).toBe('team:billing');
    const filtered = structured<{ results: unknown[]; explain: { filters: unknown[] } }>(
      await callTool(mcp, 'search_knowledge_base', {
        ...dataset,
        query: 'router refunds',
        filters: [{ key: 'label1', operator: 'equals', value: 'team:support' }],
        explain: true,
      }),
    );
    expect(filtered.results).toEqual([]);
    expect(filtered.explain.filters).toEqual([{ key: 'label1', operator: 'equals', value: 'team:support' }]);
  });

  it('generates an answer whose citations point at the retrieved chunks', async () => {
    const generated = structured<{
      answer: string;
      model: string;
      citations: { resultIndex: number; documentId: string }[];
      results: { content: string; metadata: { documentId: string } }[];
    }>(await callTool(mcp, 'generate_from_knowledge_base', { ...dataset, query: 'How fast are refunds paid?' }));
    expect(generated.model).toBe('extractive');
    expect(generated.answer).toContain('ten days');
    expect(generated.citations.length).toBeGreaterThan(0);
    for (const citation of generated.citations) {
      expect(generated.results[citation.resultIndex].metadata.documentId).toBe(citation.documentId);
    }
  });

  it('invokes an agent’s webhook flow with its payload and continues the session', async () => {
    const args = { agentId: dataset.agentId, environment: 'production', triggerName: 'Start' };
    const first = structured<{ sessionId: string; status: string; aiMessages: { content: string }[] }>(
      await callTool(mcp, 'invoke_agent', { ...args, message: 'Hi', body: { customerId: 'C-7' } }),
    );
    expect(first.status).toBe('completed');
    expect(first.aiMessages.map((m) => m.content)).toEqual([expect.stringContaining('Hello C-7.')]);
    const session = await call<{ sessionId: string; status: string }>(
      'GET',
      `/dashboard/agents/${dataset.agentId}/sessions/production/${first.sessionId}`,
    );
    expect(session.body).toMatchObject({ sessionId: first.sessionId, status: 'completed' });
    const again = structured<{ sessionId: string }>(
      await callTool(mcp, 'invoke_agent', { ...args, sessionId: first.sessionId, body: { customerId: 'C-8' } }),
    );
    expect(again.sessionId).toBe(first.sessionId);
  });

  it('answers a run longer than the request’s budget with the session to follow, which the flow runner completes', async () => {
    const handedOver = structured<{ sessionId: string; status: string; aiMessages: unknown[] }>(
      await callTool(mcp, 'invoke_agent', { agentId: slowAgentId, environment: 'production', triggerName: 'Start' }),
    );
    expect(handedOver).toEqual({ sessionId: expect.any(String), status: 'running', aiMessages: [] });
    const done = await pollUntil(
      () =>
        call<{ status: string }>('GET', `/dashboard/agents/${slowAgentId}/sessions/production/${handedOver.sessionId}`),
      (r) => r.body.status !== 'running',
      20_000,
    );
    expect(done.body.status).toBe('completed');
  });

  it('answers bad arguments and the core’s refusals as tool errors, an unknown tool as a protocol error', async () => {
    const missing = toolError(await callTool(mcp, 'search_knowledge_base', { ...dataset }));
    expect(missing).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(missing.details).toEqual([expect.objectContaining({ field: 'query', rule: 'required' })]);
    const badFilter = toolError(
      await callTool(mcp, 'search_knowledge_base', {
        ...dataset,
        query: 'x',
        filters: [{ key: 'customMeta1', operator: 'equals', value: 'a' }],
      }),
    );
    expect(badFilter.details).toEqual([
      expect.objectContaining({ field: 'filters.0.key', rule: 'filter.notFilterable' }),
    ]);
    const unknownField = toolError(await callTool(mcp, 'list_knowledge_bases', { agent: 'x' }));
    expect(unknownField.details).toEqual([expect.objectContaining({ field: 'agent', rule: 'unknownField' })]);
    const noKnowledgeBase = toolError(
      await callTool(mcp, 'search_knowledge_base', {
        ...dataset,
        knowledgeBaseId: sibling.knowledgeBaseId,
        query: 'x',
      }),
    );
    expect(noKnowledgeBase.code).toBe('KNOWLEDGE_BASE_NOT_FOUND');
    const noTrigger = toolError(
      await callTool(mcp, 'invoke_agent', { agentId: dataset.agentId, environment: 'staging', triggerName: 'Start' }),
    );
    expect(noTrigger.code).toBe('DEFINITION_NOT_FOUND');
    await expect(callTool(mcp, 'delete_everything', {})).rejects.toMatchObject({ code: -32602 });
  });
});

describe('scopes', () => {
  it('shows a webhook token invoke_agent only, and refuses it the others as tool errors', async () => {
    const mcp = await connect(tokens.webhook);
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toEqual(['invoke_agent']);
    const refused = toolError(await callTool(mcp, 'search_knowledge_base', { ...dataset, query: 'refunds' }));
    expect(refused).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('scope dashboard') });
    const invoked = structured<{ status: string }>(
      await callTool(mcp, 'invoke_agent', {
        agentId: dataset.agentId,
        environment: 'production',
        triggerName: 'Start',
      }),
    );
    expect(invoked.status).toBe('completed');
  });

  it('shows a dashboard token the knowledge tools and refuses it invoke_agent', async () => {
    const mcp = await connect(tokens.dashboard);
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toEqual(ALL_TOOLS.slice(0, 3));
    const refused = toolError(
      await callTool(mcp, 'invoke_agent', {
        agentId: dataset.agentId,
        environment: 'production',
        triggerName: 'Start',
      }),
    );
    expect(refused).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('scope webhook') });
  });

  it('refuses a token with no scope of any tool at the door: 403', async () => {
    await expect(connect(tokens.analytics)).rejects.toMatchObject({
      code: 403,
      message: expect.stringContaining('one of the scopes dashboard, webhook'),
    });
  });
});

describe('a token restricted to one agent', () => {
  let mcp: Client;
  beforeAll(async () => {
    mcp = await connect(tokens.restricted);
  });

  it('lists its agent’s knowledge bases only', async () => {
    const { knowledgeBases } = structured<{ knowledgeBases: { agentId: string }[] }>(
      await callTool(mcp, 'list_knowledge_bases', {}),
    );
    expect(new Set(knowledgeBases.map((kb) => kb.agentId))).toEqual(new Set([dataset.agentId]));
    const other = toolError(await callTool(mcp, 'list_knowledge_bases', { agentId: sibling.agentId }));
    expect(other.code).toBe('AGENT_NOT_FOUND');
  });

  it('reaches its own agent and not another of the organization', async () => {
    const own = structured<{ results: unknown[] }>(
      await callTool(mcp, 'search_knowledge_base', { ...dataset, query: 'refunds' }),
    );
    expect(own.results.length).toBeGreaterThan(0);
    for (const name of ['search_knowledge_base', 'generate_from_knowledge_base']) {
      expect(toolError(await callTool(mcp, name, { ...sibling, query: 'refunds' })).code).toBe('AGENT_NOT_FOUND');
    }
    const invoke = { environment: 'production', triggerName: 'Start' };
    expect(toolError(await callTool(mcp, 'invoke_agent', { ...invoke, agentId: sibling.agentId })).code).toBe(
      'AGENT_NOT_FOUND',
    );
    const sessions = await call<{ data: unknown[] }>('GET', `/dashboard/agents/${sibling.agentId}/sessions/production`);
    expect(sessions.body.data).toEqual([]);
  });
});

describe('over plain HTTP', () => {
  const url = () => `${service.baseUrl}/api/v1/mcp`;
  const headers = (token: string | null = service.tokens[0]) => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  });
  const post = (body: unknown, extra: Record<string, string> = {}, token?: string | null) =>
    fetch(url(), { method: 'POST', headers: { ...headers(token), ...extra }, body: JSON.stringify(body) });

  it('answers tools/list as one JSON-RPC message, with the rate limit headers of every route', async () => {
    const response = await post({ jsonrpc: '2.0', id: 7, method: 'tools/list' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('ratelimit-limit')).not.toBeNull();
    expect(response.headers.get('mcp-session-id')).toBeNull();
    const body = (await response.json()) as { jsonrpc: string; id: number; result: { tools: { name: string }[] } };
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 7 });
    expect(body.result.tools.map((tool) => tool.name)).toEqual(ALL_TOOLS);
  });

  it('answers a notification 202 with no body, an unknown method with a JSON-RPC error', async () => {
    const notification = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notification.status).toBe(202);
    expect(await notification.text()).toBe('');
    const unknown = await post({ jsonrpc: '2.0', id: 'a', method: 'resources/list' });
    expect(await unknown.json()).toEqual({
      jsonrpc: '2.0',
      id: 'a',
      error: { code: -32601, message: 'Method not found: resources/list' },
    });
  });

  it('refuses what is not an MCP request with the service’s 4xx errors', async () => {
    const noToken = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, {}, null);
    expect(noToken.status).toBe(401);
    const notJsonRpc = await post({ id: 1, method: 'ping' });
    expect(notJsonRpc.status).toBe(400);
    expect(await notJsonRpc.json()).toMatchObject({
      error: { code: 'VALIDATION_ERROR', details: [{ field: 'jsonrpc' }] },
    });
    const version = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-protocol-version': '1999-01-01' });
    expect(version.status).toBe(400);
    expect(await version.json()).toMatchObject({ error: { code: 'UNSUPPORTED_PROTOCOL_VERSION' } });
    const accept = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { accept: 'text/html' });
    expect(accept.status).toBe(406);
    const stream = await fetch(url(), { headers: headers() });
    expect(stream.status).toBe(405);
  });
});
