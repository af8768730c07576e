/**
 * Composition root of the API handlers: builds each adapter once per cold start, on first use, so a handler only
 * needs the configuration of what it touches. The SDK clients are those of ./clients, one module each.
 */
import { randomUUID } from 'node:crypto';
import { S3BlobStore } from '#adapters/blob/s3';
import { SqsProcessingQueue } from '#adapters/queue/sqs-processing';
import { CachedTenancyReads } from '#adapters/store/cached-tenancy-reads';
import { DynamoAgentStore } from '#adapters/store/dynamodb/agent-store';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import { retrievableDocuments } from '#adapters/store/dynamodb/document-records';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { DynamoRetrievalConfigStore } from '#adapters/store/dynamodb/retrieval-config-store';
import { DynamoTenancyReads } from '#adapters/store/dynamodb/tenancy-reads';
import { DynamoUploadSessionStore } from '#adapters/store/dynamodb/upload-session-store';
import { DynamoZipJobStore } from '#adapters/store/dynamodb/zip-job-store';
import { readCache } from '#adapters/store/read-cache';
import { retentionDaysFrom } from '#core/analytics/retention';
import type { KnowledgeDeps } from '#core/knowledge/knowledge-deps';
import type { AnalyticsStore } from '#ports/analytics';
import type { RetrievalConfigStore } from '#ports/retrieval-configs';
import type { BlobStore, Clock, IdGenerator, ProcessingQueue } from '#ports/services';
import type {
  AgentStore,
  DocumentStore,
  KnowledgeBaseStore,
  TenancyReads,
  TokenStore,
  UploadSessionStore,
} from '#ports/stores';
import type { ZipJobStore } from '#ports/zip-jobs';
import { config } from '#shared/config';
import { handlerVariable } from '#shared/environment';
import { dynamoDocumentClient } from './clients/dynamodb';
import { s3Client } from './clients/s3';
import { sqsClient } from './clients/sqs';
import { tokenStore } from './credential-stores';
import { operationalMetrics } from './metrics';
import { once } from './once';

// The caller, agent and knowledge base checks of the customer API's reads go through a short cache (read-cache.ts);
// every write, and every dashboard read, reads agents and knowledge bases as they are (docs/ARCHITECTURE.md, "Caches":
// a knowledge base deleted by one function accepts no document from another, whatever that one's cache holds).
// The stores a narrower root needs are exported one by one (flow-container.ts): importing `container` bundles them all.
// `@__PURE__`: a bundle drops the stores its handler never reads, and the adapters behind them.
const tokens = tokenStore;
const rawAgents = /* @__PURE__ */ once(() => new DynamoAgentStore(dynamoDocumentClient(), config.tableName('agents')));
const agentReads = /* @__PURE__ */ once(() =>
  readCache<AgentStore>(rawAgents(), { cached: ['get'], uncached: ['list', 'listDeleting'] }),
);
/** Agents read as they are; what is read is kept for the cached view of the same container. */
export const agentsStore = /* @__PURE__ */ once(() => agentReads().fresh);
/** Agents read through the container's 5 s cache: for the customer API's reads and the flow runtime. */
export const cachedAgentsStore = /* @__PURE__ */ once(() => agentReads().cached);
const rawKnowledgeBases = /* @__PURE__ */ once(
  () => new DynamoKnowledgeBaseStore(dynamoDocumentClient(), config.tableName('knowledgeBases')),
);
const knowledgeBaseReads = /* @__PURE__ */ once(() =>
  readCache<KnowledgeBaseStore>(rawKnowledgeBases(), { cached: ['get'], uncached: ['list', 'listDeleting'] }),
);
/** Knowledge bases read as they are; what is read is kept for the cached view of the same container. */
export const knowledgeBasesStore = /* @__PURE__ */ once(() => knowledgeBaseReads().fresh);
/** Knowledge bases read through the container's 5 s cache: for the customer API's reads and retrieval. */
export const cachedKnowledgeBasesStore = /* @__PURE__ */ once(() => knowledgeBaseReads().cached);
/** The agent and knowledge base of a request that changes content, as they are, in one BatchGetItem. */
const tenancyReads = /* @__PURE__ */ once(
  () => new DynamoTenancyReads(dynamoDocumentClient(), config.tableName('agents'), config.tableName('knowledgeBases')),
);
/**
 * The same through the two caches above: the customer API's reads and retrieval. What neither cache holds is read in
 * that one BatchGetItem, and kept.
 */
