/**
 * The read half of the Bedrock knowledge index: Retrieve on the knowledge base of the query's environment, with the
 * dataset scope and the filters as Bedrock's RetrievalFilter, the results read back as chunks. The retrieval
 * functions (query, generate, the flow functions) bundle this alone; the processing worker's BedrockKnowledgeIndex
 * (bedrock-knowledge-base.ts) writes, and delegates its reads here.
 */
import {
  type BedrockAgentRuntimeClient,
  type RetrievalFilter,
  RetrieveCommand,
  type RetrieveCommandInput,
} from '@aws-sdk/client-bedrock-agent-runtime';
import type { DatasetRef } from '#core/knowledge/document';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import type { IndexFilter, IndexHit, IndexQuery, KnowledgeRetrieval } from '#ports/processing';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';
import { chunkOfResult, normalizeScore } from './bedrock-documents';
import { matches, toRetrievalFilter } from './bedrock-filters';

/** The environment variable `readKnowledgeBases` reads: JSON `{ "<environment>": { knowledgeBaseId, dataSourceId } }`. */
export const BEDROCK_KNOWLEDGE_BASES_VARIABLE = 'BEDROCK_KNOWLEDGE_BASES';

/** Retrieve returns 1 to 100 results. */
export const MAX_RETRIEVE_RESULTS = 100;

export interface BedrockKnowledgeBase {
  readonly knowledgeBaseId: string;
  readonly dataSourceId: string;
}

export type BedrockKnowledgeBases = Readonly<Record<Environment, BedrockKnowledgeBase>>;

export class BedrockRetrieval implements KnowledgeRetrieval {
  constructor(
    private readonly runtime: BedrockAgentRuntimeClient,
    private readonly knowledgeBases: BedrockKnowledgeBases,
  ) {}

  /** The Bedrock RetrievalFilter a query with this scope and these filters sends (for `explain`). */
  describeFilter(scope: DatasetRef, filters: readonly IndexFilter[]): RetrievalFilter {
    return toRetrievalFilter(scope, filters);
  }

  async query(query: IndexQuery): Promise<IndexHit[]> {
    if (!(query.limit > 0) || query.text.trim() === '') return [];
    const knowledgeBase = this.knowledgeBases[query.scope.environment];
    if (!knowledgeBase) {
      throw new Error(`No Bedrock knowledge base configured for environment "${query.scope.environment}"`);
    }
    const input: RetrieveCommandInput = {
      knowledgeBaseId: knowledgeBase.knowledgeBaseId,
      retrievalQuery: { text: query.text },
      retrievalConfiguration: {
        vectorSearchConfiguration: {
          numberOfResults: Math.min(MAX_RETRIEVE_RESULTS, Math.floor(query.limit)),
          filter: toRetrievalFilter(query.scope, query.filters),
        },
      },
    };
    const response = await this.runtime.send(new RetrieveCommand(input));
    const hits: IndexHit[] = [];
    for (const result of response.retrievalResults ?? []) {
      const chunk = chunkOfResult(result);
      if (chunk && matches(chunk, query.scope, query.filters))
        hits.push({ chunk, score: normalizeScore(result.score) });
    }
    return hits.sort((a, b) => b.score - a.score).slice(0, query.limit);
  }
}

/** Reads BEDROCK_KNOWLEDGE_BASES; a missing or malformed value fails loudly, naming the variable. */
export function readKnowledgeBases(env: EnvironmentValues = handlerEnvironment()): BedrockKnowledgeBases {
  const raw = env[BEDROCK_KNOWLEDGE_BASES_VARIABLE];
  if (raw === undefined || raw === '') {
    throw new Error(`Missing configuration: environment variable ${BEDROCK_KNOWLEDGE_BASES_VARIABLE}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`Invalid configuration: ${BEDROCK_KNOWLEDGE_BASES_VARIABLE} is not JSON`);
  }
  const result = {} as Record<Environment, BedrockKnowledgeBase>;
  for (const environment of ENVIRONMENTS) {
    const entry = (parsed as Record<string, unknown> | null)?.[environment] as Record<string, unknown> | undefined;
    const knowledgeBaseId = entry?.knowledgeBaseId;
    const dataSourceId = entry?.dataSourceId;
    if (
      typeof knowledgeBaseId !== 'string' ||
      knowledgeBaseId === '' ||
      typeof dataSourceId !== 'string' ||
      dataSourceId === ''
    ) {
      throw new Error(
        `Invalid configuration: ${BEDROCK_KNOWLEDGE_BASES_VARIABLE} needs "${environment}": { "knowledgeBaseId", "dataSourceId" }`,
      );
    }
    result[environment] = { knowledgeBaseId, dataSourceId };
  }
  return result;
}
