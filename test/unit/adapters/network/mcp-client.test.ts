/**
 * The MCP client of flow tools (adapters/network/mcp-client.ts) against a real MCP server of the SDK on 127.0.0.1,
 * through the real outbound guard: listing and calling over JSON and SSE answers, loopback refused without the
 * guard's allowance, a slow tool cut off at the server's bound, an answer over 1 MiB refused, the bearer secret sent
 * to its origin only.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GuardedMcpClient } from '#adapters/network/mcp-client';
import { mcpBearer, parseMcpSecrets } from '#adapters/network/mcp-secrets';
import { GuardedOutboundHttp } from '#adapters/network/outbound-http';
import { McpError, type McpServerTarget, OutboundError } from '#ports/flows';
import { startMcpServer, type TestMcpServer } from '../../../helpers/mcp-server';

let sse: TestMcpServer;
let json: TestMcpServer;

beforeAll(async () => {
  [sse, json] = await Promise.all([startMcpServer(), startMcpServer({ jsonResponse: true })]);
});

afterAll(async () => {
  await Promise.all([sse?.close(), json?.close()]);
});

const noSecrets = mcpBearer(
  () => ({}),
  async () => undefined,
);
/** The guard with its allowance for loopback only (private networks and link-local stay refused). */
const loopbackClient = (bearer = noSecrets) =>
  new GuardedMcpClient(new GuardedOutboundHttp({ allowPrivateNetwork: false, allowedKinds: ['loopback'] }), bearer);
const target = (server: TestMcpServer, extra: Partial<McpServerTarget> = {}): McpServerTarget => ({
  url: server.url,
  organizationId: 'org-1',
  timeoutMs: 5_000,
  ...extra,
});

it.each([
  ['an SSE stream', () => sse],
  ['JSON', () => json],
])('lists the tools of a server that answers %s, each with its input schema', async (_, server) => {
  const tools = await loopbackClient().listTools(target(server()));
  expect(tools.map((tool) => tool.name)).toEqual(['lookup_customer', 'open_ticket', 'slow_report', 'huge_export']);
  const lookup = tools[0];
  expect(lookup.description).toBe('Finds a customer by id');
  expect(lookup.inputSchema).toMatchObject({
    type: 'object',
    properties: { customerId: { type: 'string', minLength: 3 } },
    required: ['customerId'],
  });
});

it.each([
  ['an SSE stream', () => sse],
  ['JSON', () => json],
])('calls a tool of a server that answers %s and gets its content and structured content', async (_, server) => {
  const result = await loopbackClient().callTool(target(server()), 'lookup_customer', { customerId: 'C-1' });
  expect(result).toEqual({
    content: [{ type: 'text', text: JSON.stringify({ name: 'Ada Lovelace', tier: 'gold' }) }],
    structuredContent: { name: 'Ada Lovelace', tier: 'gold' },
    isError: false,
  });
  const failed = await loopbackClient().callTool(target(server()), 'lookup_customer', { customerId: 'C-404' });
  expect(failed).toMatchObject({ isError: true, content: [{ type: 'text', text: 'no customer C-404' }] });
});

it('refuses a loopback server when the guard has no allowance, before any request reaches it', async () => {
  const before = sse.authorizations.length;
  const guarded = new GuardedMcpClient(new GuardedOutboundHttp({ allowPrivateNetwork: false }), noSecrets);
  const error = await guarded.listTools(target(sse)).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(OutboundError);
  expect(error).toMatchObject({ code: 'TARGET_REFUSED' });
  expect(sse.authorizations.length).toBe(before);
});

it('cuts a slow tool off at the bound of the whole call', async () => {
  sse.slowMs = 3_000;
  const started = Date.now();
  const error = await loopbackClient()
    .callTool(target(sse, { timeoutMs: 800 }), 'slow_report', {})
    .catch((e: unknown) => e);
  const took = Date.now() - started;
  expect(error).toBeInstanceOf(OutboundError);
  expect(error).toMatchObject({
    code: 'OUTBOUND_FAILED',
    message: expect.stringContaining('timed out after 800 ms (tools/call)'),
  });
  expect(took).toBeLessThan(2_000);
});

it.each([
  ['an SSE stream', () => sse],
  ['JSON', () => json],
])('refuses an answer over 1 MiB as %s', async (_, server) => {
  const error = await loopbackClient()
    .callTool(target(server()), 'huge_export', {})
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(OutboundError);
  expect(error).toMatchObject({
    code: 'OUTBOUND_FAILED',
    message: expect.stringContaining('larger than 1048576 bytes'),
  });
});

