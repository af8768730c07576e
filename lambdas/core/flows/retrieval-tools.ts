/**
 * The built-in tools `retrieveFromKnowledgeBase` and `retrieveAndGenerateFromKnowledgeBase`: the agent-code helpers
 * of core/retrieval/agent-helpers.ts, called from a flow (a tool node, or a prompt node's scoped call). The agent,
 * its organization, the environment and the memory come from the session, so a definition can only reach its own
 * agent's knowledge bases; the parameters are the query endpoint's and are checked by the same rules.
 */
import * as z from 'zod';
import { AppError, ValidationError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import { uuid } from '#core/knowledge/fields';
import { retrieveAndGenerateFromKnowledgeBase, retrieveFromKnowledgeBase } from '#core/retrieval/agent-helpers';
import { filterEntrySchema } from '#core/retrieval/filters';
import { MAX_NUMBER_OF_RESULTS, type RetrievalDeps } from '#core/retrieval/retrieve';
import { issuesToDetails } from '#core/validation';
import type { ModelProvider } from '#ports/model';

export const RETRIEVAL_TOOLS = ['retrieveFromKnowledgeBase', 'retrieveAndGenerateFromKnowledgeBase'] as const;
export type RetrievalToolName = (typeof RETRIEVAL_TOOLS)[number];

export function isRetrievalTool(name: string): name is RetrievalToolName {
  return (RETRIEVAL_TOOLS as readonly string[]).includes(name);
}

/** What the retrieval tools read: the knowledge index with its stores, and the model that generates (null: extractive). */
export interface RetrievalToolDeps {
  readonly knowledge: RetrievalDeps;
  readonly generateModel: ModelProvider | null;
}

export interface RetrievalToolScope {
  readonly organizationId: string;
  readonly agentId: string;
  readonly environment: Environment;
  readonly memory: Readonly<Record<string, unknown>>;
}

/** The query endpoint's options, as tool parameters (the agent and environment are the session's). */
const parametersSchema = z.strictObject({
  query: z.string().trim().min(1).max(2000),
  knowledgeBaseId: uuid.optional(),
  numberOfResults: z.number().int().min(1).max(MAX_NUMBER_OF_RESULTS).optional(),
  minScore: z.number().min(0).max(1).optional(),
  filters: z.array(filterEntrySchema).max(20).optional(),
});

/**
 * Runs one retrieval tool. Parameters that break a rule, or a knowledgeBaseId left out when the agent does not
 * have exactly one knowledge base, fail with TOOL_PARAMETERS_INVALID naming the field and the rule; another
 * agent's (or a missing) knowledge base is KNOWLEDGE_BASE_NOT_FOUND, as on the query endpoint.
 */
export async function runRetrievalTool(
  deps: RetrievalToolDeps,
  toolName: RetrievalToolName,
  parameters: Record<string, unknown>,
  scope: RetrievalToolScope,
): Promise<Record<string, unknown>> {
  const parsed = parametersSchema.safeParse(withTextFilterValues(parameters));
  if (!parsed.success) throw invalid(toolName, new ValidationError(issuesToDetails(parsed.error.issues, parameters)));
  const context = {
    // The flow runtime acts for the agent's organization; it is no token, so it carries no scope.
    caller: { organizationId: scope.organizationId, tokenId: 'flow-runtime', scopes: [] },
    agentId: scope.agentId,
    environment: scope.environment,
    memory: scope.memory,
  };
  try {
    if (toolName === 'retrieveFromKnowledgeBase') {
      return { results: await retrieveFromKnowledgeBase(deps.knowledge, context, parsed.data) };
    }
    const generated = await retrieveAndGenerateFromKnowledgeBase(
      deps.knowledge,
      context,
      parsed.data,
      deps.generateModel,
    );
    return {
      answer: generated.answer,
      citations: generated.citations,
      results: generated.results,
      model: deps.generateModel?.name ?? 'extractive',
    };
  } catch (error) {
    if (error instanceof ValidationError) throw invalid(toolName, error);
    throw error;
  }
}

/**
 * A filter value that is exactly one flow placeholder keeps its value's type when the node's parameters are
 * rendered (`"{memory.tier}"` → 3); filters compare text, so a number or boolean is used as its text.
 */
function withTextFilterValues(parameters: Record<string, unknown>): Record<string, unknown> {
  const { filters } = parameters;
  if (!Array.isArray(filters)) return parameters;
  return {
    ...parameters,
    filters: filters.map((entry: unknown) => {
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return entry;
      const { value } = entry as { value?: unknown };
      return typeof value === 'number' || typeof value === 'boolean' ? { ...entry, value: String(value) } : entry;
    }),
  };
}

/** Every problem in the message (a session's error has a code and a message only), each with its field's rule. */
function invalid(toolName: string, error: ValidationError): AppError {
  const problems = error.details.map((d) => `${d.message ?? d.field} (${d.field || 'parameters'}: ${d.rule})`);
  return new AppError(422, 'TOOL_PARAMETERS_INVALID', `${toolName}: ${problems.join('; ')}`, error.details);
}
