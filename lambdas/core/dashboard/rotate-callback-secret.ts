/**
 * POST /dashboard/agents/:agentId/callback-secret: a new secret signs the agent's AI-message callbacks
 * (docs/flows.md, "Signed callbacks"), and this answer is the only place it is ever shown.
 *
 * Primary course:
 * 1. The caller is an owner, or a token of the organization (a member: 403), and may use the agent (else 404, as
 *    for an agent of another organization).
 * 2. A new secret becomes current; the one it replaces signs beside it for 24 hours (PREVIOUS_SECRET_VALID_MS), so
 *    a receiver switches without losing a message.
 * 3. It is stored only over the secret just read: a rotation or a first callback in between makes it read again.
 * 4. The answer is `{ secret, createdAt, previousSecretValidUntil }` (null: there was no previous secret).
 */
import { requireOwner } from '#core/auth/people';
import { ConflictError } from '#core/errors';
import { rotatedSecrets } from '#core/flows/callback-signing';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import type { Clock } from '#ports/services';
import type { AgentStore } from '#ports/stores';

/** Reads and conditional writes one rotation makes at most before it answers 409. */
const ATTEMPTS = 3;

export async function rotateCallbackSecret(
  deps: { readonly agents: Pick<AgentStore, 'get' | 'replaceCallbackSecrets'>; readonly clock: Clock },
  caller: Caller,
  agentId: string,
) {
  requireOwner(caller, "rotate an agent's callback secret");
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const agent = await requireAgent(deps, caller, agentId);
    const secrets = rotatedSecrets(agent.callbackSecrets, deps.clock.now());
    const expected = agent.callbackSecrets?.current.secret ?? null;
    if (await deps.agents.replaceCallbackSecrets(caller.organizationId, agentId, secrets, expected)) {
      return {
        secret: secrets.current.secret,
        createdAt: secrets.current.createdAt,
        previousSecretValidUntil: secrets.previous?.validUntil ?? null,
      };
    }
  }
  throw new ConflictError(
    'CALLBACK_SECRET_CONFLICT',
    `The callback secret of agent ${agentId} changed during each of ${ATTEMPTS} tries: send the request again`,
  );
}
