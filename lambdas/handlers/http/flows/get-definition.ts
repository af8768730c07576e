import { definitionContainer } from '#composition/definition-container';
import { definitionView, getAgentDefinition } from '#core/flows/definitions';
import { httpHandler } from '#shared/http';
import type { DefinitionResponse } from './responses';
import { definitionPathSchema } from './schemas';

/** GET /dashboard/agents/:agentId/definition/:environment: the stored definition and its version. */
export const handler = httpHandler('GetAgentDefinition', definitionPathSchema, async (input, caller) => ({
  body: definitionView(
    await getAgentDefinition(definitionContainer, caller, input.agentId, input.environment),
  ) satisfies DefinitionResponse,
}));
