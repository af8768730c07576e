/**
 * Ports of analytics: the sink that records events (written by the flow runtime and agent code through
 * lambdas/core/analytics/track.ts) and the reader behind POST /api/v1/events/agent.
 */
import type { AnalyticsEventRecord, EventPosition, NewAnalyticsEvent } from '#core/analytics/event';
import type { Environment } from '#core/knowledge/fields';

export interface WriteOutcome {
  /** Events stored by this call. */
  readonly written: number;
  /** Events whose key was already stored (a retried write) or repeated in the batch: left as stored, never twice. */
  readonly alreadyStored: number;
}

export interface AnalyticsSink {
  /**
   * Stores a batch. Each event gets the next `id` of its agent and `created_at` = the time of this write, so ids and
   * times rise together. Idempotent per (agentId, eventKey): writing a batch again stores nothing twice. Resolves
   * only when every event is stored; rejects otherwise (the caller keeps the batch and retries it).
   */
  write(events: readonly NewAnalyticsEvent[]): Promise<WriteOutcome>;
}

export interface AnalyticsEventQuery {
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId?: string;
  readonly eventName?: string;
  /** Inclusive bounds on created_at, epoch milliseconds. */
  readonly fromMs?: number;
  readonly toMs?: number;
  /** Only records strictly older than this position (the cursor of a previous page). */
  readonly before?: EventPosition;
  /** Records to skip, after `before`. */
  readonly offset: number;
  readonly limit: number;
  /** Records whose retention ended before this instant are not returned, even before TTL has removed them. */
  readonly now: Date;
}

export interface AnalyticsEventPage {
  /** Newest first: created_at descending, which is `id` descending. */
  readonly events: readonly AnalyticsEventRecord[];
  /** Position of the last record of the page when more records follow it; undefined at the end. */
  readonly next?: EventPosition;
}

export interface AnalyticsEventReader {
  query(query: AnalyticsEventQuery): Promise<AnalyticsEventPage>;
}

/** Both sides, as the DynamoDB adapter implements them. */
export type AnalyticsStore = AnalyticsSink & AnalyticsEventReader;
