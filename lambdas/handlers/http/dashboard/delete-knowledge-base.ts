import { container } from '#composition/container';
import { deleteKnowledgeBase } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { DeleteKnowledgeBaseResponse } from '../knowledge/responses';
import { knowledgeBasePathSchema } from './schemas';

/**
 * 202: the deletion is a job (core/processing/knowledge-base-deletion.ts); a repeat answers the same job. The
 * knowledge base leaves the default retrieval configurations here, in the request, so the answer can say where.
 */
export const handler = httpHandler('DeleteKnowledgeBase', knowledgeBasePathSchema, async (input, caller) => ({
  status: 202,
  body: {
    ...(await deleteKnowledgeBase(container, caller, input.agentId, input.knowledgeBaseId)),
  } satisfies DeleteKnowledgeBaseResponse,
}));
