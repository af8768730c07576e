/**
 * Default retrieval, per agent and environment: after the trigger event the flow runtime retrieves from each
 * configured knowledge base (memory resolved, results under minScore dropped) and injects the context into the
 * conversation as one system message. The format of that message is fixed here (docs/retrieval.md).
 */
import * as z from 'zod';
import { ValidationError } from '../errors';
import { type Environment, environment as environmentField, uuid } from '../knowledge/fields';
import type { Caller } from '../tenancy/tenancy';
import { requireAgent } from '../tenancy/tenancy';
import { withRules } from '../validation';
import { filterEntrySchema } from './filters';
import { MAX_NUMBER_OF_RESULTS, type RetrievalDeps, type RetrievalResult, retrieve } from './retrieve';

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

export interface RetrievalConfigStore {
  get(agentId: string, environment: Environment): Promise<RetrievalConfigRecord | undefined>;
  put(record: RetrievalConfigRecord): Promise<void>;
}

export interface DefaultRetrievalDeps extends RetrievalDeps {
  readonly retrievalConfigs: RetrievalConfigStore;
  readonly clock: { now(): Date };
}

/** Without a stored configuration, default retrieval is off. */
export function configView(agentId: string, environment: Environment, record: RetrievalConfigRecord | undefined) {
  return record ?? { agentId, environment, enabled: false, knowledgeBases: [], updatedAt: null };
}

export async function getRetrievalConfig(
  deps: DefaultRetrievalDeps,
  caller: Caller,
  agentId: string,
  environment: Environment,
) {
  await requireAgent(deps, caller, agentId);
  return configView(agentId, environment, await deps.retrievalConfigs.get(agentId, environment));
}

/** Stores the configuration of one environment; every knowledge base named must be the agent's. */
export async function putRetrievalConfig(
  deps: DefaultRetrievalDeps,
  caller: Caller,
  agentId: string,
  environment: Environment,
  config: RetrievalConfig,
) {
  await requireAgent(deps, caller, agentId);
  const unknown = [];
  for (const [index, entry] of config.knowledgeBases.entries()) {
    const kb = await deps.knowledgeBases.get(agentId, entry.knowledgeBaseId);
    if (!kb || kb.organizationId !== caller.organizationId) {
      unknown.push({
        field: `knowledgeBases.${index}.knowledgeBaseId`,
        rule: 'knowledgeBase.exists',
        message: `knowledge base ${entry.knowledgeBaseId} is not one of this agent's`,
      });
    }
  }
  if (unknown.length) throw new ValidationError(unknown);
  const record: RetrievalConfigRecord = { ...config, agentId, environment, updatedAt: deps.clock.now().toISOString() };
  await deps.retrievalConfigs.put(record);
  return record;
}

export interface DefaultRetrievalOutcome {
  /** The system message to inject, or null when default retrieval is off or found nothing. */
  readonly systemMessage: string | null;
  readonly results: readonly (RetrievalResult & { knowledgeBaseId: string; environment: Environment })[];
}

/**
 * What the flow runtime calls after TRIGGER_EVENT. The message lists the results best first:
 *   Relevant knowledge (use it to answer; it may be incomplete):
 *   [1] (document <documentId>, score 0.82) <content>
 */
export async function runDefaultRetrieval(
  deps: DefaultRetrievalDeps,
  caller: Caller,
  request: { agentId: string; environment: Environment; query: string; memory?: unknown },
): Promise<DefaultRetrievalOutcome> {
  const config = await deps.retrievalConfigs.get(request.agentId, request.environment);
  if (!config?.enabled || config.knowledgeBases.length === 0) return { systemMessage: null, results: [] };
  const results: (RetrievalResult & { knowledgeBaseId: string; environment: Environment })[] = [];
  for (const kb of config.knowledgeBases) {
    const environment = kb.environment ?? request.environment;
    const found = await retrieve(deps, caller, {
      agentId: request.agentId,
      environment,
      knowledgeBaseId: kb.knowledgeBaseId,
      query: request.query,
      numberOfResults: kb.numberOfResults,
      minScore: kb.minScore,
      filters: kb.filters,
      memory: request.memory,
    });
    results.push(...found.results.map((r) => ({ ...r, knowledgeBaseId: kb.knowledgeBaseId, environment })));
  }
  results.sort((a, b) => b.score - a.score);
  if (results.length === 0) return { systemMessage: null, results };
  const lines = results.map(
    (r, i) =>
      `[${i + 1}] (document ${r.metadata.documentId}, score ${r.score.toFixed(2)}) ${r.content.replace(/\s+/g, ' ').trim()}`,
  );
  return {
    systemMessage: ['Relevant knowledge (use it to answer; it may be incomplete):', ...lines].join('\n'),
    results,
  };
}
