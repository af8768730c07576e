/**
 * Composition root of the retrieval handlers: the tenancy stores of the API plus the knowledge index (Bedrock in
 * AWS, the DynamoDB chunk table on LocalStack, the runtime's embedded index locally). Nothing of extraction is
 * bundled here.
 */
import type { DefaultRetrievalDeps } from '#core/retrieval/default-retrieval';
import type { Embedder, KnowledgeIndex } from '#ports/processing';
import { agentsStore, clock, knowledgeBasesStore, retrievalConfigsStore } from './container';
import { deployedKnowledgeIndex, installedKnowledgeIndex } from './knowledge-index';
import { operationalMetrics } from './metrics';

let index: KnowledgeIndex | undefined;

export const retrievalContainer: DefaultRetrievalDeps = {
  get retrievalConfigs() {
    return retrievalConfigsStore();
  },
  clock: clock,
  get agents() {
    return agentsStore();
  },
  get knowledgeBases() {
    return knowledgeBasesStore();
  },
  get index(): KnowledgeIndex {
    index ??=
      installedKnowledgeIndex()?.index ??
      deployedKnowledgeIndex({
        chunksOf: async () => {
          throw new Error('retrieval functions only read the index');
        },
      });
    return index;
  },
  get embedder(): Embedder | null {
    return installedKnowledgeIndex()?.embedder ?? null;
  },
  get metrics() {
    return operationalMetrics();
  },
};
