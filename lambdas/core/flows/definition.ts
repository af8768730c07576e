/**
 * An agent's definition in one environment: its flows of nodes, the edges between them, the tools its tool nodes
 * may call, its variables and its callback. Every choice the spec leaves open ("not shown": the junction literal,
 * edge structure, the browser task's model property, app trigger properties) is made here, once, and described in
 * docs/flows.md. `validateDefinition` answers every problem at once, each with its flow, node, field and rule.
 *
 * Over 400 lines on purpose: the zod schema of a definition is one tree (each node type, edge and tool refers to the
 * others), and `validateDefinition`'s cross-reference rules read all of it; the node runners are elsewhere.
 */
import * as z from 'zod';
import type { ErrorDetail } from '#core/errors';
import { issuesToDetails } from '#core/validation';
import {
  BUILT_IN_TOOL_PARAMETERS,
  BUILT_IN_TOOLS,
  isBuiltInTool,
  MCP_TOOL_SEPARATOR,
  splitMcpToolName,
  TRIGGER_TYPES,
  type TriggerType,
} from './definition-parts';
import { LLM_CLASS_NAMES, llmPropertyProblems } from './llm-config';
import { placeholdersIn } from './placeholders';
import { cronProblems, isValidTimeZone } from './schedule';

export {
  BUILT_IN_TOOL_PARAMETERS,
  BUILT_IN_TOOLS,
  type BuiltInToolName,
  isBuiltInTool,
  MCP_TOOL_SEPARATOR,
  mcpToolOf,
  NODE_TYPES,
  type NodeType,
  nodesOf,
  splitMcpToolName,
  TRIGGER_TYPES,
  type TriggerType,
} from './definition-parts';

export const EDGE_TYPES = ['stepForward', 'promptCondition'] as const;
export const CONDITION_OPERATORS = ['equals', 'notEquals', 'greaterThan', 'lessThan', 'exists', 'notExists'] as const;

export const LIMITS = {
  flows: 20,
  nodesPerFlow: 100,
  edgesPerFlow: 300,
  tools: 50,
  variables: 50,
  promptLength: 20_000,
  /** Tools one prompt node may let the model call: each one's schema goes with every model turn of the node. */
  toolsPerPromptNode: 16,
  mcpServers: 10,
} as const;

/** A declared HTTP tool's call bound (docs/flows.md, "Tools"): the outbound default, and the most a tool may ask. */
export const DEFAULT_TOOL_TIMEOUT_SECONDS = 10;
export const MAX_TOOL_TIMEOUT_SECONDS = 300;

const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const nodeName = z.string().regex(NAME, 'must start with a letter and hold at most 64 letters, digits, "_" or "-"');
/** The trigger handler runs inside the request that triggered the run: it must leave the flow most of its time. */
export const MAX_AGENT_CODE_TIMEOUT_SECONDS = 10;

/** A Lambda function's ARN, unqualified or with a version or alias (Lambda's own pattern, partition included). */
export const LAMBDA_FUNCTION_ARN =
  /^arn:aws[a-z-]*:lambda:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:function:[A-Za-z0-9_-]{1,64}(?::[A-Za-z0-9_$-]{1,128})?$/;

const httpUrl = z
  .string()
  .max(2000)
  .regex(/^https?:\/\/[^\s/]+(\/\S*)?$/i, 'must be an http(s) URL');

/** Shown only where `field` has `value` (the console's properties panel reads it from the JSON schema). */
const onlyWhen = (field: string, value: string) => ({ 'x-only-when': { [field]: value } });

const base = {
  name: nodeName.describe('Unique across all flows: edges and jumps name the node by it'),
  displayName: z.string().trim().min(1).max(200).optional().describe('The name people see (the console, the trace)'),
};

