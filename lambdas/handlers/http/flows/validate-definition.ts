import { definitionContainer } from '#composition/definition-container';
import { validateAgentDefinition } from '#core/flows/definitions';
import { httpHandler } from '#shared/http';
import type { ValidateDefinitionResponse } from './responses';
import { definitionBodySchema } from './schemas';

/**
 * POST /dashboard/agents/:agentId/definition/:environment/validate: 200 `{ valid, problems }` whether or not the
 * definition is valid (the request itself was fine); nothing is stored.
 */
export const handler = httpHandler('ValidateAgentDefinition', definitionBodySchema, async (input, caller) => {
  const { agentId, environment: _environment, ...definition } = input;
  return {
    body: (await validateAgentDefinition(
      definitionContainer,
      caller,
      agentId,
      definition,
    )) satisfies ValidateDefinitionResponse,
  };
});
