import { container } from '#composition/container';
import { listKnowledgeBases } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { ListKnowledgeBasesResponse } from '../knowledge/responses';
import { agentPathSchema } from './schemas';

export const handler = httpHandler('ListKnowledgeBases', agentPathSchema, async (input, caller) => {
  const data = await listKnowledgeBases(container, caller, input.agentId);
  return { body: { data, count: data.length } satisfies ListKnowledgeBasesResponse };
});
