import { definitionContainer } from '#composition/definition-container';
import { listSessions } from '#core/flows/session-list';
import { httpHandler } from '#shared/http';
import type { SessionListResponse } from './responses';
import { listSessionsSchema } from './schemas';

/** GET /dashboard/agents/:agentId/sessions/:environment */
export const handler = httpHandler('ListSessions', listSessionsSchema, async (input, caller) => ({
  body: (await listSessions(definitionContainer, caller, input)) satisfies SessionListResponse,
}));
