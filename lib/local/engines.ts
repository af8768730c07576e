/**
 * The embedded engines of the local runtime: DynamoDB (dynalite, LevelDB on disk), S3 (s3rver on disk, behind a
 * SigV4 check), SQS (fauxqs, in memory), and the forwarding of S3 object-created events into the processing queue,
 * as the S3 → SQS notification does in AWS.
 */
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DynamoDBClient,
  type KeySchemaElement,
  ListTablesCommand,
  type Projection,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import dynalite from 'dynalite';
import S3rver from 's3rver';
import type { TableName } from '../routes';
import { TABLES, type TableSchema } from '../tables';
import { startS3SignatureProxy } from './s3-signature-proxy';

/** s3rver's fixed credentials; the signature proxy checks requests against them. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;
export const LOCAL_REGION = 'us-east-1';
export const DOCUMENTS_BUCKET = 'documents';
export const PROCESSING_QUEUE = 'processing';
export const PROCESSING_DLQ = 'processing-dlq';

export interface EngineOptions {
  readonly dataDir: string;
  readonly host: string;
  /** Port of the S3 endpoint pre-signed URLs point at; 0 picks a free one. */
  readonly s3Port: number;
  /**
   * How long a received processing message stays invisible before it is delivered again (default 60 s): what a
   * worker killed mid-batch costs before another picks its messages up.
   */
  readonly visibilityTimeoutSeconds?: number;
}

/** The default visibility timeout of the local processing queue. */
export const DEFAULT_VISIBILITY_TIMEOUT_SECONDS = 60;

/** Where the engines answer: what a handler, or a worker in another process, needs to reach them. */
export interface EngineEndpoints {
  readonly dynamodbEndpoint: string;
  readonly s3Endpoint: string;
  readonly sqsEndpoint: string;
  readonly processingQueueUrl: string;
  readonly deadLetterQueueUrl: string;
  /** Physical table name of each logical table. */
  readonly tableNames: Record<TableName, string>;
}

export interface Engines extends EngineEndpoints {
  stop(): Promise<void>;
}

function listen(server: Server, host: string, port = 0): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server.address() as AddressInfo));
  });
}

/** The CreateTable request of a table of lib/tables.ts: the same keys and indexes the stack creates. */
export function createTableInput(name: string, schema: TableSchema): CreateTableCommandInput {
  const types = new Map<string, 'S' | 'N'>([[schema.partitionKey, 'S']]);
  const keySchema = (pk: string, sk?: string): KeySchemaElement[] =>
    sk
      ? [
          { AttributeName: pk, KeyType: 'HASH' },
          { AttributeName: sk, KeyType: 'RANGE' },
        ]
      : [{ AttributeName: pk, KeyType: 'HASH' }];
  if (schema.sortKey) types.set(schema.sortKey, schema.sortKeyType ?? 'S');
  const indexes = (schema.indexes ?? []).map((index) => {
    types.set(index.partitionKey.name, index.partitionKey.type ?? 'S');
    if (index.sortKey) types.set(index.sortKey.name, index.sortKey.type ?? 'S');
    const projection: Projection =
      index.nonKeyAttributes === undefined
        ? { ProjectionType: 'ALL' }
        : index.nonKeyAttributes.length === 0
          ? { ProjectionType: 'KEYS_ONLY' }
          : { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.nonKeyAttributes] };
    return {
      IndexName: index.indexName,
      KeySchema: keySchema(index.partitionKey.name, index.sortKey?.name),
      Projection: projection,
    };
  });
  return {
    TableName: name,
    KeySchema: keySchema(schema.partitionKey, schema.sortKey),
    AttributeDefinitions: [...types].map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType })),
    BillingMode: 'PAY_PER_REQUEST',
    ...(indexes.length ? { GlobalSecondaryIndexes: indexes } : {}),
  };
}

