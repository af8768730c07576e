import { generateModelFromEnv } from '#composition/model';
import { endpointRetrievalContainer } from '#composition/retrieval-container';
import { generateWithCitations } from '#core/retrieval/generate';
import { resultOf, retrieve } from '#core/retrieval/retrieve';
import { httpHandler } from '#shared/http';
import type { GenerateResponse } from './responses';
import { retrievalSchema } from './schemas';

/** Read once per cold start (lambdas/composition/model.ts): OpenAI-compatible, Bedrock Converse, or extractive. */
const model = generateModelFromEnv();

/**
 * POST /dashboard/agents/:agentId/knowledge/:environment/kb/:knowledgeBaseId/generate: retrieve, then answer from
 * the results with citations that point at them (`citations[].resultIndex` indexes `results`).
 */
export const handler = httpHandler('GenerateFromKnowledgeBase', retrievalSchema, async (input, caller) => {
  const { hits, explain } = await retrieve(endpointRetrievalContainer, caller, input);
  const { answer, citations } = await generateWithCitations(model, input.query, hits);
  return {
    body: {
      answer,
      citations,
      results: hits.map(resultOf),
      model: model?.name ?? 'extractive',
      ...(explain ? { explain } : {}),
    } satisfies GenerateResponse,
  };
});
