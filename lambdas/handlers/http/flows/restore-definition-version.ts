import { definitionContainer } from '#composition/definition-container';
import { restoreDefinitionVersion } from '#core/flows/definition-versions';
import { definitionView } from '#core/flows/definitions';
import { httpHandler } from '#shared/http';
import type { SavedDefinitionResponse } from './responses';
import { restoreDefinitionVersionSchema } from './schemas';

/**
 * POST /dashboard/agents/:agentId/definition/:environment/versions/:version/restore: that version's definition
 * stored as the next version (the answer of a PUT: the version stored, or the current one with `unchanged: true`).
 */
export const handler = httpHandler(
  'RestoreAgentDefinitionVersion',
  restoreDefinitionVersionSchema,
  async (input, caller) => {
    const saved = await restoreDefinitionVersion(definitionContainer, caller, input);
    return { body: { ...definitionView(saved.record), unchanged: saved.unchanged } satisfies SavedDefinitionResponse };
  },
);
