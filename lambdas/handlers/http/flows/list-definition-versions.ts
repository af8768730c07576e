import { definitionContainer } from '#composition/definition-container';
import { listDefinitionVersions } from '#core/flows/definition-versions';
import { httpHandler } from '#shared/http';
import type { DefinitionVersionListResponse } from './responses';
import { listDefinitionVersionsSchema } from './schemas';

/** GET /dashboard/agents/:agentId/definition/:environment/versions: newest first, who and when, a page at a time. */
export const handler = httpHandler(
  'ListAgentDefinitionVersions',
  listDefinitionVersionsSchema,
  async (input, caller) => ({
    body: (await listDefinitionVersions(definitionContainer, caller, input)) satisfies DefinitionVersionListResponse,
  }),
);
