/**
 * What is left of a knowledge base in the engines of a local runtime (its DATA_DIR), read past the API: records in
 * the documents, knowledgeBases and zipJobs tables, objects in the bucket under its prefixes, chunks in the LanceDB
 * index. The deletion tests assert all of it is gone, and a control knowledge base's is not.
 */
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { DynamoDocumentStore, tenantKey } from '#adapters/store/dynamodb/document-store';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import { readEnginesFile } from '../../lib/local/data-folder';
import { LOCAL_REGION } from '../../lib/local/engine-credentials';
import { DOCUMENTS_BUCKET } from '../../lib/local/engines';

export interface Remains {
  readonly documents: Record<Environment, number>;
  /** The counters items (documentId `#counts`) of its datasets, one per environment that ever held a document. */
  readonly counters: number;
  readonly objects: readonly string[];
  readonly chunks: Record<Environment, number>;
  readonly knowledgeBaseRow: boolean;
  /** Job items (jobs and their file entries) of the zipJobs table that belong to the knowledge base. */
  readonly zipJobItems: number;
}

export interface EngineReader {
  /** `zipJobIds`: jobs known to be the knowledge base's (their file entries count even without their job item). */
  remains(agentId: string, knowledgeBaseId: string, zipJobIds?: readonly string[]): Promise<Remains>;
  /** The document client on the runtime's DynamoDB, tables named by their logical names. */
  readonly dynamo: DynamoDBDocumentClient;
  /** The runtime's S3 (bucket DOCUMENTS_BUCKET). */
  readonly s3: S3Client;
  close(): void;
}

export function engineReader(dataDir: string): EngineReader {
  const engines = readEnginesFile(dataDir);
  const dynamo = DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: engines.dynamodbEndpoint, region: LOCAL_REGION, credentials: engines.credentials }),
  );
  const s3 = new S3Client({
    endpoint: engines.s3Endpoint,
    region: LOCAL_REGION,
    forcePathStyle: true,
    credentials: engines.credentials,
  });
  const documents = new DynamoDocumentStore(dynamo, engines.tableNames.documents);
  const countIn = async <T>(items: AsyncIterable<T>) => {
    let count = 0;
    for await (const _ of items) count += 1;
    return count;
  };
  return {
    dynamo,
    s3,
    async remains(agentId, knowledgeBaseId, zipJobIds = []) {
      const perEnvironment = async (count: (environment: Environment) => Promise<number>) =>
        Object.fromEntries(
          await Promise.all(ENVIRONMENTS.map(async (environment) => [environment, await count(environment)])),
        ) as Record<Environment, number>;
      const docs = await perEnvironment((environment) =>
        countIn(documents.listDataset({ agentId, environment, knowledgeBaseId })),
      );
      const objects: string[] = [];
      for (const environment of ENVIRONMENTS) {
        let ContinuationToken: string | undefined;
        do {
          const page = await s3.send(
            new ListObjectsV2Command({
              Bucket: DOCUMENTS_BUCKET,
              Prefix: `${agentId}/${environment}/${knowledgeBaseId}/`,
              ContinuationToken,
            }),
          );
          objects.push(...(page.Contents ?? []).map((object) => object.Key ?? ''));
          ContinuationToken = page.NextContinuationToken;
        } while (ContinuationToken);
      }
      // Another process (the worker) writes the index; reading it from here sees what it committed.
      const index = await LanceKnowledgeIndex.open(join(dataDir, 'index'));
      const chunks = await perEnvironment(
        async (environment) => (await index.listChunks({ agentId, environment, knowledgeBaseId })).length,
      );
      await index.close();
      const { Item } = await dynamo.send(
        new GetCommand({ TableName: engines.tableNames.knowledgeBases, Key: { agentId, knowledgeBaseId } }),
      );
      let zipJobItems = 0;
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      const jobsOfKb = new Set<string>(zipJobIds);
      const items: Record<string, unknown>[] = [];
      do {
        const page = await dynamo.send(new ScanCommand({ TableName: engines.tableNames.zipJobs, ExclusiveStartKey }));
        items.push(...(page.Items ?? []));
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
      for (const item of items) {
        if (item.agentId === agentId && item.knowledgeBaseId === knowledgeBaseId) jobsOfKb.add(String(item.zipJobId));
      }
      for (const item of items) if (jobsOfKb.has(String(item.zipJobId))) zipJobItems += 1;
      let counters = 0;
      for (const environment of ENVIRONMENTS) {
        const key = { tenantKey: tenantKey({ agentId, environment, knowledgeBaseId }), documentId: '#counts' };
        const found = await dynamo.send(new GetCommand({ TableName: engines.tableNames.documents, Key: key }));
        if (found.Item) counters += 1;
      }
      return { documents: docs, counters, objects, chunks, knowledgeBaseRow: Item !== undefined, zipJobItems };
    },
    close() {
      dynamo.destroy();
      s3.destroy();
    },
  };
}

/** What a knowledge base deleted to the last trace looks like. */
export const NOTHING_LEFT: Remains = {
  documents: { development: 0, staging: 0, production: 0 },
  counters: 0,
  objects: [],
  chunks: { development: 0, staging: 0, production: 0 },
  knowledgeBaseRow: false,
  zipJobItems: 0,
};
