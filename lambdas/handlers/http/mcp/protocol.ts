/**
 * The MCP messages a stateless tools-only server answers (docs/mcp.md): initialize, ping, tools/list and tools/call;
 * notifications and a client's responses need no answer. Each HTTP request stands alone: no session, nothing kept.
 * The shapes are the SDK's types; the SDK's server runtime is not bundled (docs/mcp.md, "Why not the SDK's server").
 */
import type {
  CallToolResult,
  InitializeResult,
  JSONRPCErrorResponse,
  JSONRPCResultResponse,
  ListToolsResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { Caller } from '#core/tenancy/tenancy';

/** The protocol versions this server speaks, newest first: the SDK's SUPPORTED_PROTOCOL_VERSIONS (a unit test holds them equal). */
export const SUPPORTED_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];
/** Assumed of a request without an MCP-Protocol-Version header, as the specification says. */
export const DEFAULT_PROTOCOL_VERSION = '2025-03-26';

/** JSON-RPC error codes (the SDK's ErrorCode). */
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;

export const SERVER_INFO = { name: 'agent-platform-service', version: '1.0.0' } as const;

export interface McpMessage {
  readonly jsonrpc: '2.0';
  readonly id?: string | number;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
}

export interface Toolbox {
  list(caller: Caller): ListToolsResult['tools'];
  call(name: string, args: unknown, caller: Caller): Promise<CallToolResult | undefined>;
}

export type McpAnswer = JSONRPCResultResponse | JSONRPCErrorResponse;

const INSTRUCTIONS = 'list_knowledge_bases gives the agentId and knowledgeBaseId the other tools take.';

/** The answer to one message; undefined for a notification or a client's response, which get none (HTTP 202). */
export async function answerMessage(
  message: McpMessage,
  caller: Caller,
  tools: Toolbox,
): Promise<McpAnswer | undefined> {
  const { id, method } = message;
  if (id === undefined || method === undefined) return undefined;
  const ok = (result: Record<string, unknown>): McpAnswer => ({ jsonrpc: '2.0', id, result });
  const fail = (code: number, text: string): McpAnswer => ({ jsonrpc: '2.0', id, error: { code, message: text } });
  switch (method) {
    case 'initialize': {
      const asked = message.params?.protocolVersion;
      const result: InitializeResult = {
        // The client's version when this server speaks it, else the newest: the client then decides (lifecycle spec).
        protocolVersion:
          typeof asked === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(asked)
            ? asked
            : SUPPORTED_PROTOCOL_VERSIONS[0],
        capabilities: { tools: {} },
        serverInfo: SERVER_INFO,
        instructions: INSTRUCTIONS,
      };
      return ok(result);
    }
    case 'ping':
      return ok({});
    case 'tools/list':
      // One page: four tools at most.
      return ok({ tools: tools.list(caller) });
    case 'tools/call': {
      const name = message.params?.name;
      if (typeof name !== 'string') return fail(INVALID_PARAMS, 'params.name must be the name of a tool');
      const result = await tools.call(name, message.params?.arguments, caller);
      return result ? ok(result) : fail(INVALID_PARAMS, `Unknown tool: ${name}`);
    }
    default:
      return fail(METHOD_NOT_FOUND, `Method not found: ${method}`);
  }
}
