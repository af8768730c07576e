import { container } from '#composition/container';
import { startAgentDeletion } from '#core/processing/agent-deletion';
import { httpHandler } from '#shared/http';
import type { DeleteAgentResponse } from './responses';
import { agentPathSchema } from './schemas';

/** DELETE /dashboard/agents/:agentId: 202 with the deletion job (core/processing/agent-deletion.ts). */
export const handler = httpHandler('DeleteAgent', agentPathSchema, async (input, caller) => ({
  status: 202,
  body: (await startAgentDeletion(container, caller, input.agentId)) satisfies DeleteAgentResponse,
}));
