/**
 * Composition root: builds each adapter once per cold start, on first use, so a handler only needs the
 * configuration of what it touches. AWS clients read endpoints from the standard variables
 * (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_SQS), which is how the local runtime points them
 * at its engines.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3BlobStore } from '../adapters/blob/s3';
import { SqsProcessingQueue } from '../adapters/queue/sqs-processing';
import { DynamoAnalyticsStore } from '../adapters/store/dynamodb/analytics-store';
import {
  DynamoAgentStore,
  DynamoDocumentStore,
  DynamoKnowledgeBaseStore,
  DynamoTokenStore,
  DynamoUploadSessionStore,
  DynamoZipJobStore,
} from '../adapters/store/dynamodb/stores';
import { retentionDaysFrom } from '../core/analytics/retention';
import type { KnowledgeDeps } from '../core/knowledge/documents';
import type { AnalyticsStore } from '../ports/analytics';
import type { BlobStore, Clock, IdGenerator, ProcessingQueue } from '../ports/services';
import type { AgentStore, DocumentStore, KnowledgeBaseStore, TokenStore, UploadSessionStore } from '../ports/stores';
import type { ZipJobStore } from '../ports/zip-jobs';
import { config } from './config';

export function once<T>(build: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= build();
    return value;
  };
}

const dynamo = once(() =>
  DynamoDBDocumentClient.from(new DynamoDBClient({}), {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  }),
);
/** The one DynamoDB document client of this process, for composition roots that add their own stores. */
export const dynamoDocumentClient = dynamo;

const s3 = once(
  () =>
    new S3Client({
      forcePathStyle: config.s3ForcePathStyle(),
      // Without this the SDK signs a checksum of an empty body into pre-signed URLs, which S3 then rejects.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    }),
);
// Send to the configured (or regional) endpoint, not to the host inside the queue URL: the local engine names its
// queues `sqs.<region>.localhost`, which is not resolvable everywhere.
const sqs = once(() => new SQSClient({ useQueueUrlAsEndpoint: false }));

const tokens = once(() => new DynamoTokenStore(dynamo(), config.tableName('tokens')));
const agents = once(() => new DynamoAgentStore(dynamo(), config.tableName('agents')));
const knowledgeBases = once(() => new DynamoKnowledgeBaseStore(dynamo(), config.tableName('knowledgeBases')));
const documents = once(() => new DynamoDocumentStore(dynamo(), config.tableName('documents')));
const uploads = once(() => new DynamoUploadSessionStore(dynamo(), config.tableName('uploads')));
const zipJobs = once(() => new DynamoZipJobStore(dynamo(), config.tableName('zipJobs')));
const analytics = once(
  () =>
    new DynamoAnalyticsStore(dynamo(), config.tableName('analytics'), {
      clock,
      retentionDays: retentionDaysFrom(process.env.ANALYTICS_RETENTION_DAYS),
    }),
);
const blobs = once(() => new S3BlobStore(s3(), config.documentsBucket()));
const queue = once(() => new SqsProcessingQueue(sqs(), config.processingQueueUrl()));
const settings = once(() => config.uploads());

const clock: Clock = { now: () => new Date() };
const ids: IdGenerator = { uuid: () => randomUUID() };

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
} satisfies KnowledgeDeps & { tokens: TokenStore; analytics: AnalyticsStore };
