/**
 * The signatures of status webhooks, and of AI-message callbacks, are Standard Webhooks: the `standardwebhooks`
 * package's own verify accepts them, with either secret during a rotation's overlap, and refuses a changed body.
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { newCallbackSecret, rotatedSecrets, signatureHeaders, signingSecrets } from '#core/flows/callback-signing';
import { webhookHeaders } from '#core/webhooks/signing';

const body = JSON.stringify({ type: 'document.ready', timestamp: '2026-11-29T07:00:00.000Z', data: { a: 1 } });

it('signs a status delivery so that standardwebhooks verifies it, and refuses a changed body', () => {
  const secret = newCallbackSecret();
  const now = new Date();
  const headers = webhookHeaders({ current: { secret, createdAt: now.toISOString() } }, { id: 'msg_1', body, now });
  expect(headers['webhook-timestamp']).toBe(String(Math.floor(now.getTime() / 1000)));
  expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  expect(() => new Webhook(secret).verify(body.replace('1', '2'), headers)).toThrow(WebhookVerificationError);
  expect(() => new Webhook(newCallbackSecret()).verify(body, headers)).toThrow(WebhookVerificationError);
});

it('signs with both secrets for 24 hours after a rotation, then with the new one only', () => {
  const first = newCallbackSecret();
  const rotatedAt = new Date();
  const secrets = rotatedSecrets({ current: { secret: first, createdAt: rotatedAt.toISOString() } }, rotatedAt);
  const during = webhookHeaders(secrets, { id: 'msg_2', body, now: rotatedAt });
  expect(during['webhook-signature'].split(' ')).toHaveLength(2);
  expect(new Webhook(first).verify(body, during)).toBeTruthy();
  expect(new Webhook(secrets.current.secret).verify(body, during)).toBeTruthy();

  const later = new Date(rotatedAt.getTime() + 24 * 3600_000 + 1000);
  expect(signingSecrets(secrets, later)).toEqual([secrets.current.secret]);
});

it('signs AI-message callbacks and agent-code deliveries as Standard Webhooks too', () => {
  const secret = newCallbackSecret();
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = signatureHeaders({ id: 'msg_3', timestamp, body, secrets: [secret] });
  expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
});
