import { container } from '#composition/container';
import { getKnowledgeBase } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { KnowledgeBaseResponse } from '../knowledge/responses';
import { knowledgeBasePathSchema } from './schemas';

export const handler = httpHandler('GetKnowledgeBase', knowledgeBasePathSchema, async (input, caller) => ({
  body: (await getKnowledgeBase(
    container,
    caller,
    input.agentId,
    input.knowledgeBaseId,
  )) satisfies KnowledgeBaseResponse,
}));
