/**
 * How the Bedrock clients retry. All three use the SDK's `adaptive` retry mode: the standard mode's exponential
 * backoff with full jitter (with the @smithy/core of this lock file, a throttling error waits a random part of 1 s,
 * 2 s, 4 s, 8 s, 16 s, then 20 s; other transient errors start at 50 ms) plus a client-side rate limiter that, once
 * Bedrock throttles, slows this process's sends to the rate Bedrock accepts and speeds up again as calls succeed
 * (CUBIC), instead of every retry hitting the quota at once. A client stops retrying when its retry quota is spent
 * (500 tokens, 5 a throttled retry, refilled by successes): about 100 throttled retries in a row in one process. The
 * number of attempts differs by who waits (docs/retrieval-aws.md, "Quotas"):
 *
 * - The agent API (ingest, delete, get, list of knowledge base documents) is called only by the processing worker,
 *   whose function runs up to 360 s and whose message is redelivered after that: 8 attempts, so a throttled call
 *   waits up to 1 + 2 + 4 + 8 + 16 + 20 + 20 = 71 s (about half that on average) before it fails. A bulk import that
 *   meets the ingestion quota is slowed down, not failed: three such failures in a row of one message are needed before
 *   it goes to the dead-letter queue, where the watchdog picks the document up again.
 * - Retrieve answers an API request within API Gateway's 29 s, or a flow step: 4 attempts (up to 1 + 2 + 4 = 7 s of
 *   backoff); past that the caller gets 503 SERVICE_BUSY with Retry-After (shared/http.ts), which is the honest
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
