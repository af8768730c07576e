import { container } from '#composition/container';
import { renameAgent } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { AgentResponse } from './responses';
import { renameAgentSchema } from './schemas';

export const handler = httpHandler('RenameAgent', renameAgentSchema, async (input, caller) => ({
  body: (await renameAgent(container, caller, input)) satisfies AgentResponse,
}));