const triggerNode = z.strictObject({
  ...base,
  type: z.literal('trigger'),
  triggerType: z.enum(TRIGGER_TYPES).describe('What starts the flow: a webhook call, an app event or a schedule'),
  autoTrigger: z
    .boolean()
    .optional()
    .meta({
      description: 'Run it at once when the flow is tested in the editor',
      ...onlyWhen('triggerType', 'webhook'),
    }),
  defaultPayload: z
    .string()
    .max(100_000)
    .optional()
    .meta({ description: 'The JSON payload the editor sends when testing', ...onlyWhen('triggerType', 'webhook') }),
  cronExpression: z
    .string()
    .max(200)
    .optional()
    .meta({
      description: 'Required for a schedule: 5-field cron, minute resolution (e.g. 0 9 * * 1-5)',
      ...onlyWhen('triggerType', 'schedule'),
    }),
  timezone: z
    .string()
    .max(100)
    .optional()
    .meta({
      description: 'IANA time zone of the cron expression (e.g. Europe/Berlin); default UTC',
      ...onlyWhen('triggerType', 'schedule'),
    }),
  appName: nodeName.optional().meta({
    description: 'Required for an app trigger: the app whose events start the flow',
    ...onlyWhen('triggerType', 'app'),
  }),
  eventName: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .meta({
      description: 'The one event of that app that starts the flow; absent: every event of the app',
      ...onlyWhen('triggerType', 'app'),
    }),
});

/**
 * A prompt node's inference parameters: the ones both providers document (Bedrock Converse's InferenceConfiguration,
 * OpenAI's chat completions), under one name each; any other is refused by name (`unknownField`). What differs by
 * class is checked by llmPropertyProblems.
 */
const llmProperties = z.strictObject({
  /** Model id (Bedrock model or inference profile id; the OpenAI-compatible server's model name). */
  model: z.string().min(1).max(200).optional(),
  temperature: z.number().min(0).max(2).optional(),
  maxTokens: z.number().int().min(1).max(32_000).optional(),
  /** Nucleus sampling: the share of probability mass the next token is drawn from. */
  topP: z.number().min(0).max(1).optional(),
  /** Up to 4 sequences that end the answer where they appear (both providers' limit). */
  stopSequences: z.array(z.string().min(1).max(100)).min(1).max(4).optional(),
});

const promptNode = z.strictObject({
  ...base,
  type: z.literal('promptNode'),
  displayName: z.string().trim().min(1).max(200).describe('The name people see (the console, the trace)'),
  prompt: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.promptLength)
    .describe('What the model is asked; placeholders such as {memory.customer.name} are filled in'),
  humanInTheLoop: z
    .boolean()
    .optional()
    .describe("Pause after this node's message: the next user message resumes the run here"),
  canStayOnNode: z
    .boolean()
    .optional()
    .describe('When no promptCondition edge holds, the node may run again instead of leaving'),
  llmConfig: z
    .strictObject({
      name: z.enum(LLM_CLASS_NAMES).optional(),
      properties: llmProperties.optional(),
    })
    .superRefine((config, ctx) => {
      if (config.name === undefined) {
        if (Object.keys(config).length === 0) return;
        ctx.addIssue({
          code: 'custom',
          path: ['name'],
          message: 'is required when llmConfig is not empty ({} means the default model)',
          params: { rule: 'required' },
        });
        return;
      }
      for (const problem of llmPropertyProblems(config.name, config.properties ?? {})) {
        ctx.addIssue({
          code: 'custom',
          path: ['properties', problem.property],
          message: problem.message,
          params: { rule: problem.rule },
        });
      }
    })
    // The spec: "empty means the default model". `{}` becomes no llmConfig at all, so that what follows validation
    // (the runtime, the stored definition) has one way of saying "the default model".
    .transform((config) => (config.name === undefined ? undefined : { ...config, name: config.name }))
    .optional()
    .describe('{} or absent: the default model; otherwise name is required'),
  sendAiMessage: z.boolean().default(true).describe("Send the model's answer to the user as an AI message"),
  context: z
    .enum(['run', 'conversation', 'none'])
    .optional()
    .describe(
      "What the model sees of the run so far: run (default) the messages and earlier tool nodes' calls and results; conversation the messages only; none only the instructions and this prompt",
    ),
  tools: z
    .array(nodeName)
    .max(LIMITS.toolsPerPromptNode)
    .optional()
    .describe(
      'Tools the model may call while it answers (declared or built-in names, or <server>__<tool> of an MCP server)',
    ),
});

const toolNode = z.strictObject({
  ...base,
  type: z.literal('tool'),
  toolName: nodeName.describe(
    'A built-in tool (setMemory, trackAnalyticsEvent, retrieveFromKnowledgeBase, …), one declared under tools, or <server>__<tool> of an MCP server',
  ),
  prompt: z.string().max(LIMITS.promptLength).optional().describe('A hint for inferring the parameters'),
  parameters: z
    .record(z.string().min(1).max(100), z.unknown())
    .optional()
    .describe('Fixed values (placeholders allowed); they override what the model infers'),
});

