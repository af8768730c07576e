import { analyticsQueryContainer } from '#composition/analytics-query';
import { queryEvents } from '#core/analytics/query';
import { httpHandler } from '#shared/http';
import type { QueryEventsResponse } from './responses';
import { queryEventsSchema } from './schemas';

/** POST /api/v1/events/agent: `{ success, data, count, limit, offset, nextToken }`, newest first. */
export const handler = httpHandler('QueryEvents', queryEventsSchema, async (input, caller) => ({
  body: { ...(await queryEvents(analyticsQueryContainer, caller, input)) } satisfies QueryEventsResponse,
}));
