/**
 * Retrieval for agent code: what a tool calls. The options are the query endpoint's; the agent, its organization
 * and the current environment and memory come from the running flow, so a tool cannot reach another tenant.
 * `knowledgeBaseId` may be left out when the agent has exactly one knowledge base (as the reference SDK allows).
 */

import { ValidationError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import type { Caller } from '#core/tenancy/tenancy';
import { requireAgent } from '#core/tenancy/tenancy';
import type { ModelProvider } from '#ports/model';
import type { FilterEntry } from './filters';
import { type GeneratedAnswer, generateWithCitations } from './generate';
import { type RetrievalDeps, type RetrievalResult, retrieve } from './retrieve';

export interface AgentContext {
  readonly caller: Caller;
  readonly agentId: string;
  readonly environment: Environment;
  /** The flow's memory: `{state.memory.x}` filter values read it. */
  readonly memory?: unknown;
}

export interface RetrieveOptions {
  readonly query: string;
  readonly knowledgeBaseId?: string;
  /** Another environment's dataset of the same knowledge base; the current one by default. */
  readonly environment?: Environment;
  readonly numberOfResults?: number;
  readonly minScore?: number;
  readonly filters?: readonly FilterEntry[];
}

async function knowledgeBaseOf(deps: RetrievalDeps, context: AgentContext, knowledgeBaseId: string | undefined) {
  if (knowledgeBaseId) return knowledgeBaseId;
  await requireAgent(deps, context.caller, context.agentId);
  const bases = await deps.knowledgeBases.list(context.agentId);
  if (bases.length === 1) return bases[0].knowledgeBaseId;
  throw new ValidationError([
    {
      field: 'knowledgeBaseId',
      rule: 'knowledgeBase.ambiguous',
      message: `knowledgeBaseId is required: the agent has ${bases.length} knowledge bases`,
    },
  ]);
}

async function retrieveHits(deps: RetrievalDeps, context: AgentContext, options: RetrieveOptions) {
  const knowledgeBaseId = await knowledgeBaseOf(deps, context, options.knowledgeBaseId);
  return retrieve(deps, context.caller, {
    agentId: context.agentId,
    environment: options.environment ?? context.environment,
    knowledgeBaseId,
    query: options.query,
    numberOfResults: options.numberOfResults,
    minScore: options.minScore,
    filters: options.filters,
    memory: context.memory,
  });
}

export async function retrieveFromKnowledgeBase(
  deps: RetrievalDeps,
  context: AgentContext,
  options: RetrieveOptions,
): Promise<RetrievalResult[]> {
  return (await retrieveHits(deps, context, options)).results;
}

/** Retrieve, then answer with citations (`citations[].resultIndex` indexes `results`); `model` null = extractive. */
export async function retrieveAndGenerateFromKnowledgeBase(
  deps: RetrievalDeps,
  context: AgentContext,
  options: RetrieveOptions,
  model: ModelProvider | null,
): Promise<GeneratedAnswer & { results: RetrievalResult[] }> {
  const { results, hits } = await retrieveHits(deps, context, options);
  return { ...(await generateWithCitations(model, options.query, hits)), results };
}
