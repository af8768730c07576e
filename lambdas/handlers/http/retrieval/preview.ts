import { retrievalContainer } from '#composition/retrieval-container';
import { runDefaultRetrieval } from '#core/retrieval/default-retrieval';
import { requireAgent } from '#core/tenancy/tenancy';
import { httpHandler } from '#shared/http';
import { previewSchema } from './config-schemas';
import type { PreviewResponse } from './responses';

/** POST /dashboard/agents/:agentId/retrieval/:environment/preview: what a trigger with this query would inject. */
export const handler = httpHandler('PreviewDefaultRetrieval', previewSchema, async (input, caller) => {
  await requireAgent(retrievalContainer, caller, input.agentId);
  return { body: { ...(await runDefaultRetrieval(retrievalContainer, caller, input)) } satisfies PreviewResponse };
});
