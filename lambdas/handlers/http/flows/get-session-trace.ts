import { analyticsStore, clock } from '#composition/container';
import { definitionContainer } from '#composition/definition-container';
import { getSessionTrace } from '#core/flows/trace';
import { httpHandler } from '#shared/http';
import type { SessionTraceResponse } from './responses';
import { sessionPathSchema } from './schemas';

/** GET /dashboard/agents/:agentId/sessions/:environment/:sessionId/trace: the session's steps, oldest first. */
export const handler = httpHandler('GetSessionTrace', sessionPathSchema, async (input, caller) => ({
  body: {
    ...(await getSessionTrace(
      {
        agents: definitionContainer.agents,
        sessions: definitionContainer.sessions,
        analytics: analyticsStore(),
        clock,
      },
      caller,
      input.agentId,
      input.environment,
      input.sessionId,
    )),
  } satisfies SessionTraceResponse,
}));
