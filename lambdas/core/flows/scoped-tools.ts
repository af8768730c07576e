/**
 * A prompt node's scoped tools (docs/flows.md, "Scoped tools"): the model may call the tools the node names, up to
 * TOOL_CALL_LIMIT calls; each call goes through the tool's code, the outbound guard and the parameter rules, is
 * recorded as a `tool_call` event, and its result is kept under `{tools.<Node>.calls.<n>}`.
 */

import { boundedValue, recordBuiltInEvent, truncatedText } from '#core/analytics/track';
import { AppError } from '#core/errors';
import type { FlowModel, ScopedTool } from '#ports/flows';
import { METRIC } from '#ports/metrics';
import type { ModelToolCall, ModelToolRound } from '#ports/model';
import type { PromptNode } from './definition';
import { isParameterValueOfType } from './parameters';
import {
  analyticsScope,
  CALL_PARAMETERS_MAX_BYTES,
  CALL_RESULT_MAX_BYTES,
  describeFailure,
  FlowError,
  metricsOf,
  modelContext,
  NODE_OUTPUT_MAX_BYTES,
  PAYLOAD_PART_MAX_BYTES,
  type RunContext,
  TOOL_CALL_LIMIT,
} from './run-context';
import { executeTool, resolveTool } from './run-tool';

/** A scoped call as `{tools.<PromptNode>.calls.<n>}` reads it (n from 0, in the order the model asked). */
export interface StoredCall {
  readonly tool: string;
  readonly parameters: unknown;
  readonly status: 'succeeded' | 'failed' | 'refused';
  readonly result?: unknown;
  readonly error?: { readonly code: string; readonly message: string };
}

/**
 * The model's turns of a prompt node with scoped tools: it answers, or asks for calls; each call runs (or is
 * refused) and its result goes back to it, until it answers. An answer asking for more than TOOL_CALL_LIMIT calls
 * in all fails the node before any of its calls runs.
 */
export async function respondWithTools(
  context: RunContext,
  node: PromptNode,
  model: FlowModel,
  prompt: string,
  calls: StoredCall[],
): Promise<string> {
  // An MCP tool from its server's listing: a server that cannot be listed fails the node (its error and code).
  const tools = (await Promise.all((node.tools ?? []).map((name) => resolveTool(context, name)))).filter(
    (tool): tool is ScopedTool => tool !== undefined,
  );
  const rounds: ModelToolRound[] = [];
  for (;;) {
    metricsOf(context).count(METRIC.modelCalls);
    const turn = await model.respondWithTools(modelContext(context, node.context), {
      prompt,
      tools,
      rounds,
      memory: context.session.memory,
    });
    if ('answer' in turn) return turn.answer;
    // Asking for no call is answering (the port's adapters never do it; without this a model could loop forever).
    if (turn.calls.length === 0) return turn.text ?? '';
    if (calls.length + turn.calls.length > TOOL_CALL_LIMIT) {
      throw new FlowError(
        'TOOL_CALL_LIMIT',
        `Prompt node ${node.name}: the model asked for ${turn.calls.length} more tool call(s) after ${calls.length}; a node run makes at most ${TOOL_CALL_LIMIT}`,
      );
    }
    const results: { callId: string; content: unknown }[] = [];
    for (const call of turn.calls) {
      const { stored, forModel } = await scopedCall(context, node, tools, call, calls.length);
      calls.push(stored);
      results.push({ callId: call.id, content: forModel });
    }
    rounds.push({ calls: turn.calls, results, ...(turn.text ? { text: turn.text } : {}) });
  }
}

/**
 * One call the model asked for: refused when the tool is not in the node's scope, failed when its parameters break
 * the tool's declaration or the tool fails (the error is the result the model gets, so it can try otherwise), else
 * run by the same code as a tool node. Recorded as `tool_call`.
 */
async function scopedCall(
  context: RunContext,
  node: PromptNode,
  tools: readonly ScopedTool[],
  call: ModelToolCall,
  index: number,
): Promise<{ stored: StoredCall; forModel: unknown }> {
  const started = context.deps.clock.now().getTime();
  const tool = tools.find((t) => t.name === call.name);
  let status: StoredCall['status'];
  let output: unknown;
  let error: StoredCall['error'];
  if (!tool) {
    status = 'refused';
    error = {
      code: 'TOOL_NOT_IN_SCOPE',
      message: `Tool ${truncatedText(call.name, 100)} is not one of the tools of node ${node.name} (${tools.map((t) => t.name).join(', ')}); it was not called`,
    };
  } else {
    try {
      const parameters = modelParameters(tool, call.input);
      output = await executeTool(context, {
        toolName: tool.name,
        parameters,
        key: `${context.step}:${index}`,
        source: `the model left it out of call ${index} of node ${node.name}`,
      });
      status = 'succeeded';
    } catch (failure) {
      // A fault of ours (not an AppError) is no result to hand the model: it fails the session.
      if (!(failure instanceof AppError)) throw failure;
      status = 'failed';
      error = describeFailure(failure);
    }
  }
  const parameters = call.input ?? null;
  recordBuiltInEvent(
    context.deps.recorder,
    analyticsScope(context.session),
    'tool_call',
    {
      nodeName: node.name,
      callIndex: index,
      tool: truncatedText(call.name, 100),
      parameters: boundedValue(parameters, PAYLOAD_PART_MAX_BYTES),
      status,
      durationMs: Math.max(0, context.deps.clock.now().getTime() - started),
      ...(error ? { error } : {}),
    },
    { invocationId: context.invocation.invocationId, step: `${context.step}:${index}` },
  );
  const stored: StoredCall = {
    tool: truncatedText(call.name, 100),
    parameters: boundedValue(parameters, CALL_PARAMETERS_MAX_BYTES),
    status,
    ...(error ? { error } : { result: boundedValue(output, CALL_RESULT_MAX_BYTES) }),
  };
  return { stored, forModel: error ? { error } : boundedValue(output, NODE_OUTPUT_MAX_BYTES) };
}

/**
 * The model's parameters, checked against the tool's declaration (a tool node's come from its definition, which
 * validation checked): a JSON object, no parameter the tool does not declare (but setMemory takes any), each of its
 * declared type. A null stands for a parameter left out, as models send for optional ones.
 */
function modelParameters(tool: ScopedTool, input: unknown): Record<string, unknown> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new FlowError('TOOL_PARAMETERS_INVALID', `Tool ${tool.name}: the parameters must be a JSON object`);
  }
  const parameters: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, value] of Object.entries(input)) {
    const spec = Object.hasOwn(tool.parameters, name) ? tool.parameters[name] : undefined;
    if (spec === undefined && !tool.anyParameters) problems.push(`${name} is not a parameter of ${tool.name}`);
    else if (value === null && spec !== undefined) continue;
    else if (spec !== undefined && !isParameterValueOfType(value, spec.type))
      problems.push(`${name} must be ${spec.type}`);
    else parameters[name] = value;
  }
  if (problems.length > 0) {
    throw new FlowError('TOOL_PARAMETERS_INVALID', `Tool ${tool.name}: ${truncatedText(problems.join('; '), 500)}`);
  }
  return parameters;
}
