/**
 * How the Bedrock clients retry. All three use the SDK's `adaptive` retry mode: the standard mode's exponential
 * backoff with full jitter (throttling errors wait a random part of 0.5 s, 1 s, 2 s, 4 s … up to 20 s; other transient
 * errors start at 0.1 s) plus a client-side rate limiter that, once Bedrock throttles, slows this process's sends to
 * the rate Bedrock accepts and speeds up again as calls succeed (CUBIC), instead of every retry hitting the quota at
 * once. The number of attempts differs by who waits (docs/retrieval-aws.md, "Quotas"):
 *
 * - The agent API (ingest, delete, get, list of knowledge base documents) is called only by the processing worker,
 *   whose function runs up to 360 s and whose message is redelivered after that: 8 attempts, so a throttled call
 *   waits up to 0.5 + 1 + 2 + 4 + 8 + 16 + 20 ≈ 51 s (about half that on average) before it fails. A bulk import that
 *   meets the ingestion quota is slowed down, not failed: three such failures in a row of one message are needed before
 *   it goes to the dead-letter queue, where the watchdog picks the document up again.
 * - Retrieve answers an API request within API Gateway's 29 s, or a flow step: 4 attempts (up to 0.5 + 1 + 2 = 3.5 s
 *   of backoff); past that the caller gets 503 SERVICE_BUSY with Retry-After (shared/http.ts), which is the honest
 *   answer when the account's 20 Retrieve calls a second are used up.
 * - Converse and InvokeModel take seconds per answer: 3 attempts, the SDK's default, now adaptive.
 */

export type RetryMode = 'standard' | 'adaptive' | 'legacy';

export interface RetryConfig {
  readonly retryMode: RetryMode;
  readonly maxAttempts: number;
}

export const BEDROCK_AGENT_RETRY: RetryConfig = { retryMode: 'adaptive', maxAttempts: 8 };

export const BEDROCK_AGENT_RUNTIME_RETRY: RetryConfig = { retryMode: 'adaptive', maxAttempts: 4 };

export const BEDROCK_RUNTIME_RETRY: RetryConfig = { retryMode: 'adaptive', maxAttempts: 3 };