/** Flow control without processing: its outgoing edges route. */
const junctionNode = z.strictObject({ ...base, type: z.literal('junction') });

const jumpToNode = z.strictObject({
  ...base,
  type: z.literal('jumpToNode'),
  targetNodeId: nodeName.describe('The name of the node, in any flow, where the run goes on'),
});

const browserTaskNode = z.strictObject({
  ...base,
  type: z.literal('browserTask'),
  prompt: z.string().trim().min(1).max(LIMITS.promptLength).describe('The task, in words'),
  url: z
    .string()
    .max(2000)
    .optional()
    .describe('The page to open; without it the first http(s) URL of the prompt. Placeholders allowed'),
  model: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("The model that drives the browser; the deployment's default when absent"),
});

export const nodeSchema = z.discriminatedUnion('type', [
  triggerNode,
  promptNode,
  toolNode,
  junctionNode,
  jumpToNode,
  browserTaskNode,
]);

/** A deterministic test on the session, for edges leaving a junction (or any node). */
const conditionSchema = z.strictObject({
  path: z
    .string()
    .regex(/^(memory|tools|system)\.[^\s{}]+$/, 'must start with memory., tools. or system.')
    .describe('memory.<path>, tools.<Node>.<path> or system.<property>'),
  operator: z.enum(CONDITION_OPERATORS),
  value: z
    .union([z.string().max(500), z.number(), z.boolean()])
    .optional()
    .describe('What the operator compares with (none for exists and notExists)'),
});

export const edgeSchema = z.strictObject({
  from: nodeName,
  to: nodeName,
  type: z
    .enum(EDGE_TYPES)
    .describe('stepForward: an ordinary step; promptCondition: the model takes it when its condition holds'),
  condition: z
    .string()
    .trim()
    .min(1)
    .max(1000)
    .optional()
    .meta({
      description: 'Required: what must hold, in words; the model decides',
      ...onlyWhen('type', 'promptCondition'),
    }),
  when: conditionSchema
    .optional()
    .meta({ description: 'Taken only when this test holds', ...onlyWhen('type', 'stepForward') }),
});

const toolParameterSchema = z.strictObject({
  type: z.enum(['string', 'number', 'boolean', 'object', 'array']),
  description: z.string().max(1000).optional(),
  required: z.boolean().optional(),
});

/** A tool the agent declares: an HTTP endpoint that receives the parameters as a JSON body. */
export const toolSchema = z.strictObject({
  name: nodeName,
  description: z.string().max(1000).optional(),
  url: httpUrl,
  method: z.enum(['POST', 'PUT', 'PATCH']).default('POST'),
  headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,100}$/), z.string().max(2000)).optional(),
  parameters: z.record(z.string().min(1).max(100), toolParameterSchema).default({}),
  /**
   * How long a call may take, the answer read included (default 10 s, at most 300). A node that may call the tool is
   * not started in a request whose budget it does not fit: the run is handed over to the flow runner first.
   */
  timeoutSeconds: z.number().int().min(1).max(MAX_TOOL_TIMEOUT_SECONDS).default(DEFAULT_TOOL_TIMEOUT_SECONDS),
});

/** An MCP call's bound (docs/flows.md, "MCP tools"): initialize, listing and the call, answers read, in this time. */
export const DEFAULT_MCP_TIMEOUT_SECONDS = 10;
export const MAX_MCP_TIMEOUT_SECONDS = 60;
/** What a tool of a server may be called to be named `<server>__<tool>`: the model providers' function-name rule. */
const MCP_TOOL_NAME = /^[A-Za-z0-9_-]{1,61}$/;

/**
 * An MCP server whose tools the agent may call (Streamable HTTP): a node names each tool `<server>__<tool>`. Its tools
 * are listed when the definition is validated or stored, and every call goes through the outbound guard.
 */
