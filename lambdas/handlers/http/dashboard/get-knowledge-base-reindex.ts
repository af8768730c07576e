import { container } from '#composition/container';
import { getKnowledgeBaseReindex } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { KnowledgeBaseReindexResponse } from '../knowledge/responses';
import { knowledgeBasePathSchema } from './schemas';

export const handler = httpHandler('GetKnowledgeBaseReindex', knowledgeBasePathSchema, async (input, caller) => ({
  body: {
    ...(await getKnowledgeBaseReindex(container, caller, input.agentId, input.knowledgeBaseId)),
  } satisfies KnowledgeBaseReindexResponse,
}));
