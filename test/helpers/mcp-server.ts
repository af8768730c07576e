/**
 * A real MCP server for tests, from the SDK: McpServer behind a stateless Streamable HTTP transport on 127.0.0.1
 * (a new transport per request, as the SDK's stateless example does). It answers JSON or an SSE stream
 * (`jsonResponse`), records each request's Authorization header and each tool call, and offers tools that answer,
 * fail, take their time and answer too much.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

export interface TestMcpServer {
  /** The endpoint, `http://127.0.0.1:<port>/mcp`. */
  readonly url: string;
  readonly origin: string;
  /** The Authorization header of every HTTP request (undefined: none), oldest first. */
  readonly authorizations: (string | undefined)[];
  /** Every tool call: its name and arguments. */
  readonly calls: { name: string; arguments: Record<string, unknown> }[];
  /** How long the `slow_report` tool takes. */
  slowMs: number;
  close(): Promise<void>;
}

export const CUSTOMERS: Record<string, { name: string; tier: string }> = {
  'C-1': { name: 'Ada Lovelace', tier: 'gold' },
};

function mcpServerFor(state: TestMcpServer): McpServer {
  const server = new McpServer({ name: 'test-crm', version: '1.0.0' });
  const record = (name: string, args: Record<string, unknown>) => state.calls.push({ name, arguments: args });
  server.registerTool(
    'lookup_customer',
    {
      description: 'Finds a customer by id',
      inputSchema: { customerId: z.string().min(3).describe('the customer id, such as C-1') },
      outputSchema: { name: z.string(), tier: z.string() },
    },
    async (args) => {
      record('lookup_customer', args);
      const customer = CUSTOMERS[args.customerId];
      if (!customer) return { content: [{ type: 'text', text: `no customer ${args.customerId}` }], isError: true };
      return { content: [{ type: 'text', text: JSON.stringify(customer) }], structuredContent: customer };
    },
  );
  server.registerTool(
    'open_ticket',
    { description: 'Opens a ticket', inputSchema: { subject: z.string(), priority: z.number().int().min(1).max(3) } },
    async (args) => {
      record('open_ticket', args);
      return { content: [{ type: 'text', text: `ticket T-7 opened: ${args.subject}` }] };
    },
  );
  server.registerTool('slow_report', { description: 'Takes its time' }, async () => {
    record('slow_report', {});
    await new Promise((done) => setTimeout(done, state.slowMs).unref());
    return { content: [{ type: 'text', text: 'report ready' }] };
  });
  server.registerTool('huge_export', { description: 'Answers 2 MiB' }, async () => {
    record('huge_export', {});
    return { content: [{ type: 'text', text: 'x'.repeat(2 * 1024 * 1024) }] };
  });
  return server;
}

export async function startMcpServer(options: { jsonResponse?: boolean } = {}): Promise<TestMcpServer> {
  const sockets = new Set<import('node:net').Socket>();
  let http: Server | undefined;
  const state: TestMcpServer = {
    url: '',
    origin: '',
    authorizations: [],
    calls: [],
    slowMs: 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((done) => http?.close(() => done()));
    },
  };
  http = createServer((request: IncomingMessage, response: ServerResponse) => {
    state.authorizations.push(request.headers.authorization);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const server = mcpServerFor(state);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: options.jsonResponse ?? false,
      });
      response.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(request, response, text === '' ? undefined : JSON.parse(text));
      } catch {
        if (!response.headersSent) response.writeHead(500).end();
      }
    });
  });
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((done) => http?.listen(0, '127.0.0.1', done));
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return Object.assign(state, { origin, url: `${origin}/mcp` });
}
