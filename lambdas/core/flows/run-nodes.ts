/**
 * Running one node of a flow: a prompt node (its model, its scoped tools up to TOOL_CALL_LIMIT calls, its AI
 * message), a tool node (HTTP tools and the built-ins), a browser task; each records its output under
 * `{tools.<Node>…}` and a `node_execution` event.
 */

import type { FlowModel, ScopedTool, ToolParameterSpec } from '../../ports/flows';
import { METRIC } from '../../ports/metrics';
import type { ModelToolCall, ModelToolRound } from '../../ports/model';
import { boundedValue, recordBuiltInEvent, trackAnalyticsEvent, truncatedText } from '../analytics/track';
import { AppError, ValidationError } from '../errors';
import {
  type AgentDefinition,
  type BrowserTaskNode,
  BUILT_IN_TOOL_PARAMETERS,
  BUILT_IN_TOOLS,
  isBuiltInTool,
  type PromptNode,
  type ToolNode,
} from './definition';
import { isParameterValueOfType } from './parameters';
import { renderText, renderValue } from './placeholders';
import { isRetrievalTool, runRetrievalTool } from './retrieval-tools';
import {
  AgentEvents,
  analyticsScope,
  BROWSER_STEP_TEXT_MAX_CHARS,
  BROWSER_TASK_OUTPUT_MAX_BYTES,
  CALL_PARAMETERS_MAX_BYTES,
  CALL_RESULT_MAX_BYTES,
  describeFailure,
  FlowError,
  type Located,
  locate,
  metricsOf,
  modelContext,
  NODE_OUTPUT_MAX_BYTES,
  now,
  PAYLOAD_PART_MAX_BYTES,
  PROMPT_WITH_TOOLS_OUTPUT_MAX_BYTES,
  placeholderScope,
  type RunContext,
  recordNode,
  setOutput,
  TOOL_CALL_LIMIT,
} from './run-context';
import type { AiMessage } from './session';

/** Runs one node; `pause` stops the invocation, `{ jumpTo }` continues at another node (of any flow). */
export async function runNode(context: RunContext, { node }: Located): Promise<'next' | 'pause' | { jumpTo: string }> {
  switch (node.type) {
    case 'trigger':
    case 'junction':
      recordNode(context, node, {});
      return 'next';
    case 'jumpToNode': {
      recordNode(context, node, { targetNodeId: node.targetNodeId });
      if (!locate(context.definition, node.targetNodeId)) {
        throw new FlowError(
          'JUMP_TARGET_NOT_FOUND',
          `jumpToNode ${node.name}: targetNodeId ${node.targetNodeId} matches no node in any loaded flow`,
        );
      }
      return { jumpTo: node.targetNodeId };
    }
    case 'promptNode':
      return runPrompt(context, node);
    case 'tool':
      await runTool(context, node);
      return 'next';
    case 'browserTask':
      await runBrowserTaskNode(context, node);
      return 'next';
  }
}

/**
 * A browser task: the driver opens the page and the node's model operates it, one action per step
 * (core/flows/browser-task.ts), wherever the browser runs. Each step is recorded as `browser_step`; the output is
 * `{ answer, url, status, title, text, steps }`. A task that stopped before `done` (BROWSER_STEP_LIMIT, a model that
 * failed) fails the node with that code, its output and its steps kept.
 */
async function runBrowserTaskNode(context: RunContext, node: BrowserTaskNode): Promise<void> {
  const scope = placeholderScope(context, node.name);
  const prompt = renderText(node.prompt, scope);
  const url = node.url === undefined ? undefined : renderText(node.url, scope);
  recordNode(context, node, { prompt, ...(url === undefined ? {} : { url }), model: node.model ?? null });
  const { system, messages } = modelContext(context);
  const result = await context.deps.browser.run({
    prompt,
    url,
    model: node.model,
    // The conversation's text only: its images would not fit the BrowserTask function's request (6 MB).
    context: {
      ...(system === undefined ? {} : { system }),
      messages: messages.map(({ role, content }) => ({ role, content })),
    },
  });
  metricsOf(context).count(METRIC.browserSteps, result.steps.length);
  result.steps.forEach((step, index) => {
    recordBuiltInEvent(
      context.deps.recorder,
      analyticsScope(context.session),
      'browser_step',
      {
        nodeName: node.name,
        stepIndex: index,
        action: step.action,
        target: step.target === null ? null : truncatedText(step.target, BROWSER_STEP_TEXT_MAX_CHARS),
        ...(step.value === undefined ? {} : { value: truncatedText(step.value, BROWSER_STEP_TEXT_MAX_CHARS) }),
        ok: step.ok,
        ...(step.error ? { error: boundedValue(step.error, BROWSER_STEP_TEXT_MAX_CHARS * 2) } : {}),
        url: truncatedText(step.url, BROWSER_STEP_TEXT_MAX_CHARS * 2),
        durationMs: step.durationMs,
      },
      { invocationId: context.invocation.invocationId, step: `${context.step}:${index}` },
    );
  });
  setOutput(
    context,
    node,
    {
      answer: result.answer,
      url: result.url,
      status: result.status,
      title: result.title,
      text: result.text,
      steps: result.steps.map(({ action, target, ok, error }) => ({ action, target, ok, ...(error ? { error } : {}) })),
    },
    BROWSER_TASK_OUTPUT_MAX_BYTES,
  );
  if (result.failure) throw new FlowError(result.failure.code, result.failure.message);
}

