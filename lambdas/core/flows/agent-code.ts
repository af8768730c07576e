/**
 * TRIGGER_EVENT to the agent's code (docs/agent-code.md): when the definition names `agentCode`, each run that starts
 * from a trigger POSTs the event to it, signed as AI-message callbacks are (callback-delivery.ts), before default
 * retrieval. Primary course: the handler answers 2xx, with nothing or with `{ memory?, messages?, stop? }`: memory is
 * merged into the session's (so default retrieval's filters and the prompts read it), messages are added to the
 * conversation, and `stop: true` ends the run `completed` before any node. A handler that fails, answers something
 * else or outlives `timeoutSeconds` is recorded as `invocation_error` (AGENT_CODE_FAILED, AGENT_CODE_TIMEOUT) and the
 * run goes on, unless the agent chose `onFailure: 'stop'`: then the run fails with that code. Every call is recorded as
 * `agent_code_call` (its outcome, time and answer, bounded), a step of the session's trace (trace.ts).
 */
import { createHash } from 'node:crypto';
import { boundedValue, recordBuiltInEventIfValid } from '#core/analytics/track';
import { OutboundError } from '#ports/flows';
import { type TriggerAnswer, type TriggerEventPayload, triggerAnswerSchema } from './agent-events';
import { agentCodeTarget, postSignedCallback } from './callback-delivery';
import { analyticsScope, FlowError, now, PAYLOAD_PART_MAX_BYTES, type RunContext } from './run-context';

/** `webhook-id` of an invocation's TRIGGER_EVENT: the same when a runner starts the invocation over. */
export function triggerEventId(invocationId: string): string {
  return `trg_${createHash('sha256').update(invocationId, 'utf8').digest('base64url').slice(0, 32)}`;
}

/** Calls the trigger handler, when there is one; false when its answer stops the run. */
export async function callTriggerHandler(context: RunContext): Promise<boolean> {
  const code = context.definition.agentCode;
  const target = agentCodeTarget(code);
  if (!code || !target) return true;
  const { session, invocation, trigger, deps } = context;
  const startedMs = deps.clock.now().getTime();
  let answer: TriggerAnswer;
  try {
    const response = await postSignedCallback(deps, {
      organizationId: context.record.organizationId,
      agentId: session.agentId,
      target,
      agentCode: true,
      messageId: triggerEventId(invocation.invocationId),
      timeoutMs: code.timeoutSeconds * 1000,
      payload: {
        event: 'TRIGGER_EVENT',
        agentId: session.agentId,
        environment: session.environment,
        sessionId: session.sessionId,
        invocationId: invocation.invocationId,
        trigger: { name: trigger.name, type: trigger.triggerType },
        body: boundedValue(invocation.body, PAYLOAD_PART_MAX_BYTES),
        ...(invocation.message === undefined ? {} : { message: invocation.message }),
        memory: session.memory,
        at: now(context),
      } satisfies TriggerEventPayload,
    });
    if (response.status < 200 || response.status >= 300) {
      throw new FlowError('AGENT_CODE_FAILED', `The trigger handler answered ${response.status}`);
    }
    const body = response.body === '' || response.body === undefined || response.body === null ? {} : response.body;
    const parsed = triggerAnswerSchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new FlowError(
        'AGENT_CODE_FAILED',
        `The trigger handler's answer is not { memory?, messages?, stop? }: ${issue.path.join('.') || 'body'} ${issue.message}`,
      );
    }
    answer = parsed.data;
  } catch (error) {
    const failure = handlerFailure(error);
    recordCall(context, startedMs, { error: failure });
    if (code.onFailure === 'stop') throw failure;
    // The run goes on without the handler: an invocation_error of its own, keyed apart from the run's.
    record(context, 'invocation_error', { ...errorPart(failure), nodeName: context.trigger.name });
    return true;
  }
  recordCall(context, startedMs, { answer });
  // Spread, as setMemory does: only own properties are copied, and a `__proto__` key never sets memory's prototype.
  if (answer.memory) session.memory = { ...session.memory, ...answer.memory };
  for (const message of answer.messages ?? []) session.messages.push({ ...message, at: now(context) });
  if (answer.stop) {
    session.status = 'completed';
    session.currentNode = null;
    return false;
  }
  return true;
}

function handlerFailure(error: unknown): FlowError {
  if (error instanceof FlowError) return error;
  if (error instanceof OutboundError && error.timedOut) {
    return new FlowError('AGENT_CODE_TIMEOUT', error.message);
  }
  if (error instanceof Error && 'code' in error) {
    return new FlowError('AGENT_CODE_FAILED', `The trigger handler could not be called: ${error.message}`);
  }
  throw error;
}

/**
 * `agent_code_call`: one call of the agent's code, for the trace: its outcome, time, and the answer bounded as a node's
 * output is. (The URL is the definition's own, shown there.)
 */
function recordCall(
  context: RunContext,
  startedMs: number,
  outcome: { readonly answer: TriggerAnswer } | { readonly error: FlowError },
): void {
  const failed = 'error' in outcome;
  record(context, 'agent_code_call', {
    nodeName: context.trigger.name,
    event: 'TRIGGER_EVENT',
    status: failed ? 'failed' : 'succeeded',
    durationMs: Math.max(0, context.deps.clock.now().getTime() - startedMs),
    ...(failed
      ? { error: errorPart(outcome.error) }
      : { answer: boundedValue(outcome.answer, PAYLOAD_PART_MAX_BYTES) }),
  });
}

function errorPart(failure: FlowError): { code: string; message: string } {
  return { code: failure.code, message: failure.message.slice(0, 1000) };
}

/** Records one of the agent code's events, keyed apart from the run's own; a recording that fails loses only it. */
function record(context: RunContext, name: 'agent_code_call' | 'invocation_error', payload: Record<string, unknown>) {
  recordBuiltInEventIfValid(context.deps.recorder, analyticsScope(context.session), name, payload, {
    invocationId: context.invocation.invocationId,
    step: 'agent-code',
  });
}
