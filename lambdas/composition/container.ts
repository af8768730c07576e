/**
 * Composition root of the API handlers: builds each adapter once per cold start, on first use, so a handler only
 * needs the configuration of what it touches. The SDK clients are those of ./clients, one module each.
 */
import { randomUUID } from 'node:crypto';
import { S3BlobStore } from '#adapters/blob/s3';
import { SqsProcessingQueue } from '#adapters/queue/sqs-processing';
import { DynamoAgentStore } from '#adapters/store/dynamodb/agent-store';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { DynamoRetrievalConfigStore } from '#adapters/store/dynamodb/retrieval-config-store';
import { DynamoTokenStore } from '#adapters/store/dynamodb/token-store';
import { DynamoUploadSessionStore } from '#adapters/store/dynamodb/upload-session-store';
import { DynamoZipJobStore } from '#adapters/store/dynamodb/zip-job-store';
import { withReadCache } from '#adapters/store/read-cache';
import { retentionDaysFrom } from '#core/analytics/retention';
import type { KnowledgeDeps } from '#core/knowledge/knowledge-deps';
import type { AnalyticsStore } from '#ports/analytics';
import type { RetrievalConfigStore } from '#ports/retrieval-configs';
import type { BlobStore, Clock, IdGenerator, ProcessingQueue } from '#ports/services';
import type { AgentStore, DocumentStore, KnowledgeBaseStore, TokenStore, UploadSessionStore } from '#ports/stores';
import type { ZipJobStore } from '#ports/zip-jobs';
import { config } from '#shared/config';
import { handlerVariable } from '#shared/environment';
import { dynamoDocumentClient } from './clients/dynamodb';
import { s3Client } from './clients/s3';
import { sqsClient } from './clients/sqs';
import { operationalMetrics } from './metrics';
import { once } from './once';

// The caller, agent and knowledge base checks of every request read these through a short cache (read-cache.ts).
const tokens = once(() =>
  withReadCache<TokenStore>(new DynamoTokenStore(dynamoDocumentClient(), config.tableName('tokens')), {
    cached: ['getByHash'],
    uncached: ['list', 'getById'],
  }),
);
const rawAgents = once(() => new DynamoAgentStore(dynamoDocumentClient(), config.tableName('agents')));
const agents = once(() =>
  withReadCache<AgentStore>(rawAgents(), { cached: ['get'], uncached: ['list', 'listDeleting'] }),
);
const rawKnowledgeBases = once(
  () => new DynamoKnowledgeBaseStore(dynamoDocumentClient(), config.tableName('knowledgeBases')),
);
const knowledgeBases = once(() =>
  withReadCache<KnowledgeBaseStore>(rawKnowledgeBases(), { cached: ['get'], uncached: ['list', 'listDeleting'] }),
);
const documents = once(() => new DynamoDocumentStore(dynamoDocumentClient(), config.tableName('documents')));
const uploads = once(() => new DynamoUploadSessionStore(dynamoDocumentClient(), config.tableName('uploads')));
const zipJobs = once(() => new DynamoZipJobStore(dynamoDocumentClient(), config.tableName('zipJobs')));
const analytics = once(
  () =>
    new DynamoAnalyticsStore(dynamoDocumentClient(), config.tableName('analytics'), {
      clock,
      retentionDays: retentionDaysFrom(handlerVariable('ANALYTICS_RETENTION_DAYS')),
    }),
);
const retrievalConfigs = once(
  () => new DynamoRetrievalConfigStore(dynamoDocumentClient(), config.tableName('retrievalConfigs')),
);
const blobs = once(() => new S3BlobStore(s3Client(), config.documentsBucket()));
const queue = once(() => new SqsProcessingQueue(sqsClient(), config.processingQueueUrl()));
const settings = once(() => config.uploads());

const clock: Clock = { now: () => new Date() };
const ids: IdGenerator = { uuid: () => randomUUID() };

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
    return agents();
  },
  get knowledgeBases(): KnowledgeBaseStore {
    return knowledgeBases();
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
    return analytics();
  },
  get retrievalConfigs(): RetrievalConfigStore {
    return retrievalConfigs();
  },
  get blobs(): BlobStore {
    return blobs();
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
