/**
 * Success bodies of the analytics routes (without the `success: true` every answer carries), one zod schema per route id
 * of lib/routes.ts: the OpenAPI document is generated from them, and the integration suites check every answer
 * against it. Handlers import these as types only (`satisfies`), so no bundle grows.
 */
import * as z from 'zod';
import { environment } from '#core/knowledge/fields';
import { agentListResponse } from '../dashboard/responses';
import { type Answer, freeForm, id, instant } from '../response-fields';

const AGENT_ID = '3f6c2a8e-8d1b-4c2e-9a57-0b6f1d2e4c10';
const SESSION_ID = 'c1a4e9d2-6b3f-4e70-8a15-9d2c7b0e3f68';

export const eventRecordSchema = z.strictObject({
  id: z.int().min(1).meta({ description: 'Unique within the agent, increasing in the order events were recorded' }),
  agentId: id,
  sessionId: z.string().meta({ description: 'The session, or `external` for a custom event tracked outside one' }),
  environment,
  eventName: z.string(),
  payload: freeForm,
  created_at: instant,
});

export const queryEventsResponse = z
  .strictObject({
    data: z.array(eventRecordSchema),
    count: z.int().min(0),
    limit: z.int().min(1),
    offset: z.int().min(0),
    nextToken: z
      .string()
      .nullable()
      .meta({ description: 'Pass it back as nextToken for the records after this page; null: this page is the last' }),
  })
  .meta({
    description: 'Events of the agent, newest first',
    examples: [
      {
        data: [
          {
            id: 42,
            agentId: AGENT_ID,
            sessionId: SESSION_ID,
            environment: 'production',
            eventName: 'node_execution',
            payload: { nodeName: 'Answer', nodeType: 'promptNode', parameters: { model: 'offline' } },
            created_at: '2026-11-29T07:20:00.953Z',
          },
        ],
        count: 1,
        limit: 100,
        offset: 0,
        nextToken: null,
      },
    ],
  });

export const trackEventResponse = z
  .strictObject({
    agentId: id,
    environment,
    sessionId: z.string(),
    eventName: z.string(),
    eventKey: z.string().meta({ description: 'Give it again to make a retry store nothing twice' }),
    duplicate: z
      .boolean()
      .meta({ description: 'true (status 200): an event of this key was stored already; nothing was stored again' }),
  })
  .meta({
    description: 'The event recorded (201), or found recorded already under its key (200)',
    examples: [
      {
        agentId: AGENT_ID,
        environment: 'production',
        sessionId: 'external',
        eventName: 'order.refunded',
        eventKey: 'refund-2026-11-29-0017',
        duplicate: false,
      },
    ],
  });

export type QueryEventsResponse = Answer<typeof queryEventsResponse>;
export type TrackEventResponse = Answer<typeof trackEventResponse>;

export const RESPONSES: Readonly<Record<string, z.ZodType>> = {
  AgentsList: agentListResponse,
  QueryEvents: queryEventsResponse,
  TrackEvent: trackEventResponse,
};

/**
 * The 200 of a repeated TrackEvent (an `eventKey` stored already: nothing stored again), with the body of its 201, by
 * route id as RESPONSES is.
 */
export const RESPONSES_REPEATED: Readonly<Record<string, z.ZodType>> = {
  TrackEvent: trackEventResponse,
};