async function createTables(endpoint: string): Promise<Record<TableName, string>> {
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  const existing = new Set((await client.send(new ListTablesCommand({}))).TableNames ?? []);
  const names = {} as Record<TableName, string>;
  for (const [logical, schema] of Object.entries(TABLES) as [TableName, TableSchema][]) {
    names[logical] = logical;
    if (!existing.has(logical)) {
      await client.send(new CreateTableCommand(createTableInput(logical, schema)));
      continue;
    }
    // dynalite cannot add an index to an existing table: a data folder made before an index was added lacks it.
    const { Table } = await client.send(new DescribeTableCommand({ TableName: logical }));
    const present = new Set((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
    for (const { indexName } of schema.indexes ?? []) {
      if (present.has(indexName)) continue;
      console.warn(
        `The ${logical} table of this DATA_DIR predates its index ${indexName}: what reads that index (the watchdog, the scheduler) fails until the data folder is made anew.`,
      );
    }
  }
  client.destroy();
  return names;
}

export async function startEngines(options: EngineOptions): Promise<Engines> {
  const visibilityTimeout = options.visibilityTimeoutSeconds ?? DEFAULT_VISIBILITY_TIMEOUT_SECONDS;
  if (!Number.isInteger(visibilityTimeout) || visibilityTimeout < 1 || visibilityTimeout > 43_200) {
    throw new Error(`The visibility timeout must be 1 to 43200 seconds, got ${visibilityTimeout}`);
  }
  const stops: (() => Promise<unknown>)[] = [];
  try {
    mkdirSync(join(options.dataDir, 'dynamodb'), { recursive: true });
    mkdirSync(join(options.dataDir, 's3'), { recursive: true });

    const dynamo = dynalite({
      path: join(options.dataDir, 'dynamodb'),
      createTableMs: 0,
      deleteTableMs: 0,
      updateTableMs: 0,
    });
    const dynamoAddress = await listen(dynamo, options.host);
    stops.push(() => new Promise((resolve) => dynamo.close(resolve)));
    const dynamodbEndpoint = `http://${options.host}:${dynamoAddress.port}`;
    const tableNames = await createTables(dynamodbEndpoint);

    // fauxqs is published as ES modules only. Its app is bound to loopback here (startFauxqs binds 0.0.0.0).
    const { buildApp } = await import('fauxqs');
    const sqsApp = buildApp({ logger: false });
    await sqsApp.listen({ port: 0, host: options.host });
    stops.push(() => sqsApp.close());
    const sqsEndpoint = `http://${options.host}:${(sqsApp.server.address() as AddressInfo).port}`;
    const sqs = new SQSClient({ endpoint: sqsEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    stops.push(async () => sqs.destroy());
    const deadLetterQueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: PROCESSING_DLQ })))
      .QueueUrl as string;
    const deadLetterArn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: deadLetterQueueUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes?.QueueArn as string;
    const processingQueueUrl = (
      await sqs.send(
        new CreateQueueCommand({
          QueueName: PROCESSING_QUEUE,
          Attributes: {
            VisibilityTimeout: String(visibilityTimeout),
            RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetterArn, maxReceiveCount: '3' }),
          },
        }),
      )
    ).QueueUrl as string;

    const s3 = new S3rver({
      port: 0,
      address: options.host,
      silent: true,
      directory: join(options.dataDir, 's3'),
      configureBuckets: [{ name: DOCUMENTS_BUCKET }],
    });
    const s3Address = await s3.run();
    stops.push(() => s3.close());
    // S3 → SQS notification: the same JSON body S3 sends for ObjectCreated events.
    s3.on('event', (event: { Records: { eventName: string }[] }) => {
      const created = event.Records.filter((record) => record.eventName.startsWith('ObjectCreated:'));
      if (created.length === 0) return;
      sqs
        .send(
          new SendMessageCommand({ QueueUrl: processingQueueUrl, MessageBody: JSON.stringify({ Records: created }) }),
        )
        .catch((error: unknown) => console.error('could not forward an S3 event to the processing queue', error));
    });

    const proxy = await startS3SignatureProxy({
      upstream: `http://${options.host}:${s3Address.port}`,
      credentials: LOCAL_CREDENTIALS,
      region: LOCAL_REGION,
      host: options.host,
      port: options.s3Port,
    });
    stops.push(() => proxy.close());

    return {
      dynamodbEndpoint,
      s3Endpoint: proxy.url,
      sqsEndpoint,
      processingQueueUrl,
      deadLetterQueueUrl,
      tableNames,
      stop: async () => {
        for (const stop of stops.reverse()) await stop().catch(() => undefined);
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw error;
  }
}
