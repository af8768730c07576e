/**
 * Standard Webhooks (https://www.standardwebhooks.com) signatures of AI-message callbacks: `webhook-id`,
 * `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one per secret
 * in force, space-separated), keyed by the agent's secrets (`whsec_` + base64 of 32 random bytes). Pure: the secrets
 * come from the agent's record (callback-delivery.ts reads them, core/dashboard/rotate-callback-secret.ts rotates).
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { CallbackSecrets } from '#ports/stores';

export const CALLBACK_SECRET_PREFIX = 'whsec_';

/** How long the secret a rotation replaced goes on signing beside the new one: receivers switch without a gap. */
export const PREVIOUS_SECRET_VALID_MS = 24 * 60 * 60 * 1000;

export function newCallbackSecret(): string {
  return `${CALLBACK_SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/**
 * The secrets after a rotation at `now`: `secret` is current, the one it replaces signs too for
 * PREVIOUS_SECRET_VALID_MS. An older previous one (a second rotation within the overlap) stops signing at once.
 */
export function rotatedSecrets(
  secrets: CallbackSecrets | undefined,
  now: Date,
  secret = newCallbackSecret(),
): CallbackSecrets {
  return {
    current: { secret, createdAt: now.toISOString() },
    ...(secrets
      ? {
          previous: {
            secret: secrets.current.secret,
            validUntil: new Date(now.getTime() + PREVIOUS_SECRET_VALID_MS).toISOString(),
          },
        }
      : {}),
  };
}

/** The secrets that sign at `now`: the current one first, then the previous one until its `validUntil`. */
export function signingSecrets(secrets: CallbackSecrets, now: Date): string[] {
  const { current, previous } = secrets;
  const previousInForce = previous !== undefined && now.getTime() < Date.parse(previous.validUntil);
  return previousInForce ? [current.secret, previous.secret] : [current.secret];
}

/**
 * `webhook-id` of the AI message a node run of an invocation sends: the same for every attempt of that message (a
 * runner that re-runs the node in flight after a crash sends it again with the same id), so a receiver can drop
 * repeats. `step` is the node run's number in its invocation (RunContext.step), which a re-run keeps.
 */
export function callbackMessageId(invocationId: string, node: string, step: number): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([invocationId, node, step]), 'utf8')
    .digest('base64url');
  return `msg_${digest.slice(0, 32)}`;
}

/** `v1,<base64 HMAC-SHA256>` of `<id>.<timestamp>.<body>` with the secret's bytes (the base64 after `whsec_`). */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(
    secret.startsWith(CALLBACK_SECRET_PREFIX) ? secret.slice(CALLBACK_SECRET_PREFIX.length) : secret,
    'base64',
  );
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64')}`;
}

/** The three headers of a signed message; `timestamp` in integer Unix seconds, `body` the exact text sent. */
export function signatureHeaders(message: {
  readonly id: string;
  readonly timestamp: number;
  readonly body: string;
  readonly secrets: readonly string[];
}): Record<string, string> {
  const { id, timestamp, body, secrets } = message;
  if (secrets.length === 0) throw new Error('a callback is never sent unsigned: no secret was given');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => signature(secret, id, timestamp, body)).join(' '),
  };
}
