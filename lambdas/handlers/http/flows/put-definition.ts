import { definitionContainer } from '#composition/definition-container';
import { definitionView, putAgentDefinition } from '#core/flows/definitions';
import { httpHandler } from '#shared/http';
import { definitionBodySchema } from './schemas';

/** PUT /dashboard/agents/:agentId/definition/:environment: the body is the whole definition (docs/flows.md). */
export const handler = httpHandler('PutAgentDefinition', definitionBodySchema, async (input, caller) => {
  const { agentId, environment, ...definition } = input;
  const record = await putAgentDefinition(definitionContainer, caller, agentId, environment, definition);
  return { body: definitionView(record) };
});
