/**
 * Running one node of a flow: a prompt node (its model, its scoped tools up to TOOL_CALL_LIMIT calls, its AI
 * message), a tool node (HTTP tools and the built-ins: run-tool.ts; scoped tools: scoped-tools.ts), a browser task; each records its output under
 * `{tools.<Node>…}` and a `node_execution` event.
 */

import { boundedValue, recordBuiltInEvent, truncatedText } from '#core/analytics/track';
import type { FlowModel } from '#ports/flows';
import { METRIC } from '#ports/metrics';
import type { AiMessageEventPayload } from './agent-events';
import { deliverOnce, queueAiMessageAttempt } from './ai-message-retry';
import { BROWSER_TIME_LIMIT_MS } from './browser-task';
import { agentCodeTarget } from './callback-delivery';
import { callbackMessageId } from './callback-signing';
import type { AgentDefinition, BrowserTaskNode, FlowNode, PromptNode } from './definition';
import { mcpToolOf } from './definition-parts';
import { renderText } from './placeholders';
import {
  AgentEvents,
  analyticsScope,
  BROWSER_STEP_TEXT_MAX_CHARS,
  BROWSER_TASK_OUTPUT_MAX_BYTES,
  FlowError,
  type Located,
  locate,
  metricsOf,
  modelContext,
  now,
  PROMPT_WITH_TOOLS_OUTPUT_MAX_BYTES,
  placeholderScope,
  type RunContext,
  recordNode,
  setOutput,
} from './run-context';
import { runTool } from './run-tool';
import { respondWithTools, type StoredCall } from './scoped-tools';
import type { AiMessage } from './session';
import { browserTaskUnits, spendFlowWork } from './work-budget';

/**
 * The longest a node may take by its own bounds: a tool node its declared HTTP tool's (or MCP server's)
 * `timeoutSeconds`, a prompt node the longest `timeoutSeconds` of the tools its model may call, a browser task its time limit
 * (BROWSER_TIME_LIMIT_MS); 0 for the rest. A model call's own timeout is not counted (docs/flows.md, "Long runs").
 */
export function nodeBoundMs(definition: AgentDefinition, node: FlowNode): number {
  const toolMs = (name: string) =>
    (definition.tools.find((t) => t.name === name)?.timeoutSeconds ??
      mcpToolOf(definition, name)?.server.timeoutSeconds ??
      0) * 1000;
  switch (node.type) {
    case 'tool':
      return toolMs(node.toolName);
    case 'promptNode':
      return Math.max(0, ...(node.tools ?? []).map(toolMs));
    case 'browserTask':
      return BROWSER_TIME_LIMIT_MS;
    default:
      return 0;
  }
}

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
 * failed) fails the node with that code, its output and its steps kept. Its seconds are charged to the flow work
 * budget when it ends, however it ended (work-budget.ts).
 */
async function runBrowserTaskNode(context: RunContext, node: BrowserTaskNode): Promise<void> {
  const scope = placeholderScope(context, node.name);
  const prompt = renderText(node.prompt, scope);
  const url = node.url === undefined ? undefined : renderText(node.url, scope);
  recordNode(context, node, { prompt, ...(url === undefined ? {} : { url }), model: node.model ?? null });
  const { system, messages } = modelContext(context);
  const startedMs = context.deps.clock.now().getTime();
  const result = await context.deps.browser
    .run({
      prompt,
      url,
      model: node.model,
      // The conversation's text only: its images would not fit the BrowserTask function's request (6 MB).
      context: {
        ...(system === undefined ? {} : { system }),
        // An earlier tool step is the browser model's user text: it takes user and assistant turns only.
        messages: messages.map(({ role, content }) => ({ role: role === 'assistant' ? role : 'user', content })),
      },
    })
    .catch(async (error: unknown) => {
      // The seconds were used all the same; the node fails with the task's own error.
      await chargeBrowserTime(context, startedMs);
      throw error;
    });
  await chargeBrowserTime(context, startedMs);
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

/**
 * A browser task's run time, charged when it ended: never refused (what ran, ran), it may leave the budget over its
 * window, and then the next node is refused. A charge the counters cannot take is lost rather than failing (or, in a
 * runner, running again) a task that has already run; the next node's payment meets the same counters.
 */
async function chargeBrowserTime(context: RunContext, startedMs: number): Promise<void> {
  const { deps } = context;
  if (!deps.work) return;
  const nowMs = deps.clock.now().getTime();
  const units = browserTaskUnits(deps.work.settings, nowMs - startedMs);
  if (units === 0) return;
  await spendFlowWork(deps.work, context.session.organizationId, units, nowMs).catch(() => undefined);
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
    text = await model.respond(modelContext(context, node.context), prompt);
    setOutput(context, node, { response: text });
  }
  const at = now(context);
  session.messages.push({ role: 'assistant', content: text, node: node.name, at });
  if (node.sendAiMessage) await emitAiMessage(context, node, text, model, at);
  return node.humanInTheLoop ? 'pause' : 'next';
}

/**
 * AgentEvents.AI_MESSAGE: the message is stored on the session (and answered to the caller) and, when the agent
 * has a callback URL, POSTed there signed with the agent's secrets (callback-delivery.ts). A callback that fails does
 * not fail the flow; the session records it.
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
  // The callback URL, else the agent's code (docs/agent-code.md).
  const target = definition.callbackUrl ? { url: definition.callbackUrl } : agentCodeTarget(definition.agentCode);
  if (target) {
    const delivery = {
      organizationId: context.record.organizationId,
      agentId: session.agentId,
      environment: session.environment,
      sessionId: session.sessionId,
      invocationId: invocation.invocationId,
      node: node.name,
      messageId: callbackMessageId(invocation.invocationId, node.name, context.step),
      target,
      agentCode: !definition.callbackUrl,
      payload: {
        event: AgentEvents.AI_MESSAGE,
        agentId: session.agentId,
        environment: session.environment,
        sessionId: session.sessionId,
        ...message,
      } satisfies AiMessageEventPayload,
    };
    const outcome = await deliverOnce(deps, delivery);
    // A failed delivery is sent again by the flow runner (ai-message-retry.ts); the run does not wait for it.
    const retrying = !outcome.delivered && (await queueAiMessageAttempt(deps, delivery, 2));
    delivered = {
      ...message,
      callback: {
        delivered: outcome.delivered,
        ...(outcome.status === undefined ? {} : { status: outcome.status }),
        ...(outcome.delivered || outcome.error === undefined ? {} : { error: outcome.error }),
        ...(retrying ? { retrying: true as const } : {}),
      },
    };
  }
  session.aiMessages.push(delivered);
  context.produced.push(delivered);
}
