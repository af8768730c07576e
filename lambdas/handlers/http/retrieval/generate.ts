import { modelProviderFromEnv } from '../../../adapters/model/openai-compatible';
import { generateWithCitations } from '../../../core/retrieval/generate';
import { resultOf, retrieve } from '../../../core/retrieval/retrieve';
import { httpHandler } from '../../../shared/http';
import { retrievalContainer } from '../../../shared/retrieval-container';
import { retrievalSchema } from './schemas';

/** Read once per cold start: an OpenAI-compatible endpoint when MODEL_BASE_URL is set, else the extractive answer. */
const model = modelProviderFromEnv();

/**
 * POST /dashboard/agents/:agentId/knowledge/:environment/kb/:knowledgeBaseId/generate: retrieve, then answer from
 * the results with citations that point at them (`citations[].resultIndex` indexes `results`).
 */
export const handler = httpHandler('GenerateFromKnowledgeBase', retrievalSchema, async (input, caller) => {
  const { hits, explain } = await retrieve(retrievalContainer, caller, input);
  const { answer, citations } = await generateWithCitations(model, input.query, hits);
  return {
    body: {
      answer,
      citations,
      results: hits.map(resultOf),
      model: model?.name ?? 'extractive',
      ...(explain ? { explain } : {}),
    },
  };
});
