import { definitionContainer } from '#composition/definition-container';
import { getSession } from '#core/flows/definitions';
import { httpHandler } from '#shared/http';
import type { SessionResponse } from './responses';
import { sessionPathSchema } from './schemas';

/** GET /dashboard/agents/:agentId/sessions/:environment/:sessionId */
export const handler = httpHandler('GetSession', sessionPathSchema, async (input, caller) => ({
  body: (await getSession(
    definitionContainer,
    caller,
    input.agentId,
    input.environment,
    input.sessionId,
  )) satisfies SessionResponse,
}));