export const mcpServerSchema = z.strictObject({
  name: nodeName
    .refine((name) => !name.includes(MCP_TOOL_SEPARATOR), {
      message: 'must not hold "__": it separates the server from the tool in a tool\'s name',
    })
    .describe('Unique among the servers; nodes name its tools <name>__<tool>'),
  description: z.string().max(1000).optional(),
  url: httpUrl.describe('The Streamable HTTP endpoint of the server (e.g. https://mcp.example.com/mcp)'),
  bearerSecret: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must be the name of a secret the deployment holds (MCP_SECRETS)')
    .optional()
    .describe(
      "The name of a secret of the deployment (MCP_SECRETS) sent as the bearer token; never the secret's value",
    ),
  tools: z
    .array(z.string().regex(MCP_TOOL_NAME, 'must be 1 to 61 letters, digits, "_" or "-"'))
    .max(LIMITS.tools)
    .optional()
    .describe('Only these tools of the server may be named; absent: every tool it lists'),
  timeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(MAX_MCP_TIMEOUT_SECONDS)
    .default(DEFAULT_MCP_TIMEOUT_SECONDS)
    .describe('How long one call may take, listing and answer included (default 10 s, at most 60)'),
});

export const flowSchema = z.strictObject({
  name: nodeName,
  nodes: z.array(nodeSchema).min(1).max(LIMITS.nodesPerFlow),
  edges: z.array(edgeSchema).max(LIMITS.edgesPerFlow).default([]),
});

/** A node's place on the console's canvas, by `<flow>/<node>`: at most one per node the limits allow. */
export const UI_LIMITS = { positions: LIMITS.flows * LIMITS.nodesPerFlow, coordinate: 1_000_000 } as const;
const coordinate = z.number().min(-UI_LIMITS.coordinate).max(UI_LIMITS.coordinate);
const uiSchema = z.strictObject({
  positions: z
    .record(
      z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}\/[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must be <flow>/<node>'),
      z.strictObject({ x: coordinate, y: coordinate }),
    )
    .refine((positions) => Object.keys(positions).length <= UI_LIMITS.positions, {
      message: `at most ${UI_LIMITS.positions} positions`,
    })
    .optional(),
});

export const definitionSchema = z.strictObject({
  /** Instructions the model gets with every prompt node of this agent (a system prompt). */
  instructions: z.string().max(LIMITS.promptLength).optional(),
  /** Where each AI message is POSTed as JSON (besides being stored on the session). */
  callbackUrl: httpUrl.optional(),
  /**
   * The agent's code (docs/agent-code.md): called, signed, with each TRIGGER_EVENT before default retrieval (its
   * answer may set memory, add messages or stop the run), and sent the AI messages when there is no `callbackUrl`.
   */
  agentCode: z
    .strictObject({
      /** An HTTPS endpoint that serves the code (the SDK's `http` handler)… */
      url: httpUrl.optional(),
      /** …or, in AWS, a Lambda function the deployment registered (`-c agentCodeFunctions`): its `lambda` handler. */
      functionArn: z
        .string()
        .max(300)
        .regex(LAMBDA_FUNCTION_ARN, 'must be a Lambda function ARN (arn:aws:lambda:<region>:<account>:function:<name>)')
        .optional(),
      /** How long the trigger handler may take (default 5 s, at most 10). */
      timeoutSeconds: z.number().int().min(1).max(MAX_AGENT_CODE_TIMEOUT_SECONDS).default(5),
      /** A handler that fails or times out: the run goes on (default), or fails with the handler's code. */
      onFailure: z.enum(['continue', 'stop']).default('continue'),
    })
    .superRefine((code, ctx) => {
      if ((code.url === undefined) === (code.functionArn === undefined)) {
        ctx.addIssue({
          code: 'custom',
          path: ['url'],
          message: 'give exactly one of url (an HTTPS endpoint) and functionArn (a Lambda function)',
          params: { rule: 'agentCode.oneTarget' },
        });
      }
    })
    .optional(),
  /** `{env.NAME}` reads these; the process environment is never exposed to a definition. */
  variables: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/), z.string().max(2000))
    .refine((v) => Object.keys(v).length <= LIMITS.variables, { message: `at most ${LIMITS.variables} variables` })
    .default({}),
  tools: z.array(toolSchema).max(LIMITS.tools).default([]),
  /** MCP servers whose tools the nodes may call as `<server>__<tool>` (docs/flows.md, "MCP tools"). */
  mcpServers: z.array(mcpServerSchema).max(LIMITS.mcpServers).optional(),
  flows: z.array(flowSchema).min(1).max(LIMITS.flows),
  /** The console's own data (docs/flows.md, "The console's ui block"): stored with the definition, never read by a run. */
  ui: uiSchema.optional(),
});

