/**
 * A tool node, and any call of a tool (from a tool node or a prompt node's model): its parameters checked against the
 * tool's specs, then an HTTP tool through the outbound guard, an MCP server's tool or a built-in, its output kept under `{tools.<Node>…}`
 * (bounded to a preview when large).
 */

import { trackAnalyticsEvent } from '#core/analytics/track';
import { ValidationError } from '#core/errors';
import type { ScopedTool, ToolParameterSpec } from '#ports/flows';
import { METRIC } from '#ports/metrics';
import type { AgentDefinition, ToolNode } from './definition';
import { BUILT_IN_TOOL_PARAMETERS, BUILT_IN_TOOLS, isBuiltInTool } from './definition-parts';
import { mcpScopedTool, runMcpTool } from './mcp-tools';
import { renderValue } from './placeholders';
import { isRetrievalTool, runRetrievalTool } from './retrieval-tools';
import {
  AgentEvents,
  analyticsScope,
  FlowError,
  metricsOf,
  modelContext,
  placeholderScope,
  type RunContext,
  recordNode,
  recordToolStep,
  setOutput,
} from './run-context';

export async function runTool(context: RunContext, node: ToolNode): Promise<void> {
  const { session, deps } = context;
  const tool = await resolveTool(context, node.toolName);
  if (!tool) throw new FlowError('TOOL_NOT_FOUND', `Tool ${node.toolName} is not registered for this agent`);
  const specs: Readonly<Record<string, ToolParameterSpec>> = tool.parameters;
  const fixed = renderValue(node.parameters ?? {}, placeholderScope(context, node.name)) as Record<string, unknown>;
  const missing = Object.keys(specs).filter((key) => fixed[key] === undefined);
  let inferred: Record<string, unknown> = {};
  if (missing.length > 0) {
    metricsOf(context).count(METRIC.modelCalls);
    inferred = await deps.models(undefined).inferParameters(modelContext(context), {
      toolName: node.toolName,
      hint: node.prompt,
      parameters: specs,
      missing,
      memory: session.memory,
    });
  }
  // Fixed values override what the model inferred.
  const parameters: Record<string, unknown> = { ...inferred, ...fixed };
  recordNode(context, node, { toolName: node.toolName, parameters });
  const output = await executeTool(context, {
    toolName: node.toolName,
    parameters,
    key: String(context.step),
    source: `neither fixed by node ${node.name} nor inferred`,
  });
  setOutput(context, node, output);
  recordToolStep(context, node, node.toolName, parameters, output);
}

interface ToolExecution {
  readonly toolName: string;
  readonly parameters: Record<string, unknown>;
  /** Unique within the invocation (the step, and the index of a scoped call): keys what the tool records. */
  readonly key: string;
  /** Why a required parameter can be missing, for the message of TOOL_PARAMETERS_MISSING. */
  readonly source: string;
}

/**
 * One tool call, whoever makes it (a tool node, or a prompt node's model): the required-parameter rule, then the
 * built-in's code, the declared HTTP tool through the outbound guard, or the MCP server's tool (mcp-tools.ts). Its output as a node stores it: a JSON
 * object as it is, anything else as `{ result }`. Fails with an AppError (TOOL_FAILED, TOOL_PARAMETERS_MISSING,
 * TOOL_PARAMETERS_INVALID, TARGET_REFUSED, OUTBOUND_FAILED, KNOWLEDGE_BASE_NOT_FOUND, …).
 */
export async function executeTool(context: RunContext, execution: ToolExecution): Promise<Record<string, unknown>> {
  const { session, deps, definition } = context;
  const { toolName, parameters } = execution;
  const tool = await resolveTool(context, toolName);
  if (!tool) throw new FlowError('TOOL_NOT_FOUND', `Tool ${toolName} is not registered for this agent`);
  const absent = Object.entries(tool.parameters)
    .filter(([key, spec]) => spec.required && parameters[key] === undefined)
    .map(([key]) => key);
  if (absent.length > 0) {
    throw new FlowError('TOOL_PARAMETERS_MISSING', `Tool ${toolName} needs ${absent.join(', ')}: ${execution.source}`);
  }
  metricsOf(context).count(METRIC.toolCalls);

  let output: unknown;
  if (toolName === 'setMemory') {
    session.memory = { ...session.memory, ...parameters };
    output = parameters;
  } else if (toolName === 'trackAnalyticsEvent') {
    const { eventName, payload } = parameters;
    if (typeof eventName !== 'string' || (payload !== undefined && (typeof payload !== 'object' || payload === null))) {
      throw new FlowError('TOOL_FAILED', 'trackAnalyticsEvent needs eventName (string) and payload (object)');
    }
    const eventKey = `${context.invocation.invocationId}:${AgentEvents.ANALYTICS_EVENT}:${execution.key}`;
    const data = (payload ?? {}) as Record<string, unknown>;
    try {
      trackAnalyticsEvent(deps.recorder, analyticsScope(session), eventName, data, { eventKey });
    } catch (error) {
      // The flow's event breaks a rule: the node failed, not the request that started the flow.
      if (error instanceof ValidationError) throw new FlowError('TOOL_FAILED', `trackAnalyticsEvent: ${error.message}`);
      throw error;
    }
    output = { eventName, recorded: true };
  } else if (isRetrievalTool(toolName)) {
    output = await runRetrievalTool(deps, toolName, parameters, {
      organizationId: session.organizationId,
      agentId: session.agentId,
      environment: session.environment,
      memory: session.memory,
    });
  } else if (tool.inputSchema) {
    output = await runMcpTool(context, tool, parameters);
  } else {
    const declared = definition.tools.find((t) => t.name === toolName);
    if (!declared) throw new FlowError('TOOL_NOT_FOUND', `Tool ${toolName} is not registered for this agent`);
    const response = await deps.http.request({
      url: declared.url,
      method: declared.method,
      headers: declared.headers,
      body: parameters,
      timeoutMs: declared.timeoutSeconds * 1000,
    });
    if (response.status < 200 || response.status >= 300) {
      throw new FlowError('TOOL_FAILED', `Tool ${toolName} answered HTTP ${response.status}`);
    }
    output = response.body;
  }
  return output !== null && typeof output === 'object' && !Array.isArray(output)
    ? (output as Record<string, unknown>)
    : { result: output ?? null };
}

/** A tool as the model of a prompt node sees it, an MCP tool's from its server's listing; undefined: no such tool. */
export async function resolveTool(context: RunContext, name: string): Promise<ScopedTool | undefined> {
  return scopedTool(context.definition, name) ?? (await mcpScopedTool(context, name));
}

/** A declared or built-in tool as the model of a prompt node sees it; undefined when the definition has no such tool. */
export function scopedTool(definition: AgentDefinition, name: string): ScopedTool | undefined {
  const declared = definition.tools.find((t) => t.name === name);
  if (declared) {
    return {
      name,
      description: declared.description || `The HTTP tool ${name}`,
      parameters: declared.parameters,
      anyParameters: false,
    };
  }
  if (!isBuiltInTool(name)) return undefined;
  const parameters = BUILT_IN_TOOL_PARAMETERS[name];
  return { name, description: BUILT_IN_TOOLS[name], parameters: parameters ?? {}, anyParameters: parameters === null };
}
