/**
 * Standard Webhooks signatures of AI-message callbacks (core/flows/callback-signing.ts): the specification's
 * published vector, a signature computed here independently with node:crypto over the exact bytes, the two
 * signatures of the 24-hour overlap after a rotation and the one after it, and a `webhook-id` stable per message.
 */
import { createHmac } from 'node:crypto';
import {
  callbackMessageId,
  newCallbackSecret,
  PREVIOUS_SECRET_VALID_MS,
  rotatedSecrets,
  signature,
  signatureHeaders,
  signingSecrets,
} from '#core/flows/callback-signing';

/** What a receiver computes: HMAC-SHA256 keyed by the bytes after `whsec_`, over `<id>.<timestamp>.<body>`. */
function expectedSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key)
    .update(Buffer.from(`${id}.${timestamp}.${body}`, 'utf8'))
    .digest('base64')}`;
}

const AT = new Date('2026-03-01T10:00:00.000Z');

describe('signature', () => {
  it("reproduces the Standard Webhooks specification's published test vector", () => {
    expect(
      signature(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('signs the exact bytes of a body with characters outside ASCII, as a receiver computes it', () => {
    const secret = newCallbackSecret();
    const body = JSON.stringify({ event: 'AgentEvents.AI_MESSAGE', content: 'Grüße — 你好 🚀' });
    const headers = signatureHeaders({ id: 'msg_abc', timestamp: 1772359200, body, secrets: [secret] });

    expect(headers).toEqual({
      'webhook-id': 'msg_abc',
      'webhook-timestamp': '1772359200',
      'webhook-signature': expectedSignature(secret, 'msg_abc', 1772359200, body),
    });
    // One byte of the body changed: another signature.
    expect(expectedSignature(secret, 'msg_abc', 1772359200, body.replace('Grüße', 'Grüsse'))).not.toBe(
      headers['webhook-signature'],
    );
  });

  it('refuses to sign with no secret: a callback is never sent unsigned', () => {
    expect(() => signatureHeaders({ id: 'msg_x', timestamp: 1, body: '{}', secrets: [] })).toThrow(/unsigned/);
  });
});

describe('secrets', () => {
  it('makes whsec_ secrets of 32 random bytes, each different', () => {
    const secrets = new Set(Array.from({ length: 20 }, () => newCallbackSecret()));
    expect(secrets.size).toBe(20);
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    }
  });

  it('signs with the new and the previous secret (new first) for 24 hours after a rotation, then with the new alone', () => {
    const first = rotatedSecrets(undefined, AT, 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=');
    expect(first).toEqual({
      current: { secret: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', createdAt: AT.toISOString() },
    });
    const rotatedAt = new Date(AT.getTime() + 3_600_000);
    const second = rotatedSecrets(first, rotatedAt, 'whsec_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=');
    const validUntil = new Date(rotatedAt.getTime() + PREVIOUS_SECRET_VALID_MS);
    expect(second.previous).toEqual({ secret: first.current.secret, validUntil: validUntil.toISOString() });

    const body = '{"content":"Hello"}';
    const during = signatureHeaders({
      id: 'msg_1',
      timestamp: 1,
      body,
      secrets: signingSecrets(second, new Date(validUntil.getTime() - 1)),
    });
    expect(during['webhook-signature']).toBe(
      `${expectedSignature(second.current.secret, 'msg_1', 1, body)} ${expectedSignature(first.current.secret, 'msg_1', 1, body)}`,
    );
    expect(signingSecrets(second, validUntil)).toEqual([second.current.secret]);
    expect(signingSecrets(first, new Date(AT.getTime() + 365 * PREVIOUS_SECRET_VALID_MS))).toEqual([
      first.current.secret,
    ]);
  });

  it('drops the oldest secret at once when a second rotation comes within the overlap', () => {
    const first = rotatedSecrets(undefined, AT);
    const second = rotatedSecrets(first, new Date(AT.getTime() + 1000));
    const third = rotatedSecrets(second, new Date(AT.getTime() + 2000));
    expect(signingSecrets(third, new Date(AT.getTime() + 3000))).toEqual([third.current.secret, second.current.secret]);
  });
});

describe('callbackMessageId', () => {
  it('is the same for the same message (invocation, node, step) and differs for any other', () => {
    const id = callbackMessageId('inv-1', 'Greet', 2);
    expect(id).toMatch(/^msg_[A-Za-z0-9_-]{32}$/);
    expect(callbackMessageId('inv-1', 'Greet', 2)).toBe(id);
    const others = [
      callbackMessageId('inv-2', 'Greet', 2),
      callbackMessageId('inv-1', 'Other', 2),
      callbackMessageId('inv-1', 'Greet', 3),
    ];
    expect(new Set([id, ...others]).size).toBe(4);
  });
});
