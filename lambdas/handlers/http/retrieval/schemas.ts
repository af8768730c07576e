/** Request schemas of the retrieval endpoints. */
import * as z from 'zod';
import { environment, uuid } from '#core/knowledge/fields';
import { filterEntrySchema } from '#core/retrieval/filters';
import { MAX_NUMBER_OF_RESULTS } from '#core/retrieval/retrieve';

export const retrievalSchema = z.strictObject({
  agentId: uuid,
  environment,
  knowledgeBaseId: uuid,
  query: z.string().trim().min(1).max(2000),
  numberOfResults: z.number().int().min(1).max(MAX_NUMBER_OF_RESULTS).optional(),
  minScore: z.number().min(0).max(1).optional(),
  filters: z.array(filterEntrySchema).max(20).optional(),
  /** The state placeholders resolve against: `{state.memory.x}` reads `memory.x`. */
  memory: z.record(z.string(), z.unknown()).optional(),
  explain: z.boolean().optional(),
});
