/** Request schema of the MCP route: one JSON-RPC message (a request, a notification, or a client's response). */
import * as z from 'zod';

export const mcpMessageSchema = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string().max(200), z.number().int()]).optional(),
  method: z.string().min(1).max(200).optional(),
  params: z.record(z.string(), z.unknown()).optional(),
});