it('answers an unknown tool as a failed result (the SDK server says so with isError)', async () => {
  const result = await loopbackClient().callTool(target(json), 'no_such_tool', {});
  expect(result).toMatchObject({
    isError: true,
    content: [{ type: 'text', text: expect.stringContaining('not found') }],
  });
});

describe('a server that answers no MCP', () => {
  let raw: Server;
  let rawUrl: string;
  /** What the raw server answers to each request. */
  let answer: (body: { id?: number; method: string }, response: ServerResponse) => void;

  beforeAll(async () => {
    raw = createServer((request, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
      });
      request.on('end', () => answer(JSON.parse(text), response));
    });
    await new Promise<void>((done) => raw.listen(0, '127.0.0.1', done));
    rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    raw.closeAllConnections();
    await new Promise<void>((done) => raw.close(() => done()));
  });

  const rawTarget = (): McpServerTarget => ({ url: rawUrl, organizationId: 'org-1', timeoutMs: 5_000 });
  const jsonAnswer = (response: ServerResponse, status: number, body: unknown) =>
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  it('turns a JSON-RPC error into TOOL_FAILED with its message', async () => {
    answer = (body, response) =>
      body.method === 'initialize'
        ? jsonAnswer(response, 200, {
            jsonrpc: '2.0',
            id: body.id,
            result: {
              protocolVersion: '2025-06-18',
              capabilities: { tools: {} },
              serverInfo: { name: 'raw', version: '1' },
            },
          })
        : body.id === undefined
          ? response.writeHead(202).end()
          : jsonAnswer(response, 200, {
              jsonrpc: '2.0',
              id: body.id,
              error: { code: -32603, message: 'database down' },
            });
    const error = await loopbackClient()
      .listTools(rawTarget())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({ code: 'TOOL_FAILED', message: expect.stringContaining('database down (-32603)') });
  });

  it('turns an HTTP error into TOOL_FAILED naming the status', async () => {
    answer = (_, response) => jsonAnswer(response, 401, { error: 'unauthorized' });
    const error = await loopbackClient()
      .listTools(rawTarget())
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'TOOL_FAILED',
      message: expect.stringContaining('answered initialize with HTTP 401'),
    });
  });
});

describe('bearer secrets (MCP_SECRETS)', () => {
  const secrets = () =>
    parseMcpSecrets(
      JSON.stringify({
        crm: { origin: sse.origin, value: 'crm-token-1' },
        onlyOrg2: { origin: sse.origin, organizations: ['org-2'], value: 'org2-token' },
        stored: { origin: sse.origin, secretArn: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:mcp-crm' },
      }),
    );
  const read = jest.fn(async (arn: string) => (arn.endsWith('mcp-crm') ? 'from-secrets-manager' : undefined));
  const client = () => loopbackClient(mcpBearer(secrets, read));

  it('sends the secret as the bearer token to its origin', async () => {
    sse.authorizations.length = 0;
    await client().listTools(target(sse, { bearerSecret: 'crm' }));
    expect(sse.authorizations.length).toBeGreaterThanOrEqual(3); // initialize, initialized, tools/list
    expect(new Set(sse.authorizations)).toEqual(new Set(['Bearer crm-token-1']));
  });

  it('reads a secret held in Secrets Manager by its ARN', async () => {
    sse.authorizations.length = 0;
    await client().listTools(target(sse, { bearerSecret: 'stored' }));
    expect(read).toHaveBeenCalledWith('arn:aws:secretsmanager:eu-west-1:111122223333:secret:mcp-crm');
    expect(sse.authorizations[0]).toBe('Bearer from-secrets-manager');
  });

  it.each([
    ['a secret the deployment does not hold', () => target(sse, { bearerSecret: 'nope' }), 'holds no such secret'],
    ['another origin', () => target(json, { bearerSecret: 'crm' }), 'only'],
    ['another organization', () => target(sse, { bearerSecret: 'onlyOrg2' }), 'not held for this organization'],
  ])('refuses %s before any request', async (_, make, why) => {
    const before = sse.authorizations.length + json.authorizations.length;
    const error = await client()
      .listTools(make())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({ code: 'MCP_SECRET_UNAVAILABLE', message: expect.stringContaining(why) });
    if (why === 'only') expect((error as Error).message).toContain(`held for ${sse.origin} only`);
    expect(sse.authorizations.length + json.authorizations.length).toBe(before);
  });
});
