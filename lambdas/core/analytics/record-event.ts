/**
 * POST /api/v1/events/track: a custom analytics event (the spec's ANALYTICS_EVENT) recorded from outside a flow, by
 * agent code running wherever its owner runs it. It is stored as the flow runtime stores its events, through the same
 * AnalyticsSink, so POST /api/v1/events/agent returns it with the built-in ones (docs/analytics.md, "Custom events").
 * Primary course: the agent must be one the caller may use (else 404 AGENT_NOT_FOUND, as the query answers); a
 * built-in name is the runtime's (400 eventName.reserved); the event is written before the answer, idempotent per
 * agent and `eventKey`: a retry with the same key stores nothing twice and answers 200 instead of 201.
 */
import type { Environment } from '#core/knowledge/fields';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import type { AnalyticsSink } from '#ports/analytics';
import type { IdGenerator } from '#ports/services';
import type { AgentStore } from '#ports/stores';
import { checkedEvent } from './event';
import { refuseReservedName } from './track';

/** The session of an event tracked outside any session, unless the caller names one. */
export const EXTERNAL_SESSION_ID = 'external';

export interface RecordEventDeps {
  readonly agents: Pick<AgentStore, 'get'>;
  readonly analytics: AnalyticsSink;
  readonly ids: IdGenerator;
}

export interface RecordEventRequest {
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId?: string;
  readonly eventName: string;
  readonly payload?: Record<string, unknown>;
  readonly eventKey?: string;
}

export interface RecordedEvent {
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId: string;
  readonly eventName: string;
  readonly eventKey: string;
  /** True when an event of this key was stored already (a retried call): nothing was stored again. */
  readonly duplicate: boolean;
}

export async function recordEvent(
  deps: RecordEventDeps,
  caller: Caller,
  request: RecordEventRequest,
): Promise<RecordedEvent> {
  await requireAgent(deps, caller, request.agentId);
  refuseReservedName(request.eventName);
  const event = checkedEvent({
    agentId: request.agentId,
    environment: request.environment,
    sessionId: request.sessionId ?? EXTERNAL_SESSION_ID,
    eventName: request.eventName,
    payload: request.payload ?? {},
    eventKey: request.eventKey ?? deps.ids.uuid(),
  });
  const outcome = await deps.analytics.write([event]);
  const { agentId, environment, sessionId, eventName, eventKey } = event;
  return { agentId, environment, sessionId, eventName, eventKey, duplicate: outcome.written === 0 };
}
