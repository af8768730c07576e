/**
 * POST /api/v1/events/agent. Primary course: the agent must be the caller's organization's (else the 404 of an
 * unknown agent); the filters become one key range of one index (lambdas/adapters/store/dynamodb/analytics-store.ts);
 * the page starts after the cursor (when given), skips `offset` records, and holds at most `limit`, newest first,
 * and at most PAGE_MAX_BYTES of them: a page that would pass it ends before, its `nextToken` at its last record.
 */

import type { Environment } from '#core/knowledge/fields';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import type { AnalyticsEventReader } from '#ports/analytics';
import type { Clock } from '#ports/services';
import type { AgentStore } from '#ports/stores';
import { decodeCursor, encodeCursor, type QueryIdentity } from './cursor';
import { dateRange } from './dates';
import type { AnalyticsEventRecord } from './event';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;
export const DEFAULT_ENVIRONMENT: Environment = 'production';

/**
 * What a page's records may weigh at most, counted as the function's answer carries them (eventBytes): a Lambda
 * function answers at most 6 MB, and 1,000 records of up to 32 KiB of payload each could be 32 MiB. 4 MiB leaves the
 * answer's envelope, headers and other fields far below the 6 MB.
 */
export const PAGE_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The bytes a record adds to the function's answer: its JSON text as it stands in the body, which is itself a JSON
 * string in the Lambda proxy answer (every quote and backslash escaped once more), and the comma after it.
 */
export function eventBytes(record: AnalyticsEventRecord): number {
  return Buffer.byteLength(JSON.stringify(JSON.stringify(record))) - 2 + 1;
}

/** The records up to PAGE_MAX_BYTES (always the first: one record weighs far less), and whether any was left out. */
function withinBudget(events: readonly AnalyticsEventRecord[]): { kept: AnalyticsEventRecord[]; cut: boolean } {
  let bytes = 0;
  for (let i = 0; i < events.length; i++) {
    bytes += eventBytes(events[i]);
    if (bytes > PAGE_MAX_BYTES && i > 0) return { kept: events.slice(0, i), cut: true };
  }
  return { kept: [...events], cut: false };
}

export interface QueryEventsRequest {
  readonly agentId: string;
  readonly filters: {
    readonly environment: Environment;
    readonly sessionId?: string;
    readonly eventName?: string;
    /** ISO 8601, already checked (lambdas/core/analytics/dates.ts). */
    readonly startDate?: string;
    readonly endDate?: string;
  };
  readonly limit: number;
  readonly offset: number;
  readonly nextToken?: string | null;
}

export interface QueryEventsDeps {
  readonly agents: Pick<AgentStore, 'get'>;
  readonly analytics: AnalyticsEventReader;
  readonly clock: Clock;
}

export interface QueryEventsResult {
  readonly data: readonly AnalyticsEventRecord[];
  readonly count: number;
  readonly limit: number;
  readonly offset: number;
  /** Pass it back as `nextToken` for the records after this page; null when this page is the last. */
  readonly nextToken: string | null;
}

export async function queryEvents(
  deps: QueryEventsDeps,
  caller: Caller,
  request: QueryEventsRequest,
): Promise<QueryEventsResult> {
  const { environment, sessionId, eventName, startDate, endDate } = request.filters;
  const range = dateRange(startDate, endDate);
  const identity: QueryIdentity = { agentId: request.agentId, environment, sessionId, eventName, ...range };
  const before = request.nextToken ? decodeCursor(request.nextToken, identity) : undefined;
  await requireAgent(deps, caller, request.agentId);

  const page = await deps.analytics.query({
    ...identity,
    environment,
    before,
    offset: request.offset,
    limit: request.limit,
    now: deps.clock.now(),
  });
  // Cut by bytes: the token points at the last record kept, so the next page starts with the first left out.
  const { kept, cut } = withinBudget(page.events);
  const last = kept[kept.length - 1];
  const next = cut ? { createdAt: last.created_at, id: last.id } : page.next;
  return {
    data: kept,
    count: kept.length,
    limit: request.limit,
    offset: request.offset,
    nextToken: next ? encodeCursor(next, identity) : null,
  };
}
