import { container } from '#composition/container';
import { recordEvent } from '#core/analytics/record-event';
import { httpHandler } from '#shared/http';
import type { TrackEventResponse } from './responses';
import { trackEventSchema } from './schemas';

/** POST /api/v1/events/track: 201 with the event's key; 200 when that key was stored already (a retry). */
export const handler = httpHandler('TrackEvent', trackEventSchema, async (input, caller) => {
  const recorded = await recordEvent(container, caller, input);
  return { status: recorded.duplicate ? 200 : 201, body: { ...recorded } satisfies TrackEventResponse };
});
