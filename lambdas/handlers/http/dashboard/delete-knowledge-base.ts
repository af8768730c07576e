import { deleteKnowledgeBase } from '../../../core/dashboard/dashboard';
import { container } from '../../../shared/container';
import { httpHandler } from '../../../shared/http';
import { knowledgeBasePathSchema } from './schemas';

export const handler = httpHandler('DeleteKnowledgeBase', knowledgeBasePathSchema, async (input, caller) => ({
  body: await deleteKnowledgeBase(container, caller, input.agentId, input.knowledgeBaseId),
}));