export type AgentDefinition = z.output<typeof definitionSchema>;
export type FlowDefinition = AgentDefinition['flows'][number];
export type FlowNode = z.output<typeof nodeSchema>;
export type FlowEdge = z.output<typeof edgeSchema>;
export type EdgeCondition = z.output<typeof conditionSchema>;
export type ToolDefinition = z.output<typeof toolSchema>;
export type McpServerDefinition = z.output<typeof mcpServerSchema>;
export type TriggerNode = z.output<typeof triggerNode>;
export type PromptNode = z.output<typeof promptNode>;
export type ToolNode = z.output<typeof toolNode>;
export type JumpToNode = z.output<typeof jumpToNode>;
export type BrowserTaskNode = z.output<typeof browserTaskNode>;

/** A problem of a definition: the field's dot path, the rule, and the flow and node it is in when it is in one. */
export interface DefinitionProblem extends ErrorDetail {
  readonly flow?: string;
  readonly node?: string;
}

export type ValidationOutcome =
  | { readonly valid: true; readonly definition: AgentDefinition; readonly problems: readonly [] }
  | { readonly valid: false; readonly problems: readonly DefinitionProblem[] };

/**
 * Parses the definition and checks the rules that span nodes; all problems at once. When the shape is wrong, the
 * rules that span nodes still run over every part that has its shape (each tool, node and edge on its own), so one
 * answer names a node's missing field and, say, a jump to a node that does not exist.
 */
export function validateDefinition(input: unknown): ValidationOutcome {
  const parsed = definitionSchema.safeParse(input);
  if (!parsed.success) {
    const shape = issuesToDetails(parsed.error.issues, input).map((d) => locate(d, input));
    const seen = new Set(shape.map((p) => `${p.field} ${p.rule}`));
    const references = crossReferenceProblems(salvaged(input)).filter((p) => !seen.has(`${p.field} ${p.rule}`));
    return { valid: false, problems: [...shape, ...references] };
  }
  const problems = crossReferenceProblems(modelOf(parsed.data));
  return problems.length === 0 ? { valid: true, definition: parsed.data, problems: [] } : { valid: false, problems };
}

/**
 * What the cross-reference rules read: each tool, node and edge at its index, parsed on its own (undefined where it
 * does not have its shape), and the names and types written, even of the parts that do not parse (a jump to a node
 * with a bad field still names a node that exists).
 */
interface ReferenceModel {
  readonly variables: readonly string[];
  readonly tools: readonly { readonly name?: string; readonly tool?: ToolDefinition }[];
  readonly mcpServers: readonly { readonly name?: string; readonly server?: McpServerDefinition }[];
  readonly flows: readonly {
    readonly name?: string;
    readonly nodes: readonly { readonly name?: string; readonly type?: string; readonly node?: FlowNode }[];
    readonly edges: readonly (FlowEdge | undefined)[];
  }[];
}

function modelOf(definition: AgentDefinition): ReferenceModel {
  return {
    variables: Object.keys(definition.variables),
    tools: definition.tools.map((tool) => ({ name: tool.name, tool })),
    mcpServers: (definition.mcpServers ?? []).map((server) => ({ name: server.name, server })),
    flows: definition.flows.map((flow) => ({
      name: flow.name,
      nodes: flow.nodes.map((node) => ({ name: node.name, type: node.type, node })),
      edges: flow.edges,
    })),
  };
}

const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const stringOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const fieldOf = (value: unknown, key: string): unknown =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;

function salvaged(input: unknown): ReferenceModel {
  const variables = fieldOf(input, 'variables');
  return {
    variables:
      variables !== null && typeof variables === 'object' && !Array.isArray(variables) ? Object.keys(variables) : [],
    tools: listOf(fieldOf(input, 'tools')).map((raw) => {
      const tool = toolSchema.safeParse(raw);
      return { name: stringOf(fieldOf(raw, 'name')), tool: tool.success ? tool.data : undefined };
    }),
    mcpServers: listOf(fieldOf(input, 'mcpServers')).map((raw) => {
      const server = mcpServerSchema.safeParse(raw);
      return { name: stringOf(fieldOf(raw, 'name')), server: server.success ? server.data : undefined };
    }),
    flows: listOf(fieldOf(input, 'flows')).map((flow) => ({
      name: stringOf(fieldOf(flow, 'name')),
      nodes: listOf(fieldOf(flow, 'nodes')).map((raw) => {
        const node = nodeSchema.safeParse(raw);
        return {
          name: stringOf(fieldOf(raw, 'name')),
          type: stringOf(fieldOf(raw, 'type')),
          node: node.success ? node.data : undefined,
        };
      }),
      edges: listOf(fieldOf(flow, 'edges')).map((raw) => {
        const edge = edgeSchema.safeParse(raw);
        return edge.success ? edge.data : undefined;
      }),
    })),
  };
}

