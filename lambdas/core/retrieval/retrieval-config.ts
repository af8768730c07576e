/** The default retrieval configuration of an agent's environment, as the dashboard sets it and the store keeps it. */
import * as z from 'zod';
import { type Environment, environment as environmentField, uuid } from '#core/knowledge/fields';
import { withRules } from '#core/validation';
import { filterEntrySchema } from './filters';
import { MAX_NUMBER_OF_RESULTS } from './retrieve';

/** The configuration is stored in DynamoDB, which stores no number closer to 0 than this (other than 0 itself). */
const SMALLEST_STORED_MAGNITUDE = 1e-130;

const storedMinScore = withRules(z.number().min(0).max(1), (value) =>
  value > 0 && value < SMALLEST_STORED_MAGNITUDE
    ? [{ rule: 'minScore.precision', message: `must be 0 or at least ${SMALLEST_STORED_MAGNITUDE}` }]
    : [],
);

export const retrievalConfigSchema = z.strictObject({
  enabled: z.boolean(),
  knowledgeBases: z
    .array(
      z.strictObject({
        knowledgeBaseId: uuid,
        environment: environmentField.optional(),
        numberOfResults: z.number().int().min(1).max(MAX_NUMBER_OF_RESULTS).optional(),
        minScore: storedMinScore.optional(),
        filters: z.array(filterEntrySchema).max(20).optional(),
      }),
    )
    .max(10),
});
export type RetrievalConfig = z.output<typeof retrievalConfigSchema>;

export interface RetrievalConfigRecord extends RetrievalConfig {
  readonly agentId: string;
  readonly environment: Environment;
  readonly updatedAt: string;
}
