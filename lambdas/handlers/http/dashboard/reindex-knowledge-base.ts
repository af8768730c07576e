import { container } from '#composition/container';
import { reindexKnowledgeBase } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { KnowledgeBaseReindexResponse } from '../knowledge/responses';
import { reindexKnowledgeBaseSchema } from './schemas';

/** 202: the reindex is a job (core/processing/knowledge-base-reindex.ts); GET …/reindex follows it. */
export const handler = httpHandler('ReindexKnowledgeBase', reindexKnowledgeBaseSchema, async (input, caller) => ({
  status: 202,
  body: { ...(await reindexKnowledgeBase(container, caller, input)) } satisfies KnowledgeBaseReindexResponse,
}));