/** Adds the flow and node names to a detail whose field is inside `flows.<i>.nodes.<j>` or `flows.<i>.edges.<j>`. */
function locate(detail: ErrorDetail, input: unknown): DefinitionProblem {
  const match = /^flows\.(\d+)(?:\.(nodes|edges)\.(\d+))?/.exec(detail.field);
  if (!match) return detail;
  const flow = (input as { flows?: unknown[] }).flows?.[Number(match[1])] as
    | { name?: unknown; nodes?: unknown[]; edges?: unknown[] }
    | undefined;
  const flowName = typeof flow?.name === 'string' ? flow.name : undefined;
  let nodeName: string | undefined;
  if (match[2] === 'nodes') {
    const node = flow?.nodes?.[Number(match[3])] as { name?: unknown } | undefined;
    if (typeof node?.name === 'string') nodeName = node.name;
  } else if (match[2] === 'edges') {
    const edge = flow?.edges?.[Number(match[3])] as { from?: unknown } | undefined;
    if (typeof edge?.from === 'string') nodeName = edge.from;
  }
  return { ...detail, ...(flowName ? { flow: flowName } : {}), ...(nodeName ? { node: nodeName } : {}) };
}

function crossReferenceProblems(model: ReferenceModel): DefinitionProblem[] {
  const problems: DefinitionProblem[] = [];
  const add = (problem: DefinitionProblem) => problems.push(problem);
  const toolNames = new Set<string>(Object.keys(BUILT_IN_TOOLS));
  const declaredTools = new Map<string, ToolDefinition>();

  model.tools.forEach(({ name, tool }, i) => {
    if (name === undefined) return;
    if (toolNames.has(name)) {
      add({
        field: `tools.${i}.name`,
        rule: Object.hasOwn(BUILT_IN_TOOLS, name) ? 'tool.builtInName' : 'tool.unique',
        message: `tools.${i}.name: ${name} is ${Object.hasOwn(BUILT_IN_TOOLS, name) ? 'a built-in tool' : 'declared twice'}`,
      });
    }
    toolNames.add(name);
    if (tool) declaredTools.set(name, tool);
  });

  const mcpServers = new Map<string, McpServerDefinition | undefined>();
  model.mcpServers.forEach(({ name, server }, i) => {
    if (name === undefined) return;
    if (mcpServers.has(name)) {
      add({ field: `mcpServers.${i}.name`, rule: 'mcpServer.unique', message: `MCP server ${name} is declared twice` });
    } else mcpServers.set(name, server); // the first one, as the runtime finds it
  });
  model.tools.forEach(({ name }, i) => {
    const server = name === undefined ? undefined : splitMcpToolName(name)?.server;
    if (server !== undefined && mcpServers.has(server)) {
      add({
        field: `tools.${i}.name`,
        rule: 'tool.mcpName',
        message: `tools.${i}.name: ${name} would name a tool of MCP server ${server}; choose a name without "__"`,
      });
    }
  });
  /** Why `name` names no tool a node may use: [rule, message]; undefined when it does. */
  const unknownTool = (name: string): [string, string] | undefined => {
    if (toolNames.has(name)) return undefined;
    const mcp = splitMcpToolName(name);
    if (mcp && mcpServers.has(mcp.server)) {
      const allowed = mcpServers.get(mcp.server)?.tools;
      if (allowed === undefined || allowed.includes(mcp.tool)) return undefined;
      return ['tool.notAllowed', `${mcp.tool} is not in the tools of MCP server ${mcp.server}: ${allowed.join(', ')}`];
    }
    const servers = [...mcpServers.keys()].map((server) => `${server}${MCP_TOOL_SEPARATOR}<tool>`);
    return [
      'tool.unknown',
      `tool ${name} is not registered (built-in: ${Object.keys(BUILT_IN_TOOLS).join(', ')}; or declare it under tools${servers.length > 0 ? `; MCP: ${servers.join(', ')}` : ''})`,
    ];
  };

  const flowNames = new Set<string>();
  model.flows.forEach((flow, f) => {
    if (flow.name === undefined) return;
    if (flowNames.has(flow.name)) {
      add({
        field: `flows.${f}.name`,
        rule: 'flow.unique',
        flow: flow.name,
        message: `flow ${flow.name} is defined twice`,
      });
    }
    flowNames.add(flow.name);
  });

  // Node names are unique across all flows: a jump names its target by name alone.
  const allNodes = new Set<string>();
  model.flows.forEach((flow, flowIndex) => {
    flow.nodes.forEach(({ name }, index) => {
      if (name === undefined) return;
      if (allNodes.has(name)) {
        add({
          field: `flows.${flowIndex}.nodes.${index}.name`,
          rule: 'name.unique',
          ...(flow.name ? { flow: flow.name } : {}),
          node: name,
          message: `node name ${name} is used more than once (node names are unique across all flows)`,
        });
      } else allNodes.add(name);
    });
  });

  // Without any flow, the shape's own problem (flows is required, or empty) says it.
  if (model.flows.length > 0 && !model.flows.some((flow) => flow.nodes.some(({ type }) => type === 'trigger'))) {
    add({
      field: 'flows',
      rule: 'trigger.required',
      message: 'the definition has no trigger node: nothing can start it',
    });
  }

  model.flows.forEach((flow, f) => {
    const inFlow = new Set(flow.nodes.flatMap(({ name }) => (name === undefined ? [] : [name])));
    const where = flow.name ? { flow: flow.name } : {};
    flow.nodes.forEach(({ node }, n) => {
      if (!node) return;
      const at = (field: string, rule: string, message: string) =>
        add({ field: `flows.${f}.nodes.${n}.${field}`, rule, ...where, node: node.name, message });
      switch (node.type) {
        case 'trigger':
          triggerProblems(node, at);
          break;
        case 'tool': {
          const unknown = unknownTool(node.toolName);
          if (unknown) at('toolName', ...unknown);
          else if (toolNames.has(node.toolName)) {
            const parameters = isBuiltInTool(node.toolName)
              ? BUILT_IN_TOOL_PARAMETERS[node.toolName]
              : declaredTools.get(node.toolName)?.parameters;
            for (const key of Object.keys(node.parameters ?? {})) {
              if (parameters && !Object.hasOwn(parameters, key)) {
                at(`parameters.${key}`, 'tool.unknownParameter', `tool ${node.toolName} declares no parameter ${key}`);
              }
            }
          }
          break;
        }
        case 'promptNode':
          (node.tools ?? []).forEach((tool, t) => {
            const unknown = unknownTool(tool);
            if (unknown) at(`tools.${t}`, ...unknown);
            else if (node.tools?.indexOf(tool) !== t) {
              at(`tools.${t}`, 'tool.duplicate', `tool ${tool} is listed more than once`);
            }
          });
          break;
        case 'jumpToNode':
          if (node.targetNodeId === node.name) at('targetNodeId', 'jump.self', 'a jumpToNode cannot jump to itself');
          else if (!allNodes.has(node.targetNodeId)) {
            at('targetNodeId', 'jump.unknownTarget', `targetNodeId ${node.targetNodeId} matches no node in any flow`);
          }
          break;
        default:
          break;
      }
      for (const [field, text] of templatesOf(node)) {
        for (const ref of placeholdersIn(text)) {
          const nodeRef = ref.kind === 'tools' ? ref.path.split('.')[0] : undefined;
          if (nodeRef !== undefined && !allNodes.has(nodeRef)) {
            at(field, 'placeholder.unknownNode', `${ref.raw} names no node of this agent`);
          }
          if (ref.kind === 'env' && !model.variables.includes(ref.path)) {
            at(field, 'placeholder.unknownVariable', `${ref.raw} names no variable of this definition`);
          }
        }
      }
    });

    flow.edges.forEach((edge, e) => {
      if (!edge) return;
      const at = (field: string, rule: string, message: string) =>
        add({ field: `flows.${f}.edges.${e}.${field}`, rule, ...where, node: edge.from, message });
      const typeOf = (name: string) => flow.nodes.find((n) => n.name === name)?.type;
      const flowName = flow.name ?? `flows.${f}`;
      if (!inFlow.has(edge.from)) at('from', 'edge.unknownNode', `${edge.from} is not a node of flow ${flowName}`);
      if (!inFlow.has(edge.to)) {
        at('to', 'edge.unknownNode', `${edge.to} is not a node of flow ${flowName} (use a jumpToNode across flows)`);
      }
      if (typeOf(edge.to) === 'trigger') at('to', 'edge.intoTrigger', 'an edge cannot lead into a trigger');
      const fromType = typeOf(edge.from);
      if (fromType === 'jumpToNode') at('from', 'edge.fromJump', 'a jumpToNode continues at its target, not by edges');
      if (edge.type === 'promptCondition') {
        if (edge.condition === undefined) at('condition', 'required', 'a promptCondition edge needs a condition');
        if (edge.when !== undefined) at('when', 'edge.whenOnPromptCondition', 'when is for stepForward edges');
        if (fromType !== undefined && fromType !== 'promptNode') {
          at('type', 'edge.promptConditionSource', 'promptCondition edges leave prompt nodes only');
        }
      } else if (edge.condition !== undefined) {
        at('condition', 'edge.conditionOnStepForward', 'condition is for promptCondition edges; use when');
      }
      if (edge.when) {
        const { operator, value } = edge.when;
        const needsValue = operator !== 'exists' && operator !== 'notExists';
        if (needsValue && value === undefined) at('when.value', 'required', `operator ${operator} needs a value`);
        if (!needsValue && value !== undefined) at('when.value', 'when.noValue', `operator ${operator} takes no value`);
        const [kind, nodeRef] = edge.when.path.split('.');
        if (kind === 'tools' && !allNodes.has(nodeRef)) {
          at('when.path', 'placeholder.unknownNode', `${edge.when.path} names no node of this agent`);
        }
      }
    });
  });
  return problems;
}

