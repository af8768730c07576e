/**
 * Default retrieval, per agent and environment: after the trigger event the flow runtime retrieves from each
 * configured knowledge base (memory resolved, results under minScore dropped) and injects the context into the
 * conversation as one system message. The format of that message is fixed here (docs/retrieval.md).
 */

import { NotFoundError, ValidationError } from '#core/errors';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import type { Caller } from '#core/tenancy/tenancy';
import { requireAgent } from '#core/tenancy/tenancy';
import type { RetrievalConfigStore } from '#ports/retrieval-configs';
import type { RetrievalConfig, RetrievalConfigRecord } from './retrieval-config';
import { type RetrievalDeps, type RetrievalResult, retrieve } from './retrieve';

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
    if (!kb || kb.organizationId !== caller.organizationId || kb.status === 'deleting') {
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

/**
 * How many times a configuration changed by someone else meanwhile is read again before removing a knowledge base
 * from it gives up (the caller's request, or the deletion job's message, is then retried whole).
 */
const MAX_CONFIG_WRITE_ATTEMPTS = 5;

/**
 * Removes the knowledge base from the default retrieval configuration of every environment of the agent (an entry
 * may name it from another environment's configuration). Answers the environments whose configuration changed.
 */
export async function removeFromDefaultRetrieval(
  deps: Pick<DefaultRetrievalDeps, 'retrievalConfigs' | 'clock'>,
  agentId: string,
  knowledgeBaseId: string,
): Promise<Environment[]> {
  const changed: Environment[] = [];
  for (const environment of ENVIRONMENTS) {
    for (let attempt = 1; ; attempt++) {
      const record = await deps.retrievalConfigs.get(agentId, environment);
      if (!record?.knowledgeBases.some((kb) => kb.knowledgeBaseId === knowledgeBaseId)) break;
      const knowledgeBases = record.knowledgeBases.filter((kb) => kb.knowledgeBaseId !== knowledgeBaseId);
      const next = { ...record, knowledgeBases, updatedAt: deps.clock.now().toISOString() };
      // Conditional: a PUT of the same configuration in between is not overwritten with what was read before it.
      if (await deps.retrievalConfigs.replace(next, record.updatedAt)) {
        changed.push(environment);
        break;
      }
      if (attempt >= MAX_CONFIG_WRITE_ATTEMPTS) {
        throw new Error(`The ${environment} retrieval configuration kept changing while a knowledge base was removed`);
      }
    }
  }
  return changed;
}

/** A configured knowledge base that was not searched, and why. */
export interface DefaultRetrievalWarning {
  readonly code: 'KNOWLEDGE_BASE_NOT_FOUND';
  readonly knowledgeBaseId: string;
  readonly environment: Environment;
  readonly message: string;
}

export interface DefaultRetrievalOutcome {
  /** The system message to inject, or null when default retrieval is off or found nothing (and skipped nothing). */
  readonly systemMessage: string | null;
  readonly results: readonly (RetrievalResult & { knowledgeBaseId: string; environment: Environment })[];
  readonly explain: { readonly warnings: readonly DefaultRetrievalWarning[] };
}

const HEADER = 'Relevant knowledge (use it to answer; it may be incomplete):';

/**
 * What the flow runtime calls after TRIGGER_EVENT. The message lists the results best first, then each configured
 * knowledge base that is gone (deleted, or being deleted): a run never fails for it, the session says it was skipped.
 *   Relevant knowledge (use it to answer; it may be incomplete):
 *   [1] (document <documentId>, score 0.82) <content>
 *   Not searched: knowledge base <knowledgeBaseId> (<environment>) no longer exists.
 */
export async function runDefaultRetrieval(
  deps: DefaultRetrievalDeps,
  caller: Caller,
  request: { agentId: string; environment: Environment; query: string; memory?: unknown },
): Promise<DefaultRetrievalOutcome> {
  const config = await deps.retrievalConfigs.get(request.agentId, request.environment);
  const warnings: DefaultRetrievalWarning[] = [];
  if (!config?.enabled || config.knowledgeBases.length === 0) {
    return { systemMessage: null, results: [], explain: { warnings } };
  }
  const results: (RetrievalResult & { knowledgeBaseId: string; environment: Environment })[] = [];
  for (const kb of config.knowledgeBases) {
    const environment = kb.environment ?? request.environment;
    let found: Awaited<ReturnType<typeof retrieve>>;
    try {
      found = await retrieve(deps, caller, {
        agentId: request.agentId,
        environment,
        knowledgeBaseId: kb.knowledgeBaseId,
        query: request.query,
        numberOfResults: kb.numberOfResults,
        minScore: kb.minScore,
        filters: kb.filters,
        memory: request.memory,
      });
    } catch (error) {
      // Deleting a knowledge base removes it from the configurations, but one written in between (or before that
      // rule) may still name it: the other knowledge bases still answer.
      if (!(error instanceof NotFoundError) || error.code !== 'KNOWLEDGE_BASE_NOT_FOUND') throw error;
      warnings.push({
        code: 'KNOWLEDGE_BASE_NOT_FOUND',
        knowledgeBaseId: kb.knowledgeBaseId,
        environment,
        message: `knowledge base ${kb.knowledgeBaseId} (${environment}) no longer exists and was skipped`,
      });
      continue;
    }
    results.push(...found.results.map((r) => ({ ...r, knowledgeBaseId: kb.knowledgeBaseId, environment })));
  }
  results.sort((a, b) => b.score - a.score);
  if (results.length === 0 && warnings.length === 0) return { systemMessage: null, results, explain: { warnings } };
  const lines = results.map(
    (r, i) =>
      `[${i + 1}] (document ${r.metadata.documentId}, score ${r.score.toFixed(2)}) ${r.content.replace(/\s+/g, ' ').trim()}`,
  );
  const skipped = warnings.map(
    (w) => `Not searched: knowledge base ${w.knowledgeBaseId} (${w.environment}) no longer exists.`,
  );
  return { systemMessage: [HEADER, ...lines, ...skipped].join('\n'), results, explain: { warnings } };
}
