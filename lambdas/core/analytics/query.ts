/**
 * POST /api/v1/events/agent. Primary course: the agent must be the caller's organization's (else the 404 of an
 * unknown agent); the filters become one key range of one index (lambdas/adapters/store/dynamodb/analytics-store.ts);
 * the page starts after the cursor (when given), skips `offset` records, and holds at most `limit`, newest first.
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
  return {
    data: page.events,
    count: page.events.length,
    limit: request.limit,
    offset: request.offset,
    nextToken: page.next ? encodeCursor(page.next, identity) : null,
  };
}
