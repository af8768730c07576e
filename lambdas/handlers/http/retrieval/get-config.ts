import { retrievalContainer } from '#composition/retrieval-container';
import { getRetrievalConfig } from '#core/retrieval/default-retrieval';
import { httpHandler } from '#shared/http';
import { configPathSchema } from './config-schemas';
import type { GetRetrievalConfigResponse } from './responses';

/** GET /dashboard/agents/:agentId/retrieval/:environment (off with no knowledge bases until set). */
export const handler = httpHandler('GetRetrievalConfig', configPathSchema, async (input, caller) => ({
  body: {
    ...(await getRetrievalConfig(retrievalContainer, caller, input.agentId, input.environment)),
  } satisfies GetRetrievalConfigResponse,
}));
