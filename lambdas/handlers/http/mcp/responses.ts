/**
 * Success body of the MCP route: one JSON-RPC answer, sent as it is (no `success: true`: responses.ts,
 * RAW_RESPONSE_ROUTES). A notification or a client's response is answered 202 with no body.
 */
import * as z from 'zod';

const id = z.union([z.string(), z.number().int()]);

export const RESPONSES: Readonly<Record<string, z.ZodType>> = {
  Mcp: z.union([
    z.strictObject({ jsonrpc: z.literal('2.0'), id, result: z.record(z.string(), z.unknown()) }),
    z.strictObject({
      jsonrpc: z.literal('2.0'),
      id,
      error: z.strictObject({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }),
    }),
  ]),
};
