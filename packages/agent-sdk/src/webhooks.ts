/**
 * Verifying what the platform sends an agent's code: Standard Webhooks signatures (https://www.standardwebhooks.com),
 * `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`,
 * one per secret in force, space-separated), keyed by the agent's callback secret (`whsec_` + base64).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** How far a message's timestamp may be from now before it is taken for a replay. */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

export class WebhookVerificationError extends Error {
  constructor(
    message: string,
    /** `missingHeaders`, `timestamp`, `signature`. */
    readonly reason: 'missingHeaders' | 'timestamp' | 'signature',
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/** Header values as Node.js (`IncomingHttpHeaders`), a Lambda event or a `Headers` object give them. */
export type HeaderSource = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(' ') : value;
}

/**
 * Throws WebhookVerificationError unless one `v1,` signature of the message is the HMAC of its id, timestamp and
 * `rawBody` (exactly as received, before any JSON.parse) with one of `secrets` (several while you switch secrets
 * after a rotation), and its timestamp is within `toleranceSeconds` of `now`. Returns the message id, for dropping
 * repeats (a message sent again after a crash keeps its id).
 */
export function verifyWebhook(
  secrets: string | readonly string[],
  headers: HeaderSource,
  rawBody: string | Buffer,
  options: { toleranceSeconds?: number; now?: Date } = {},
): string {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError(
      'webhook-id, webhook-timestamp and webhook-signature are required',
      'missingHeaders',
    );
  }
  const nowSeconds = (options.now ?? new Date()).getTime() / 1000;
  if (!/^\d{1,12}$/.test(timestamp))
    throw new WebhookVerificationError('webhook-timestamp is not a number', 'timestamp');
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) {
    throw new WebhookVerificationError('webhook-timestamp is too far from now: a replayed message?', 'timestamp');
  }
  const body = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
  const given = signatures
    .split(' ')
    .map((entry) => entry.split(','))
    .filter(([version, value]) => version === 'v1' && value)
    .map(([, value]) => Buffer.from(value, 'base64'));
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
    const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest();
    if (given.some((signature) => signature.length === expected.length && timingSafeEqual(signature, expected))) {
      return id;
    }
  }
  throw new WebhookVerificationError('no signature of the message verifies with the secrets given', 'signature');
}
