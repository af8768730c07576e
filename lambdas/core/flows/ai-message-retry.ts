/**
 * An AI message whose delivery failed is sent again (docs/agent-code.md, "The AI message"). Primary course:
 * 1. During the run (run-nodes.ts), a delivery that does not get a 2xx (an error answer, no answer in time, a target
 *    that cannot be reached) goes to the flow runner's queue as a `deliver-ai-message`, delayed by the first of
 *    AI_MESSAGE_RETRY_DELAYS_SECONDS; the session's message says `retrying: true`.
 * 2. The flow runner sends it again (deliverAiMessageAgain): the same `webhook-id`, target and body, signed anew (a
 *    fresh timestamp). Each attempt is recorded as the built-in event `ai_message_delivery`, keyed by the message and
 *    the attempt, so a redelivered queue message records it once.
 * 3. A failed attempt with attempts left goes back to the queue, delayed by the next step; the last one failed is an
 *    `invocation_error` with the target's code: AGENT_CODE_FAILED or AGENT_CODE_TIMEOUT for the agent's code,
 *    CALLBACK_FAILED for a callbackUrl.
 * A message whose JSON is over AI_MESSAGE_RETRY_MAX_BYTES is not queued (an SQS message holds 256 KB).
 */
import { type AnalyticsRecorder, recordBuiltInEventIfValid } from '#core/analytics/track';
import { type AiMessageDeliveryMessage, type FlowRunQueue, OutboundError } from '#ports/flows';
import { type CallbackDeps, postSignedCallback } from './callback-delivery';
import { describeFailure } from './run-context';

/** The waits before the 2nd, 3rd, … attempt: six attempts over about 42 minutes (SQS delays at most 900 s). */
export const AI_MESSAGE_RETRY_DELAYS_SECONDS: readonly number[] = [30, 120, 600, 900, 900];

/** The largest message (its payload as JSON) that is queued for another attempt. */
export const AI_MESSAGE_RETRY_MAX_BYTES = 200 * 1024;

export interface AiMessageRetryDeps extends CallbackDeps {
  readonly runs?: FlowRunQueue;
  readonly recorder: AnalyticsRecorder;
  /** The waits between attempts (default AI_MESSAGE_RETRY_DELAYS_SECONDS); its length + 1 is the number of attempts. */
  readonly aiMessageRetryDelays?: readonly number[];
}

/** What one delivery attempt came to: delivered (a 2xx), or the failure, with the code it is recorded under. */
export type DeliveryOutcome =
  | { readonly delivered: true; readonly status: number }
  | { readonly delivered: false; readonly status?: number; readonly error?: string; readonly code: string };

/** Sends a signed AI message once; never throws for the target's failure (only for the service's own). */
export async function deliverOnce(
  deps: CallbackDeps,
  message: Pick<
    AiMessageDeliveryMessage,
    'organizationId' | 'agentId' | 'target' | 'messageId' | 'payload' | 'agentCode'
  >,
): Promise<DeliveryOutcome> {
  const failedCode = message.agentCode ? 'AGENT_CODE_FAILED' : 'CALLBACK_FAILED';
  try {
    const response = await postSignedCallback(deps, message);
    if (response.status >= 200 && response.status < 300) return { delivered: true, status: response.status };
    return { delivered: false, status: response.status, code: failedCode };
  } catch (error) {
    const failure = describeFailure(error);
    const timedOut = error instanceof OutboundError && error.timedOut;
    const code = message.agentCode && timedOut ? 'AGENT_CODE_TIMEOUT' : failedCode;
    return { delivered: false, error: failure.message, code };
  }
}

/**
 * Queues attempt `attempt` of a message whose previous attempt failed; false when there is none left, no queue, or
 * the message is too large to queue.
 */
export async function queueAiMessageAttempt(
  deps: Pick<AiMessageRetryDeps, 'runs' | 'aiMessageRetryDelays'>,
  message: Omit<AiMessageDeliveryMessage, 'kind' | 'attempt'>,
  attempt: number,
): Promise<boolean> {
  const delays = deps.aiMessageRetryDelays ?? AI_MESSAGE_RETRY_DELAYS_SECONDS;
  const delaySeconds = delays[attempt - 2];
  if (!deps.runs || delaySeconds === undefined) return false;
  if (Buffer.byteLength(JSON.stringify(message.payload), 'utf8') > AI_MESSAGE_RETRY_MAX_BYTES) return false;
  await deps.runs.send({ kind: 'deliver-ai-message', ...message, attempt }, { delaySeconds });
  return true;
}

/** The flow runner's part: one more attempt, recorded; the next queued or, after the last, the failure recorded. */
export async function deliverAiMessageAgain(
  deps: AiMessageRetryDeps,
  message: AiMessageDeliveryMessage,
): Promise<DeliveryOutcome & { readonly queued: boolean }> {
  const outcome = await deliverOnce(deps, message);
  record(deps, message, 'ai_message_delivery', {
    nodeName: message.node,
    messageId: message.messageId,
    attempt: message.attempt,
    delivered: outcome.delivered,
    ...(outcome.status === undefined ? {} : { status: outcome.status }),
    ...(outcome.delivered || outcome.error === undefined ? {} : { error: outcome.error.slice(0, 1000) }),
  });
  let queued = false;
  if (!outcome.delivered) {
    const { kind: _kind, attempt, ...rest } = message;
    queued = await queueAiMessageAttempt(deps, rest, attempt + 1);
    if (!queued) {
      record(deps, message, 'invocation_error', {
        code: outcome.code,
        message: `The AI message of ${message.node} was not delivered after ${attempt} attempts (${
          outcome.status === undefined ? (outcome.error ?? 'no answer') : `the last answered ${outcome.status}`
        })`.slice(0, 1000),
        nodeName: message.node,
      });
    }
  }
  await deps.recorder.flush();
  return { ...outcome, queued };
}

function record(
  deps: AiMessageRetryDeps,
  message: AiMessageDeliveryMessage,
  name: 'ai_message_delivery' | 'invocation_error',
  payload: Record<string, unknown>,
): void {
  const scope = { agentId: message.agentId, environment: message.environment, sessionId: message.sessionId };
  recordBuiltInEventIfValid(deps.recorder, scope, name, payload, {
    invocationId: message.invocationId,
    step: `ai-message:${message.messageId}:${message.attempt}`,
  });
}
