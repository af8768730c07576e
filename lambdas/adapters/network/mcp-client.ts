/**
 * A client of MCP servers (Streamable HTTP) for flow tools: the protocol's JSON-RPC spoken over the outbound guard
 * (outbound-http.ts), so every request of it is checked as an HTTP tool's is (no private address unless allowed, the
 * connection to the address checked, an answer of at most 1 MiB, redirects checked) and bounded by one deadline.
 *
 * Not the SDK's Client: its transport calls `fetch`, whose resolver the guard cannot pin (the DNS-rebinding window
 * outbound-http.ts closes), and it would add its schemas to the webhook bundles that have ~6 KB of their 300 KB
 * left. The three requests a call needs (initialize, tools/list, tools/call) are small; an answer may be JSON or a
 * server-sent event stream, both read whole within the bound.
 */
import {
  type McpCallResult,
  type McpClient,
  McpError,
  type McpServerTarget,
  type McpToolInfo,
  OutboundError,
  type OutboundHttp,
} from '#ports/flows';
import { MAX_OUTBOUND_ANSWER_BYTES } from './outbound-http';

export const MCP_PROTOCOL_VERSION = '2025-06-18';
/** Pages of a listing read at most (a server that pages forever is cut off here). */
const MAX_LIST_PAGES = 20;
const DESCRIPTION_MAX_CHARS = 2000;

/** The bearer token of a server: the value of the secret named, when the deployment holds it for this target. */
export type McpBearer = (target: McpServerTarget) => Promise<string | undefined>;

export class GuardedMcpClient implements McpClient {
  constructor(
    private readonly http: OutboundHttp,
    private readonly bearer: McpBearer,
    private readonly now: () => number = Date.now,
  ) {}

  async listTools(target: McpServerTarget): Promise<McpToolInfo[]> {
    const request = await this.open(target);
    const tools: McpToolInfo[] = [];
    let cursor: unknown;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = objectOf(await request('tools/list', typeof cursor === 'string' ? { cursor } : {}));
      for (const tool of Array.isArray(result.tools) ? result.tools : []) {
        const { name, description, inputSchema } = objectOf(tool);
        if (typeof name !== 'string') continue;
        tools.push({
          name,
          ...(typeof description === 'string' ? { description: description.slice(0, DESCRIPTION_MAX_CHARS) } : {}),
          inputSchema: objectOf(inputSchema),
        });
      }
      cursor = result.nextCursor;
      if (typeof cursor !== 'string' || cursor === '') break;
    }
    return tools;
  }

  async callTool(target: McpServerTarget, name: string, args: Readonly<Record<string, unknown>>) {
    const request = await this.open(target);
    const result = objectOf(await request('tools/call', { name, arguments: args }));
    const structured = result.structuredContent;
    return {
      content: Array.isArray(result.content) ? result.content : [],
      ...(structured !== null && typeof structured === 'object' && !Array.isArray(structured)
        ? { structuredContent: structured as Record<string, unknown> }
        : {}),
      isError: result.isError === true,
    } satisfies McpCallResult;
  }

  /** Initializes a session with the server; answers the function that sends its requests. */
  private async open(target: McpServerTarget) {
    const deadline = this.now() + target.timeoutMs;
    const host = hostOf(target.url);
    const token = target.bearerSecret === undefined ? undefined : await this.bearer(target);
    const headers: Record<string, string> = { accept: 'application/json, text/event-stream' };
    if (token) headers.authorization = `Bearer ${token}`;
    let id = 0;
    /** One message; with `method` a request (its answer's result), without a notification. */
    const request = async (method: string, params?: Record<string, unknown>): Promise<unknown> => {
      // The bound is the server's, for the whole exchange: a timeout names it, not what was left of it.
      const timedOut = () =>
        new OutboundError('OUTBOUND_FAILED', `MCP server ${host} timed out after ${target.timeoutMs} ms (${method})`);
      const timeoutMs = deadline - this.now();
      if (timeoutMs <= 0) throw timedOut();
      const message = params ? { jsonrpc: '2.0', id: ++id, method, params } : { jsonrpc: '2.0', method };
      const response = await this.http
        .request({ url: target.url, method: 'POST', headers, body: message, timeoutMs, answerHeaders: true })
        .catch((error: unknown) => {
          throw this.now() >= deadline ? timedOut() : error;
        });
      const failed = (why: string) => new McpError('TOOL_FAILED', `MCP server ${host} answered ${method} ${why}`);
      if (response.status < 200 || response.status >= 300) throw failed(`with HTTP ${response.status}`);
      if (response.truncated) {
        throw new OutboundError(
          'OUTBOUND_FAILED',
          `The answer of ${host} is larger than ${MAX_OUTBOUND_ANSWER_BYTES} bytes`,
        );
      }
      if (!params) return undefined;
      const type = response.headers?.['content-type'] ?? '';
      const answer = messagesOf(response.body, type).find((m) => m.id === id && ('result' in m || 'error' in m));
      if (!answer) throw failed('with no JSON-RPC answer');
      const error = objectOf(answer.error);
      if (answer.error) throw failed(`with ${String(error.message).slice(0, 500)} (${String(error.code)})`);
      if (method === 'initialize') {
        const version = objectOf(answer.result).protocolVersion;
        if (typeof version === 'string') headers['mcp-protocol-version'] = version;
        const session = response.headers?.['mcp-session-id'];
        if (session) headers['mcp-session-id'] = session;
      }
      return answer.result;
    };
    await request('initialize', {
      protocolVersion: MCP_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'agent-platform-flows', version: '1.0.0' },
    });
    await request('notifications/initialized');
    return request;
  }
}

/** The messages of an answer: its JSON body, or each `data` of a server-sent event stream that is JSON. */
function messagesOf(body: unknown, contentType: string): Record<string, unknown>[] {
  if (!/^text\/event-stream/i.test(contentType) || typeof body !== 'string') return [objectOf(body)];
  return body.split(/\r?\n\r?\n/).map((event) => {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    try {
      return objectOf(JSON.parse(data));
    } catch {
      return {}; // an event that is no message (a comment, a keep-alive)
    }
  });
}

function objectOf(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the MCP server';
  }
}
