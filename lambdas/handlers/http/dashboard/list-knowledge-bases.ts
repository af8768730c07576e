import { listKnowledgeBases } from '../../../core/dashboard/dashboard';
import { container } from '../../../shared/container';
import { httpHandler } from '../../../shared/http';
import { agentPathSchema } from './schemas';

export const handler = httpHandler('ListKnowledgeBases', agentPathSchema, async (input, caller) => {
  const data = await listKnowledgeBases(container, caller, input.agentId);
  return { body: { data, count: data.length } };
});
