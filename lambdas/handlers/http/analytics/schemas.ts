/** Request schema of POST /api/v1/events/agent; the OpenAPI document is generated from it. */
import * as z from 'zod';
import { parseIsoSpan } from '#core/analytics/dates';
import { eventKey, eventName, eventPayload, sessionId } from '#core/analytics/event';
import { DEFAULT_ENVIRONMENT, DEFAULT_LIMIT, MAX_LIMIT } from '#core/analytics/query';
import { environment, uuid } from '#core/knowledge/fields';
import { withRules } from '#core/validation';

const isoDate = withRules(z.string(), (value) =>
  parseIsoSpan(value)
    ? []
    : [
        {
          rule: 'format.iso8601',
          message:
            'must be an ISO 8601 date (2024-05-01) or date-time (2024-05-01T10:30:00Z, or 2024-05-01T10:30:00 taken as UTC)',
        },
      ],
);

const filters = z
  .strictObject({
    environment: environment.default(DEFAULT_ENVIRONMENT),
    sessionId: sessionId.optional(),
    eventName: eventName.optional(),
    startDate: isoDate
      .optional()
      .describe('Inclusive; a date alone starts at 00:00:00.000 UTC that day; a date-time without a zone is UTC'),
    endDate: isoDate
      .optional()
      .describe(
        'Inclusive at the precision written: a date alone ends at 23:59:59.999 UTC that day; a date-time without a zone is UTC',
      ),
  })
  .superRefine((value, ctx) => {
    if (value.startDate === undefined || value.endDate === undefined) return;
    const start = parseIsoSpan(value.startDate);
    const end = parseIsoSpan(value.endDate);
    if (start && end && start.first > end.last) {
      ctx.addIssue({
        code: 'custom',
        path: ['startDate'],
        message: 'must not be after filters.endDate',
        params: { rule: 'dateRange' },
      });
    }
  });

export const queryEventsSchema = z.strictObject({
  agentId: uuid,
  // `prefault` parses the default, so an absent `filters` still gets environment `production`.
  filters: filters.prefault({}),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .default(DEFAULT_LIMIT)
    .describe(
      'Records a page holds at most; a page also ends before its records pass 4 MiB, with a nextToken: ' +
        'a page shorter than limit is the last only when nextToken is null',
    ),
  offset: z.number().int().min(0).default(0).describe('Records to skip, counted after nextToken when both are given'),
  /** The `nextToken` of the previous page: the page continues after its last record (then skips `offset`). */
  nextToken: z
    .string()
    .min(1)
    .max(1024)
    .nullable()
    .optional()
    .describe(
      'The nextToken of the previous answer: continue after its last record, with the same agentId and filters',
    ),
});

/**
 * POST /api/v1/events/track: one custom event. `sessionId` defaults to `external` (tracked outside a session),
 * `eventKey` to a new UUID; give your own key to make a retried call store the event once.
 */
export const trackEventSchema = z.strictObject({
  agentId: uuid,
  environment: environment.default(DEFAULT_ENVIRONMENT),
  sessionId: sessionId.optional(),
  eventName,
  payload: eventPayload.optional().describe('A JSON object of at most 32 KiB'),
  eventKey: eventKey
    .optional()
    .describe('Idempotency key, unique within the agent: a second call with the same key stores nothing (200)'),
});
