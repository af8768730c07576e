/**
 * Composition root of the retrieval handlers: the tenancy stores of the API, the document records, plus the knowledge
 * index (Bedrock in AWS, the DynamoDB chunk table on LocalStack, the runtime's embedded index locally). Nothing of extraction is
 * bundled here.
 */
import type { DefaultRetrievalDeps } from '#core/retrieval/default-retrieval';
import type { Embedder, KnowledgeRetrieval } from '#ports/processing';
import {
  agentsStore,
  cachedAgentsStore,
  cachedKnowledgeBasesStore,
  cachedTenancyReads,
  clock,
  documentRecords,
  knowledgeBasesStore,
  retrievalConfigsStore,
} from './container';
import { installedKnowledgeIndex } from './installed-index';
import { operationalMetrics } from './metrics';
import { deployedRetrievalIndex } from './retrieval-index';

let index: KnowledgeRetrieval | undefined;

/** Retrieval reads agents and knowledge bases through the container's 5 s cache (docs/ARCHITECTURE.md, "Caches"). */
export const retrievalContainer: DefaultRetrievalDeps = {
  get retrievalConfigs() {
    return retrievalConfigsStore();
  },
  clock: clock,
  get agents() {
    return cachedAgentsStore();
  },
  get knowledgeBases() {
    return cachedKnowledgeBasesStore();
  },
  // Never cached: a document deleted is dropped from the results from its DELETE's answer on.
  get documents() {
    return documentRecords();
  },
  get index(): KnowledgeRetrieval {
    index ??= installedKnowledgeIndex()?.index ?? deployedRetrievalIndex();
    return index;
  },
  get embedder(): Embedder | null {
    return installedKnowledgeIndex()?.embedder ?? null;
  },
  get metrics() {
    return operationalMetrics();
  },
};

/** For the write of a default retrieval configuration: the agent and the knowledge bases it names, read as they are. */
export const retrievalConfigContainer: DefaultRetrievalDeps = /* @__PURE__ */ Object.create(retrievalContainer, {
  agents: { get: () => agentsStore() },
  knowledgeBases: { get: () => knowledgeBasesStore() },
});

/**
 * For the query and generate endpoints: an agent and knowledge base that neither cache holds are read together, in
 * one BatchGetItem, and kept (CachedTenancyReads). Not in the retrieval container itself, which the MCP server's and
 * the flows' bundles import: it would take the MCP server's bundle over its size budget (scripts/bundle-sizes.ts);
 * they read the two one after the other, through the same caches.
 */
export const endpointRetrievalContainer: DefaultRetrievalDeps = /* @__PURE__ */ Object.create(retrievalContainer, {
  tenancyReads: { get: () => cachedTenancyReads() },
});
