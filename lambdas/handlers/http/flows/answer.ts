import type { InvocationResult } from '#core/flows/runtime';
import type { HttpResult } from '#shared/http';
import type { InvocationAcceptedResponse, InvocationResponse } from './responses';

/**
 * What a webhook or app event answers: the invocation's result (200) when the run ended, paused or failed within the
 * request's budget; else 202 `{ sessionId, status: "running", aiMessages }`, the run going on in the flow runner
 * (GET …/sessions/… shows it; aiMessages are those produced before the hand-over).
 */
export function invocationAnswer(result: InvocationResult): HttpResult {
  if (result.status === 'running') {
    const accepted = { sessionId: result.sessionId, status: result.status, aiMessages: result.aiMessages };
    return { status: 202, body: accepted satisfies InvocationAcceptedResponse };
  }
  return { body: { ...result } satisfies InvocationResponse };
}
