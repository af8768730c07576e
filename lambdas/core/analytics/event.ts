/**
 * Analytics events: the record the API returns, what a writer hands to the sink, and the rules of their fields.
 * Shared by the recorder (lambdas/core/analytics/track.ts) and the query (query.ts) so both speak one vocabulary.
 */
import * as z from 'zod';
import { type Environment, environment } from '#core/knowledge/fields';
import { parseInput, withRules } from '#core/validation';

/** Events the flow runtime records by itself; agent code records its own names through trackAnalyticsEvent(). */
export const BUILT_IN_EVENTS = [
  'invocation_start',
  'node_execution',
  'node_result',
  'tool_call',
  'browser_step',
  'invocation_error',
  'agent_code_call',
  'ai_message_delivery',
] as const;
export type BuiltInEventName = (typeof BUILT_IN_EVENTS)[number];

export const EVENT_NAME_MAX_LENGTH = 100;
export const SESSION_ID_MAX_LENGTH = 128;
export const EVENT_KEY_MAX_LENGTH = 200;
/** Serialized JSON; keeps an event far below DynamoDB's 400 KB item limit and a 1,000-record page small. */
export const PAYLOAD_MAX_BYTES = 32 * 1024;

/** One record of POST /api/v1/events/agent, exactly as the spec names its fields. */
export interface AnalyticsEventRecord {
  /** Unique within the agent and increasing in the order events were recorded. */
  readonly id: number;
  readonly agentId: string;
  readonly sessionId: string;
  readonly environment: Environment;
  readonly eventName: string;
  readonly payload: Record<string, unknown>;
  /** ISO 8601 (UTC, milliseconds): when the event was recorded. Never decreases as `id` grows within an agent. */
  readonly created_at: string;
}

/** An event handed to the sink. `eventKey` makes the write idempotent: one record per agent and key, ever. */
export interface NewAnalyticsEvent {
  readonly eventKey: string;
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId: string;
  readonly eventName: string;
  readonly payload: Record<string, unknown>;
}

/** Where a record sits in the newest-first order: the API's cursor points at one. */
export interface EventPosition {
  readonly createdAt: string;
  readonly id: number;
}

export const eventName = withRules(z.string().min(1).max(EVENT_NAME_MAX_LENGTH), (value) =>
  value === '' || /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/.test(value)
    ? []
    : [
        {
          rule: 'eventName.format',
          message: 'must be letters, digits, "_", ".", ":" and "-", starting with a letter or digit',
        },
      ],
);

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused here
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/** A UUID in practice (the flow runtime's sessions); any printable 1–128 characters are kept as recorded. */
export const sessionId = withRules(z.string().min(1).max(SESSION_ID_MAX_LENGTH), (value) =>
  CONTROL_CHARACTERS.test(value)
    ? [{ rule: 'sessionId.characters', message: 'must not contain control characters' }]
    : [],
);

export const eventKey = withRules(z.string().min(1).max(EVENT_KEY_MAX_LENGTH), (value) =>
  CONTROL_CHARACTERS.test(value)
    ? [{ rule: 'eventKey.characters', message: 'must not contain control characters' }]
    : [],
);

export const eventPayload = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  if (text === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be serializable as JSON', params: { rule: 'payload.json' } });
  } else if (Buffer.byteLength(text, 'utf8') > PAYLOAD_MAX_BYTES) {
    ctx.addIssue({
      code: 'custom',
      message: `must be at most ${PAYLOAD_MAX_BYTES} bytes as JSON`,
      params: { rule: 'payload.maxBytes' },
    });
  }
});

/** What a writer may record; checked when an event is tracked, so a bad event fails in the code that made it. */
export const newEventSchema = z.strictObject({
  eventKey,
  agentId: z.uuid(),
  environment,
  sessionId,
  eventName,
  payload: eventPayload,
});

/** Validates an event and returns it with its payload reduced to plain JSON (what is stored is what is returned). */
export function checkedEvent(event: NewAnalyticsEvent): NewAnalyticsEvent {
  // Throws the same ValidationError an API 400 carries, so a failing track call names the field and the rule.
  const parsed = parseInput(newEventSchema, event);
  return { ...parsed, payload: JSON.parse(JSON.stringify(parsed.payload)) };
}
