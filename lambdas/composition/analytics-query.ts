/**
 * The store the analytics query (POST /api/v1/events/agent and its dashboard mirror) reads through: the container's,
 * with the offset marks a container keeps and shares with the others through the rateLimits table
 * (adapters/store/dynamodb/analytics-offsets.ts, analytics-marks.ts, docs/analytics.md). Only the
 * query's function imports this, so the marks' code is not bundled into the functions that only record events (the
 * flow runtime's, TrackEvent's), which stay within their budget (scripts/bundle-sizes.ts).
 */
import { TableMarks } from '#adapters/store/dynamodb/analytics-marks';
import { OffsetIndex } from '#adapters/store/dynamodb/analytics-offsets';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import { retentionDaysFrom } from '#core/analytics/retention';
import type { AnalyticsStore } from '#ports/analytics';
import { config } from '#shared/config';
import { handlerVariable } from '#shared/environment';
import { dynamoDocumentClient } from './clients/dynamodb';
import { clock, readContainer } from './container';
import { once } from './once';

const markedAnalyticsStore = /* @__PURE__ */ once(() => {
  const client = dynamoDocumentClient();
  const tableName = config.tableName('analytics');
  return new DynamoAnalyticsStore(client, tableName, {
    clock,
    retentionDays: retentionDaysFrom(handlerVariable('ANALYTICS_RETENTION_DAYS')),
    // Marks shared through the functions' shared-state table: a new container resumes from those another one counted
    // (analytics-marks.ts).
    offsets: new OffsetIndex({ shared: new TableMarks(client, config.tableName('rateLimits')) }),
  });
});

/** readContainer, its analytics store the one with the marks. */
export const analyticsQueryContainer: typeof readContainer = /* @__PURE__ */ Object.create(readContainer, {
  analytics: { get: (): AnalyticsStore => markedAnalyticsStore() },
});