async function runPrompt(context: RunContext, node: PromptNode): Promise<'next' | 'pause'> {
  const { session, deps } = context;
  const prompt = renderText(node.prompt, placeholderScope(context, node.name));
  const model = deps.models(node.llmConfig);
  const tools = node.tools ?? [];
  recordNode(context, node, {
    prompt,
    model: model.name,
    llmConfig: node.llmConfig ?? null,
    ...(tools.length > 0 ? { tools } : {}),
  });
  let text: string;
  if (tools.length > 0) {
    const calls: StoredCall[] = [];
    try {
      text = await respondWithTools(context, node, model, prompt, calls);
    } catch (error) {
      // What the calls did (memory written, requests sent) stays visible on the failed session.
      setOutput(context, node, { calls }, PROMPT_WITH_TOOLS_OUTPUT_MAX_BYTES);
      throw error;
    }
    setOutput(context, node, { response: text, calls }, PROMPT_WITH_TOOLS_OUTPUT_MAX_BYTES);
  } else {
    metricsOf(context).count(METRIC.modelCalls);
    text = await model.respond(modelContext(context), prompt);
    setOutput(context, node, { response: text });
  }
  const at = now(context);
  session.messages.push({ role: 'assistant', content: text, node: node.name, at });
  if (node.sendAiMessage) await emitAiMessage(context, node, text, model, at);
  return node.humanInTheLoop ? 'pause' : 'next';
}

/** A scoped call as `{tools.<PromptNode>.calls.<n>}` reads it (n from 0, in the order the model asked). */
interface StoredCall {
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
async function respondWithTools(
  context: RunContext,
  node: PromptNode,
  model: FlowModel,
  prompt: string,
  calls: StoredCall[],
): Promise<string> {
  const tools = (node.tools ?? []).flatMap((name) => scopedTool(context.definition, name) ?? []);
  const rounds: ModelToolRound[] = [];
  for (;;) {
    metricsOf(context).count(METRIC.modelCalls);
    const turn = await model.respondWithTools(modelContext(context), {
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

/** A tool as the model of a prompt node sees it; undefined when the definition has no such tool. */
function scopedTool(definition: AgentDefinition, name: string): ScopedTool | undefined {
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

/**
 * AgentEvents.AI_MESSAGE: the message is stored on the session (and answered to the caller) and, when the agent
 * has a callback URL, POSTed there. A callback that fails does not fail the flow; the session records it.
 */
async function emitAiMessage(context: RunContext, node: PromptNode, content: string, model: FlowModel, at: string) {
  const { session, deps, definition, invocation } = context;
  const message: AiMessage = {
    node: node.name,
    displayName: node.displayName,
    content,
    model: model.name,
    invocationId: invocation.invocationId,
    at,
  };
  let delivered: AiMessage = message;
  if (definition.callbackUrl) {
    try {
      const response = await deps.http.request({
        url: definition.callbackUrl,
        method: 'POST',
        body: {
          event: AgentEvents.AI_MESSAGE,
          agentId: session.agentId,
          environment: session.environment,
          sessionId: session.sessionId,
          ...message,
        },
      });
      const ok = response.status >= 200 && response.status < 300;
      delivered = { ...message, callback: { delivered: ok, status: response.status } };
    } catch (error) {
      delivered = { ...message, callback: { delivered: false, error: describeFailure(error).message } };
    }
  }
  session.aiMessages.push(delivered);
  context.produced.push(delivered);
}

async function runTool(context: RunContext, node: ToolNode): Promise<void> {
  const { session, deps } = context;
  const tool = scopedTool(context.definition, node.toolName);
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
 * built-in's code or the declared HTTP tool through the outbound guard. Its output as a node stores it: a JSON
 * object as it is, anything else as `{ result }`. Fails with an AppError (TOOL_FAILED, TOOL_PARAMETERS_MISSING,
 * TOOL_PARAMETERS_INVALID, TARGET_REFUSED, OUTBOUND_FAILED, KNOWLEDGE_BASE_NOT_FOUND, …).
 */
async function executeTool(context: RunContext, execution: ToolExecution): Promise<Record<string, unknown>> {
  const { session, deps, definition } = context;
  const { toolName, parameters } = execution;
  const tool = scopedTool(definition, toolName);
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
  } else {
    const declared = definition.tools.find((t) => t.name === toolName);
    if (!declared) throw new FlowError('TOOL_NOT_FOUND', `Tool ${toolName} is not registered for this agent`);
    const response = await deps.http.request({
      url: declared.url,
      method: declared.method,
      headers: declared.headers,
      body: parameters,
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
