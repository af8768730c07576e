import { definitionContainer } from '#composition/definition-container';
import { getDefinitionVersion } from '#core/flows/definition-versions';
import { definitionView } from '#core/flows/definitions';
import { httpHandler } from '#shared/http';
import type { DefinitionResponse } from './responses';
import { definitionVersionPathSchema } from './schemas';

/** GET /dashboard/agents/:agentId/definition/:environment/versions/:version: that version, whole. */
export const handler = httpHandler('GetAgentDefinitionVersion', definitionVersionPathSchema, async (input, caller) => {
  const { agentId, environment, version } = input;
  const record = await getDefinitionVersion(definitionContainer, caller, agentId, environment, version);
  return { body: definitionView(record) satisfies DefinitionResponse };
});