function triggerProblems(node: TriggerNode, at: (field: string, rule: string, message: string) => void): void {
  const only = (field: keyof TriggerNode, triggerType: TriggerType) => {
    if (node[field] !== undefined && node.triggerType !== triggerType) {
      at(field, `${triggerType}Only`, `${field} applies to ${triggerType} triggers only`);
    }
  };
  only('autoTrigger', 'webhook');
  only('defaultPayload', 'webhook');
  only('cronExpression', 'schedule');
  only('timezone', 'schedule');
  only('appName', 'app');
  only('eventName', 'app');
  if (node.triggerType === 'webhook' && node.defaultPayload !== undefined) {
    try {
      JSON.parse(node.defaultPayload);
    } catch {
      at('defaultPayload', 'json', 'defaultPayload must be a JSON document');
    }
  }
  if (node.triggerType === 'schedule') {
    if (node.cronExpression === undefined)
      at('cronExpression', 'required', 'a schedule trigger needs a cronExpression');
    else {
      for (const problem of cronProblems(node.cronExpression))
        at('cronExpression', 'cron', `cronExpression ${problem}`);
    }
    if (node.timezone !== undefined && !isValidTimeZone(node.timezone)) {
      at('timezone', 'timezone', `timezone ${node.timezone} is not an IANA time zone (such as Europe/Berlin or UTC)`);
    }
  }
  if (node.triggerType === 'app' && node.appName === undefined) {
    at('appName', 'required', 'an app trigger needs the appName whose events start it');
  }
}

/** The texts of a node in which placeholders are substituted, by field path. */
function templatesOf(node: FlowNode): [string, string][] {
  const texts: [string, string][] = [];
  if (node.type === 'promptNode' || node.type === 'browserTask') texts.push(['prompt', node.prompt]);
  if (node.type === 'browserTask' && node.url) texts.push(['url', node.url]);
  if (node.type === 'tool') {
    const walk = (value: unknown, field: string): void => {
      if (typeof value === 'string') texts.push([field, value]);
      else if (Array.isArray(value)) {
        for (const [i, v] of value.entries()) walk(v, `${field}.${i}`);
      } else if (value && typeof value === 'object') {
        for (const [k, v] of Object.entries(value)) walk(v, `${field}.${k}`);
      }
    };
    walk(node.parameters ?? {}, 'parameters');
  }
  return texts;
}
