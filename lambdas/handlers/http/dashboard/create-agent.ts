import { container } from '#composition/container';
import { createAgent } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { CreateAgentResponse } from './responses';
import { createAgentSchema } from './schemas';

export const handler = httpHandler('CreateAgent', createAgentSchema, async (input, caller) => ({
  status: 201,
  body: (await createAgent(container, caller, input.displayName)) satisfies CreateAgentResponse,
}));
