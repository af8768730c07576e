import { updateKnowledgeBase } from '../../../core/dashboard/dashboard';
import { container } from '../../../shared/container';
import { httpHandler } from '../../../shared/http';
import { updateKnowledgeBaseSchema } from './schemas';

export const handler = httpHandler('UpdateKnowledgeBase', updateKnowledgeBaseSchema, async (input, caller) => ({
  body: await updateKnowledgeBase(container, caller, input),
}));
