import { container } from '#composition/container';
import { createKnowledgeBase } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { KnowledgeBaseResponse } from '../knowledge/responses';
import { createKnowledgeBaseSchema } from './schemas';

export const handler = httpHandler('CreateKnowledgeBase', createKnowledgeBaseSchema, async (input, caller) => ({
  status: 201,
  body: (await createKnowledgeBase(container, caller, input)) satisfies KnowledgeBaseResponse,
}));