export const cachedTenancyReads = /* @__PURE__ */ once(
  () => new CachedTenancyReads(tenancyReads(), agentReads(), knowledgeBaseReads()),
);
const documents = /* @__PURE__ */ once(
  () => new DynamoDocumentStore(dynamoDocumentClient(), config.tableName('documents')),
);
/**
 * The document records as retrieval reads them (a hit of a deleted document is dropped at query time), without the
 * whole store: the functions that only retrieve stay small.
 */
export const documentRecords = /* @__PURE__ */ once(
  (): Pick<DocumentStore, 'retrievable'> => ({
    retrievable: (ref, documentIds) =>
      retrievableDocuments(dynamoDocumentClient(), config.tableName('documents'), ref, documentIds),
  }),
);
const uploads = /* @__PURE__ */ once(
  () => new DynamoUploadSessionStore(dynamoDocumentClient(), config.tableName('uploads')),
);
const zipJobs = /* @__PURE__ */ once(() => new DynamoZipJobStore(dynamoDocumentClient(), config.tableName('zipJobs')));
export const analyticsStore = /* @__PURE__ */ once(
  () =>
    new DynamoAnalyticsStore(dynamoDocumentClient(), config.tableName('analytics'), {
      clock,
      retentionDays: retentionDaysFrom(handlerVariable('ANALYTICS_RETENTION_DAYS')),
    }),
);
export const retrievalConfigsStore = /* @__PURE__ */ once(
  () => new DynamoRetrievalConfigStore(dynamoDocumentClient(), config.tableName('retrievalConfigs')),
);
export const blobsStore = /* @__PURE__ */ once(() => new S3BlobStore(s3Client(), config.documentsBucket()));
const queue = /* @__PURE__ */ once(() => new SqsProcessingQueue(sqsClient(), config.processingQueueUrl()));
const settings = /* @__PURE__ */ once(() => config.uploads());

export const clock: Clock = { now: () => new Date() };
export const ids: IdGenerator = { uuid: () => randomUUID() };

/**
 * The agent and knowledge base stores without the read cache: for the deletion jobs, which follow a record's own
 * progress (its page) and must read it as it is.
 */
export const uncachedStores = {
  get agents(): AgentStore {
    return rawAgents();
  },
  get knowledgeBases(): KnowledgeBaseStore {
    return rawKnowledgeBases();
  },
};

/** Dependencies by name, each built when first read. */
export const container = {
  get tokens(): TokenStore {
    return tokens();
  },
  get agents(): AgentStore {
    return agentsStore();
  },
  get knowledgeBases(): KnowledgeBaseStore {
    return knowledgeBasesStore();
  },
  get tenancyReads(): TenancyReads | undefined {
    return tenancyReads();
  },
  get documents(): DocumentStore {
    return documents();
  },
  get uploads(): UploadSessionStore {
    return uploads();
  },
  get zipJobs(): ZipJobStore {
    return zipJobs();
  },
  get analytics(): AnalyticsStore {
    return analyticsStore();
  },
  get retrievalConfigs(): RetrievalConfigStore {
    return retrievalConfigsStore();
  },
  get blobs(): BlobStore {
    return blobsStore();
  },
  get queue(): ProcessingQueue {
    return queue();
  },
  get settings() {
    return settings();
  },
  clock,
  ids,
  get metrics() {
    return operationalMetrics();
  },
} satisfies KnowledgeDeps & { tokens: TokenStore; analytics: AnalyticsStore; retrievalConfigs: RetrievalConfigStore };

/**
 * The same dependencies, with agents and knowledge bases read through the container's 5 s cache: for the customer
 * API's reads (a document, a list, a ZIP job), which may see a change made by another function up to 5 s late.
 */
export const readContainer: typeof container = /* @__PURE__ */ Object.create(container, {
  agents: { get: () => cachedAgentsStore() },
  knowledgeBases: { get: () => cachedKnowledgeBasesStore() },
  // Through the caches above, not around them.
  tenancyReads: { get: () => cachedTenancyReads() },
});
