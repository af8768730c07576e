import { AppError } from '#core/errors';
import { httpHandler } from '#shared/http';
import { answerMessage, SUPPORTED_PROTOCOL_VERSIONS } from './protocol';
import { mcpMessageSchema } from './schemas';
import { callTool, toolsFor } from './tools';

/**
 * POST /api/v1/mcp: one JSON-RPC message of the Model Context Protocol over Streamable HTTP, stateless (docs/mcp.md):
 * a request is answered with one JSON message (200), a notification or a client's response with 202 and no body.
 * The token's scopes decide which tools it sees (tools.ts); rate limits, CORS and logs are every route's.
 */
export const handler = httpHandler('Mcp', mcpMessageSchema, async (message, caller, request) => {
  // Streamable HTTP clients accept JSON and an event stream; this server always answers JSON.
  const accept = request.header('accept');
  if (accept && !/application\/(json|\*)|\*\/\*/i.test(accept)) {
    throw new AppError(406, 'NOT_ACCEPTABLE', 'The MCP server answers application/json: accept it');
  }
  const version = request.header('mcp-protocol-version');
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    throw new AppError(
      400,
      'UNSUPPORTED_PROTOCOL_VERSION',
      `MCP-Protocol-Version must be one of ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
    );
  }
  const answer = await answerMessage(message, caller, { list: toolsFor, call: callTool });
  return answer ? { body: answer, raw: true } : { status: 202, body: null };
});
