import { container } from '#composition/container';
import { getAgent } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { AgentResponse } from './responses';
import { agentPathSchema } from './schemas';

export const handler = httpHandler('GetAgent', agentPathSchema, async (input, caller) => ({
  body: (await getAgent(container, caller, input.agentId)) satisfies AgentResponse,
}));
