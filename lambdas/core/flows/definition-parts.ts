/**
 * The parts of a definition the flow runtime reads besides its types: node and trigger types, the built-in tools,
 * the names of MCP tools, the walk over nodes. Apart from definition.ts, whose zod schemas the runtime's bundles
 * (webhook, app events: 300 KB each) would otherwise carry without using them; definition.ts re-exports them.
 * Typed by shape, not by the schemas' types, so that this module imports nothing of definition.ts.
 */
import type { ToolParameterSpec } from './parameters';

export const NODE_TYPES = ['trigger', 'promptNode', 'tool', 'junction', 'jumpToNode', 'browserTask'] as const;
export type NodeType = (typeof NODE_TYPES)[number];
export const TRIGGER_TYPES = ['webhook', 'app', 'schedule'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];
/** Tools every agent has without declaring them (docs/flows.md, "Tools"). */
export const BUILT_IN_TOOLS = {
  setMemory: 'Writes each of its parameters into the session memory under the same name',
  trackAnalyticsEvent: 'Records a custom analytics event: parameters eventName (string) and payload (object)',
  retrieveFromKnowledgeBase:
    "Finds the passages of the agent's knowledge base that best match a query; answers { results: [{ content, score, metadata }] }",
  retrieveAndGenerateFromKnowledgeBase:
    "Finds passages of the agent's knowledge base for a query and answers the query from them with citations; answers { answer, citations, results, model }",
} as const;
export type BuiltInToolName = keyof typeof BUILT_IN_TOOLS;

const RETRIEVAL_TOOL_PARAMETERS: Readonly<Record<string, ToolParameterSpec>> = {
  query: { type: 'string', required: true, description: 'what to look for, in words (at most 2,000 characters)' },
  knowledgeBaseId: {
    type: 'string',
    description: 'the knowledge base to search; may be left out when the agent has exactly one',
  },
  numberOfResults: { type: 'number', description: 'how many passages at most, 1 to 100 (default 5)' },
  minScore: { type: 'number', description: 'drop passages scoring under this, 0 to 1 (default 0)' },
  filters: {
    type: 'array',
    description:
      'AND-combined filters on document labels: [{ "key": "label1" or "label2", "operator": "equals", "notEquals", "greaterThan" or "lessThan", "value": text or "{state.memory.<path>}" }]',
  },
};

/** The parameters of each built-in tool; null: any parameter (setMemory writes whatever it is given). */
export const BUILT_IN_TOOL_PARAMETERS: Readonly<
  Record<BuiltInToolName, Readonly<Record<string, ToolParameterSpec>> | null>
> = {
  setMemory: null,
  trackAnalyticsEvent: {
    eventName: { type: 'string', required: true, description: 'name of the custom analytics event' },
    payload: { type: 'object', description: 'event data' },
  },
  retrieveFromKnowledgeBase: RETRIEVAL_TOOL_PARAMETERS,
  retrieveAndGenerateFromKnowledgeBase: RETRIEVAL_TOOL_PARAMETERS,
};

export function isBuiltInTool(name: string): name is BuiltInToolName {
  return Object.hasOwn(BUILT_IN_TOOLS, name);
}

/** Between an MCP server's name and one of its tools' in the name a node gives the tool: `crm__lookup_customer`. */
export const MCP_TOOL_SEPARATOR = '__';
/** Every node of every flow, with where it is. */
export function nodesOf<Flow extends { readonly nodes: readonly unknown[] }>(definition: {
  readonly flows: readonly Flow[];
}): { flow: Flow; flowIndex: number; node: Flow['nodes'][number]; index: number }[] {
  return definition.flows.flatMap((flow, flowIndex) =>
    flow.nodes.map((node, index) => ({ flow, flowIndex, node, index })),
  );
}

/** `crm__lookup_customer` → the server `crm` and its tool `lookup_customer`; undefined for a name without `__`. */
export function splitMcpToolName(name: string): { readonly server: string; readonly tool: string } | undefined {
  const at = name.indexOf(MCP_TOOL_SEPARATOR);
  if (at <= 0 || at + MCP_TOOL_SEPARATOR.length >= name.length) return undefined;
  return { server: name.slice(0, at), tool: name.slice(at + MCP_TOOL_SEPARATOR.length) };
}

/** The MCP server a node's tool name refers to, and the tool's name on that server; undefined for any other tool. */
export function mcpToolOf<Server extends { readonly name: string }>(
  definition: { readonly tools: readonly { readonly name: string }[]; readonly mcpServers?: readonly Server[] },
  name: string,
): { readonly server: Server; readonly index: number; readonly tool: string } | undefined {
  const split = splitMcpToolName(name);
  if (!split || definition.tools.some((t) => t.name === name)) return undefined;
  const index = (definition.mcpServers ?? []).findIndex((server) => server.name === split.server);
  const server = definition.mcpServers?.[index];
  return server ? { server, index, tool: split.tool } : undefined;
}
