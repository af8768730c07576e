import { container } from '#composition/container';
import { updateKnowledgeBase } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { KnowledgeBaseResponse } from '../knowledge/responses';
import { updateKnowledgeBaseSchema } from './schemas';

export const handler = httpHandler('UpdateKnowledgeBase', updateKnowledgeBaseSchema, async (input, caller) => ({
  body: (await updateKnowledgeBase(container, caller, input)) satisfies KnowledgeBaseResponse,
}));
