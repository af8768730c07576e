/**
 * Tools of MCP servers in a run (docs/flows.md, "MCP tools"): a node names one `<server>__<tool>`; the server's
 * listing (once per server and invocation) gives the tool's description and input schema, which the model sees and
 * the arguments are checked against; the call goes through the MCP client (the outbound guard, the server's bound).
 */
import type { McpClient, McpToolInfo, ScopedTool, ToolParameterSpec } from '#ports/flows';
import type { McpServerDefinition } from './definition';
import { mcpToolOf } from './definition-parts';
import { schemaProblems } from './json-schema-check';
import { mcpTarget } from './mcp-listing-check';
import { FlowError, type RunContext } from './run-context';

/** Listings of this invocation, by server name: a prompt node's turns and its calls list each server once. */
const listings = new WeakMap<RunContext, Map<string, Promise<McpToolInfo[]>>>();

function listed(context: RunContext, server: McpServerDefinition): Promise<McpToolInfo[]> {
  const byServer = listings.get(context) ?? new Map<string, Promise<McpToolInfo[]>>();
  listings.set(context, byServer);
  let listing = byServer.get(server.name);
  if (!listing) {
    listing = clientOf(context).listTools(mcpTarget(server, context.session.organizationId));
    // A failed listing is not kept: the next node may find the server back.
    listing.catch(() => byServer.delete(server.name));
    byServer.set(server.name, listing);
  }
  return listing;
}

function clientOf(context: RunContext): McpClient {
  if (!context.deps.mcp) throw new FlowError('TOOL_FAILED', 'This runtime has no MCP client');
  return context.deps.mcp;
}

/** The MCP tool `name` as a node's model sees it; undefined when `name` names no MCP tool of the definition. */
export async function mcpScopedTool(context: RunContext, name: string): Promise<ScopedTool | undefined> {
  const ref = mcpToolOf(context.definition, name);
  if (!ref) return undefined;
  const tool = (await listed(context, ref.server)).find((t) => t.name === ref.tool);
  if (!tool) throw new FlowError('TOOL_NOT_FOUND', `MCP server ${ref.server.name} lists no tool ${ref.tool}`);
  return {
    name,
    description: tool.description || `The tool ${ref.tool} of the MCP server ${ref.server.name}`,
    parameters: parametersOf(tool.inputSchema),
    // The schema decides what else it takes (checked before the call), not the parameters read from it.
    anyParameters: true,
    inputSchema: tool.inputSchema,
  };
}

/**
 * Calls the tool with the arguments its input schema admits; its output `{ text, content, structuredContent? }`. A
 * result the server marks `isError` fails with TOOL_FAILED, its text in the message.
 */
export async function runMcpTool(
  context: RunContext,
  tool: ScopedTool,
  parameters: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const ref = mcpToolOf(context.definition, tool.name);
  if (!ref) throw new FlowError('TOOL_NOT_FOUND', `Tool ${tool.name} is not registered for this agent`);
  const problems = schemaProblems(tool.inputSchema, parameters);
  if (problems.length > 0) {
    throw new FlowError('TOOL_PARAMETERS_INVALID', `Tool ${tool.name}: ${problems.join('; ').slice(0, 500)}`);
  }
  const result = await clientOf(context).callTool(
    mcpTarget(ref.server, context.session.organizationId),
    ref.tool,
    parameters,
  );
  const text = result.content
    .flatMap((block) => {
      const { type, text } = (block ?? {}) as { type?: unknown; text?: unknown };
      return type === 'text' && typeof text === 'string' ? [text] : [];
    })
    .join('\n');
  if (result.isError) {
    throw new FlowError('TOOL_FAILED', `Tool ${tool.name} failed: ${text.slice(0, 500) || 'no message'}`);
  }
  return {
    text,
    content: result.content,
    ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
  };
}

/** The top-level properties of an input schema as tool parameters (what a tool node infers, the offline model reads). */
function parametersOf(schema: Readonly<Record<string, unknown>>): Record<string, ToolParameterSpec> {
  const properties = (schema.properties ?? {}) as Record<string, { type?: unknown; description?: unknown }>;
  const required = Array.isArray(schema.required) ? schema.required : [];
  const parameters: Record<string, ToolParameterSpec> = {};
  for (const [name, property] of Object.entries(properties)) {
    const type = property?.type === 'integer' ? 'number' : property?.type;
    if (type !== 'string' && type !== 'number' && type !== 'boolean' && type !== 'object' && type !== 'array') continue;
    parameters[name] = {
      type,
      ...(typeof property.description === 'string' ? { description: property.description } : {}),
      ...(required.includes(name) ? { required: true } : {}),
    };
  }
  return parameters;
}
