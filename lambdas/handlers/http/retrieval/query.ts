import { endpointRetrievalContainer } from '#composition/retrieval-container';
import { retrieve } from '#core/retrieval/retrieve';
import { httpHandler } from '#shared/http';
import type { QueryResponse } from './responses';
import { retrievalSchema } from './schemas';

/** POST /dashboard/agents/:agentId/knowledge/:environment/kb/:knowledgeBaseId/query: retrieve only. */
export const handler = httpHandler('QueryKnowledgeBase', retrievalSchema, async (input, caller) => {
  const { results, explain } = await retrieve(endpointRetrievalContainer, caller, input);
  return { body: { results, ...(explain ? { explain } : {}) } satisfies QueryResponse };
});
