/**
 * Standard Webhooks signatures of status deliveries, made by the `standardwebhooks` package itself (the reference
 * implementation receivers verify with): one `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` per secret in
 * force, space-separated. The secrets rotate as the agents' callback secrets do (core/flows/callback-signing.ts:
 * the replaced one signs beside the new one for 24 hours).
 */
import { Webhook } from 'standardwebhooks';
import { signingSecrets } from '#core/flows/callback-signing';
import type { WebhookSecrets } from './endpoint';

/** The three headers of one delivery attempt sent at `now`, over `body` exactly as it is sent. */
export function webhookHeaders(
  secrets: WebhookSecrets,
  message: { readonly id: string; readonly body: string; readonly now: Date },
): Record<string, string> {
  const { id, body, now } = message;
  const signatures = signingSecrets(secrets, now).map((secret) => new Webhook(secret).sign(id, now, body));
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
