/**
 * Sending one signed AI-message callback (docs/flows.md, "Signed callbacks"): run-nodes.ts calls it for each AI
 * message of a definition with a `callbackUrl`.
 *
 * Primary course:
 * 1. Read the agent's callback secrets; an agent that has none yet (made before callbacks were signed) gets one here,
 *    stored only if it still has none, so a rotation or another first callback at the same time keeps its own.
 * 2. Serialize the payload once, sign those bytes with every secret in force (callback-signing.ts).
 * 3. POST exactly those bytes with the three `webhook-*` headers, or, to agent code deployed as a Lambda function,
 *    invoke it with them as a function URL event (ports/flows.ts, AgentCodeFunctions).
 * Nothing is sent unsigned: without a secret (the agent is gone) the callback fails before any request.
 */

import type { AgentCodeFunctions, CallbackTarget, OutboundHttp, OutboundResponse } from '#ports/flows';
import type { Clock } from '#ports/services';
import type { AgentStore, CallbackSecrets } from '#ports/stores';
import { rotatedSecrets, signatureHeaders, signingSecrets } from './callback-signing';
import { FlowError } from './run-context';

export interface CallbackDeps {
  readonly agents: Pick<AgentStore, 'get' | 'replaceCallbackSecrets'>;
  readonly http: OutboundHttp;
  /** Where a definition's `agentCode.functionArn` is invoked; absent: a deployment that invokes none. */
  readonly agentCodeFunctions?: AgentCodeFunctions;
  readonly clock: Clock;
}

/** The target of the agent's code a definition names (`agentCode`), or undefined when it names none. */
export function agentCodeTarget(code: { url?: string; functionArn?: string } | undefined): CallbackTarget | undefined {
  if (code?.url !== undefined) return { url: code.url };
  if (code?.functionArn !== undefined) return { functionArn: code.functionArn };
  return undefined;
}

export interface SignedCallback {
  readonly organizationId: string;
  readonly agentId: string;
  readonly target: CallbackTarget;
  /** The target is the agent's code (the definition's `agentCode`), not a `callbackUrl`. */
  readonly agentCode?: boolean;
  /** `webhook-id`: callback-signing.ts, callbackMessageId. */
  readonly messageId: string;
  readonly payload: Readonly<Record<string, unknown>>;
  /** For the whole request (the adapter's default otherwise). */
  readonly timeoutMs?: number;
}

/** How long an AI message to a Lambda function may take (an HTTP callback has the adapter's own default). */
const DEFAULT_FUNCTION_TIMEOUT_MS = 10_000;

export async function postSignedCallback(deps: CallbackDeps, callback: SignedCallback): Promise<OutboundResponse> {
  const secrets = await callbackSecretsOf(deps, callback.organizationId, callback.agentId);
  const now = deps.clock.now();
  const body = JSON.stringify(callback.payload);
  const headers = signatureHeaders({
    id: callback.messageId,
    timestamp: Math.floor(now.getTime() / 1000),
    body,
    secrets: signingSecrets(secrets, now),
  });
  const { target } = callback;
  const functionArn =
    'functionArn' in target
      ? target.functionArn
      : callback.agentCode && deps.agentCodeFunctions?.servesEveryTarget
        ? target.url
        : undefined;
  if (functionArn !== undefined) {
    if (!deps.agentCodeFunctions) {
      throw new FlowError('AGENT_CODE_FAILED', 'This deployment invokes no Lambda function as agent code');
    }
    return deps.agentCodeFunctions.invoke({
      organizationId: callback.organizationId,
      agentId: callback.agentId,
      functionArn,
      headers: { 'content-type': 'application/json', ...headers },
      body,
      timeoutMs: callback.timeoutMs ?? DEFAULT_FUNCTION_TIMEOUT_MS,
    });
  }
  return deps.http.request({
    url: (target as { url: string }).url,
    method: 'POST',
    headers,
    serializedBody: body,
    ...(callback.timeoutMs ? { timeoutMs: callback.timeoutMs } : {}),
  });
}

/** The agent's secrets; made and stored at its first callback when it has none (two tries: one race is enough). */
async function callbackSecretsOf(
  deps: CallbackDeps,
  organizationId: string,
  agentId: string,
): Promise<CallbackSecrets> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const agent = await deps.agents.get(organizationId, agentId);
    if (!agent || agent.status === 'deleting') break;
    if (agent.callbackSecrets) return agent.callbackSecrets;
    const made = rotatedSecrets(undefined, deps.clock.now());
    if (await deps.agents.replaceCallbackSecrets(organizationId, agentId, made, null)) return made;
  }
  throw new FlowError('CALLBACK_NOT_SIGNED', `Agent ${agentId} has no callback secret: the callback was not sent`);
}
