/**
 * The MCP server's tool table (lambdas/handlers/http/mcp/tools.ts) and protocol constants against their sources: the
 * input schemas tools/list shows are the zod schemas the tools check their arguments with, and the protocol versions
 * are the SDK's. UPDATE_MCP_SCHEMAS=1 writes input-schemas.ts again (then `npx biome check --write` it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SUPPORTED_PROTOCOL_VERSIONS as SDK_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { INPUT_SCHEMAS } from '../../../lambdas/handlers/http/mcp/input-schemas';
import { answerMessage, SUPPORTED_PROTOCOL_VERSIONS } from '../../../lambdas/handlers/http/mcp/protocol';
import { TOOLS, toolsFor } from '../../../lambdas/handlers/http/mcp/tools';

const FILE = join(__dirname, '../../../lambdas/handlers/http/mcp/input-schemas.ts');

/** zod's JSON Schema, without `$schema` and without the long pattern of a uuid (its `format` says it). */
function published(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(published);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>).filter(
    ([key]) => key !== '$schema' && !(key === 'pattern' && (value as { format?: string }).format === 'uuid'),
  );
  return Object.fromEntries(entries.map(([key, inner]) => [key, published(inner)]));
}

const expected = Object.fromEntries(
  TOOLS.map((tool) => [tool.inputName, published(z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }))]),
);

it('publishes each tool input schema as its zod schema says', () => {
  // Tools that share a published schema take the same zod schema.
  for (const tool of TOOLS) {
    expect(TOOLS.filter((other) => other.inputName === tool.inputName).map((other) => other.input)).toEqual(
      TOOLS.filter((other) => other.inputName === tool.inputName).map(() => tool.input),
    );
  }
  if (process.env.UPDATE_MCP_SCHEMAS) {
    const head = readFileSync(FILE, 'utf8').split('export const INPUT_SCHEMAS')[0];
    writeFileSync(FILE, `${head}export const INPUT_SCHEMAS = ${JSON.stringify(expected, null, 2)};\n`);
    return;
  }
  expect(INPUT_SCHEMAS).toEqual(expected);
});

it('speaks the protocol versions the SDK supports', () => {
  expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual([...SDK_VERSIONS]);
});

it('lists to a token only the tools whose scope it holds', () => {
  const names = (scopes: string[]) => toolsFor({ organizationId: 'o', tokenId: 't', scopes }).map((t) => t.name);
  expect(names(['dashboard', 'webhook'])).toEqual([
    'list_knowledge_bases',
    'search_knowledge_base',
    'generate_from_knowledge_base',
    'invoke_agent',
  ]);
  expect(names(['webhook'])).toEqual(['invoke_agent']);
  expect(names(['dashboard'])).not.toContain('invoke_agent');
  for (const tool of toolsFor({ organizationId: 'o', tokenId: 't', scopes: ['dashboard', 'webhook'] })) {
    expect(tool.inputSchema.type).toBe('object');
  }
});

describe('the protocol (protocol.ts)', () => {
  const caller = { organizationId: 'o', tokenId: 't', scopes: ['webhook'] };
  const toolbox = { list: toolsFor, call: async () => undefined };
  const initialize = (protocolVersion: string) =>
    answerMessage({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion } }, caller, toolbox);

  it('answers initialize in the client’s version when it speaks it, else in its newest', async () => {
    expect(await initialize('2025-06-18')).toMatchObject({ result: { protocolVersion: '2025-06-18' } });
    expect(await initialize('2099-01-01')).toMatchObject({ result: { protocolVersion: SDK_VERSIONS[0] } });
  });

  it('answers nothing to a notification or a client’s response, and -32602 to a call without a tool name', async () => {
    expect(await answerMessage({ jsonrpc: '2.0', method: 'notifications/initialized' }, caller, toolbox)).toBe(
      undefined,
    );
    expect(await answerMessage({ jsonrpc: '2.0', id: 3 }, caller, toolbox)).toBe(undefined);
    expect(
      await answerMessage({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: {} }, caller, toolbox),
    ).toMatchObject({ id: 4, error: { code: -32602 } });
  });
});
