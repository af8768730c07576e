import { definitionContainer } from '#composition/definition-container';
import { definitionView, putAgentDefinition } from '#core/flows/definitions';
import { httpHandler } from '#shared/http';
import type { SavedDefinitionResponse } from './responses';
import { putDefinitionSchema } from './schemas';

/**
 * PUT /dashboard/agents/:agentId/definition/:environment: the body is the whole definition (docs/flows.md), with
 * `expectedVersion` beside it when the caller wants a save on another version refused. 200 with the version stored,
 * or the current one with `unchanged: true` when the definition equals it.
 */
export const handler = httpHandler('PutAgentDefinition', putDefinitionSchema, async (input, caller) => {
  const { agentId, environment, expectedVersion, ...definition } = input;
  const saved = await putAgentDefinition(
    definitionContainer,
    caller,
    agentId,
    environment,
    definition,
    expectedVersion,
  );
  return { body: { ...definitionView(saved.record), unchanged: saved.unchanged } satisfies SavedDefinitionResponse };
});
