import { retrievalConfigContainer } from '#composition/retrieval-container';
import { putRetrievalConfig } from '#core/retrieval/default-retrieval';
import { httpHandler } from '#shared/http';
import { putConfigSchema } from './config-schemas';
import type { PutRetrievalConfigResponse } from './responses';

/** PUT /dashboard/agents/:agentId/retrieval/:environment: replaces the whole configuration of the environment. */
export const handler = httpHandler('PutRetrievalConfig', putConfigSchema, async (input, caller) => {
  const { agentId, environment, ...config } = input;
  return {
    body: {
      ...(await putRetrievalConfig(retrievalConfigContainer, caller, agentId, environment, config)),
    } satisfies PutRetrievalConfigResponse,
  };
});
