/**
 * The embedded engines of the local runtime: DynamoDB (dynalite, LevelDB on disk), S3 (s3rver on disk, behind a
 * SigV4 check), SQS (fauxqs, in memory: the processing queue and the flow runner's, each with its dead-letter queue),
 * and the forwarding of S3 object-created events into the processing queue, as the S3 → SQS notification does in AWS.
 *
 * Every engine asks for the credentials of its data folder (random, made at its first start, DATA_DIR/
 * engine-credentials.json, mode 0600): neither dynalite nor fauxqs checks a signature itself, so a SigV4 check runs
 * in front of their handlers, and s3rver answers only on a Unix socket in a private directory, behind the proxy
 * (engine-credentials.ts; s3rver's object store made atomic: s3rver-store.ts).
 */

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
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
import { config } from '#shared/config';
import type { TableName } from '../routes';
import { TABLES, type TableSchema } from '../tables';
import { createDynalite } from './dynalite-store';
import { cacheDynaliteTables } from './dynalite-table-cache';
import { serveTransactions } from './dynamo-transactions';
import {
  guardServer,
  LOCAL_REGION,
  type LocalCredentials,
  loadEngineCredentials,
  makePrivate,
} from './engine-credentials';
import { startS3SignatureProxy } from './s3-signature-proxy';
import S3rver from './s3rver';
import { cacheBucketConfiguration, type S3rverInternals, storeObjectsSafely } from './s3rver-store';

export const DOCUMENTS_BUCKET = 'documents';

export const PROCESSING_QUEUE = 'processing';

export const PROCESSING_DLQ = 'processing-dlq';

/** The flow runner's queue (docs/flows.md, "Long runs") and its dead-letter queue, as the stack makes them. */
export const FLOW_RUN_QUEUE = 'flow-runs';

export const FLOW_RUN_DLQ = 'flow-runs-dlq';

/** The status webhooks' queue (docs/webhooks.md) and its dead-letter queue, as the stack makes them. */
export const WEBHOOK_QUEUE = 'webhooks';

export const WEBHOOK_DLQ = 'webhooks-dlq';

/** Receives of a webhook message before the dead-letter queue (WebhookDelivery in the stack: the same). */
export const WEBHOOK_MAX_RECEIVES = 5;

/** Visibility timeout of the local webhook queue: longer than one attempt may take (WEBHOOK_TIMEOUT_MS). */
export const WEBHOOK_VISIBILITY_TIMEOUT_SECONDS = 60;

/** Receives of a flow run message before it moves to the dead-letter queue (FlowRunner in the stack: the same). */
export const FLOW_RUN_MAX_RECEIVES = 5;

/** Receives of a processing message before the dead-letter queue (PROCESSING_MAX_RECEIVES in the stack: the same). */
export const PROCESSING_MAX_RECEIVES = 5;

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
  /** Most bytes one request may store through the local S3 endpoint (default defaultMaxUploadBytes()). */
  readonly maxUploadBytes?: number;
  /** The same for the flow runner's queue (default 60 s): what a runner killed mid-run costs before another goes on. */
  readonly flowRunVisibilityTimeoutSeconds?: number;
  /**
   * The object-created notification's key filter (S3's `prefix` and `suffix` rules): only keys that match are
   * forwarded, as S3 does. None by default (the local runtime's bucket notifies every key, as the stack's does).
   */
  readonly notificationFilter?: NotificationFilter;
  /** Told of each object-created event the filter kept from the queue (the stack check reports it). */
  readonly onNotificationFiltered?: (key: string) => void;
}

/** S3 notification filter rules: a key matches when it starts with `prefix` and ends with `suffix` (either absent). */
export interface NotificationFilter {
  readonly prefix?: string;
  readonly suffix?: string;
}

/** Whether S3 would notify for `key` under `filter`. */
export function notificationMatches(filter: NotificationFilter | undefined, key: string): boolean {
  return key.startsWith(filter?.prefix ?? '') && key.endsWith(filter?.suffix ?? '');
}

/**
 * What one PUT to the local S3 endpoint may store unless MAX_UPLOAD_BYTES says otherwise: the larger of the file
 * limit (MAX_FILE_BYTES, 50 MB) and the archive limit (ZIP_MAX_ARCHIVE_BYTES, 256 MiB), so 256 MiB by default. In
 * AWS, S3 allows 5 GiB; what bounds an upload there is the size signed into its URL.
 */
export function defaultMaxUploadBytes(): number {
  const { maxFileBytes, maxArchiveBytes } = config.uploads();
  return Math.max(maxFileBytes, maxArchiveBytes);
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
  readonly flowRunQueueUrl: string;
  readonly flowRunDeadLetterQueueUrl: string;
  readonly webhookQueueUrl: string;
  readonly webhookDeadLetterQueueUrl: string;
  /** Physical table name of each logical table. */
  readonly tableNames: Record<TableName, string>;
  /** What every engine checks a request's signature against. */
  readonly credentials: LocalCredentials;
}

export interface Engines extends EngineEndpoints {
  stop(): Promise<void>;
}

export function listen(server: Server, host: string, port = 0): Promise<AddressInfo> {
  // Longer than the SDK clients keep an idle socket: a server closing one (5 s by default) as a client reuses it, on
  // a busy event loop, is an ECONNRESET for that request (seen once under the ingestion benchmark).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
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

async function createTables(endpoint: string, credentials: LocalCredentials): Promise<Record<TableName, string>> {
  // A copy: the SDK writes its own bookkeeping into the credentials object it is given.
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: { ...credentials } });
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
  const flowRunVisibilityTimeout = options.flowRunVisibilityTimeoutSeconds ?? DEFAULT_VISIBILITY_TIMEOUT_SECONDS;
  for (const seconds of [visibilityTimeout, flowRunVisibilityTimeout]) {
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 43_200) {
      throw new Error(`The visibility timeout must be 1 to 43200 seconds, got ${seconds}`);
    }
  }
  const stops: (() => Promise<unknown>)[] = [];
  try {
    // The files of every organization live here: owner-only, whatever the umask.
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    makePrivate(options.dataDir, 0o700);
    const credentials = loadEngineCredentials(options.dataDir);
    mkdirSync(join(options.dataDir, 'dynamodb'), { recursive: true });
    mkdirSync(join(options.dataDir, 's3'), { recursive: true });
    // Objects are written here first and renamed into DATA_DIR/s3 once complete (same file system).
    const incoming = join(options.dataDir, 's3-incoming');
    rmSync(incoming, { recursive: true, force: true });
    mkdirSync(incoming, { recursive: true });

    cacheDynaliteTables();
    const dynamo = createDynalite({
      path: join(options.dataDir, 'dynamodb'),
      createTableMs: 0,
      deleteTableMs: 0,
      updateTableMs: 0,
    });
    // Transactions first: the signature check then guards them with the rest.
    serveTransactions(dynamo);
    guardServer(dynamo, credentials, 'dynamodb');
    const dynamoAddress = await listen(dynamo, options.host);
    stops.push(() => new Promise((resolve) => dynamo.close(resolve)));
    const dynamodbEndpoint = `http://${options.host}:${dynamoAddress.port}`;
    const tableNames = await createTables(dynamodbEndpoint, credentials);

    // fauxqs is published as ES modules only. Its app is bound to loopback here (startFauxqs binds 0.0.0.0).
    const { buildApp } = await import('fauxqs');
    const sqsApp = buildApp({ logger: false });
    guardServer(sqsApp.server, credentials, 'sqs');
    await sqsApp.listen({ port: 0, host: options.host });
    stops.push(() => sqsApp.close());
    const sqsEndpoint = `http://${options.host}:${(sqsApp.server.address() as AddressInfo).port}`;
    const sqs = new SQSClient({ endpoint: sqsEndpoint, region: LOCAL_REGION, credentials: { ...credentials } });
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
            RedrivePolicy: JSON.stringify({
              deadLetterTargetArn: deadLetterArn,
              maxReceiveCount: String(PROCESSING_MAX_RECEIVES),
            }),
          },
        }),
      )
    ).QueueUrl as string;
    const flowRunDeadLetterQueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: FLOW_RUN_DLQ })))
      .QueueUrl as string;
    const flowRunDeadLetterArn = (
      await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: flowRunDeadLetterQueueUrl, AttributeNames: ['QueueArn'] }),
      )
    ).Attributes?.QueueArn as string;
    const flowRunQueueUrl = (
      await sqs.send(
        new CreateQueueCommand({
          QueueName: FLOW_RUN_QUEUE,
          Attributes: {
            VisibilityTimeout: String(flowRunVisibilityTimeout),
            RedrivePolicy: JSON.stringify({
              deadLetterTargetArn: flowRunDeadLetterArn,
              maxReceiveCount: String(FLOW_RUN_MAX_RECEIVES),
            }),
          },
        }),
      )
    ).QueueUrl as string;

    const webhookDeadLetterQueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: WEBHOOK_DLQ })))
      .QueueUrl as string;
    const webhookDeadLetterArn = (
      await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: webhookDeadLetterQueueUrl, AttributeNames: ['QueueArn'] }),
      )
    ).Attributes?.QueueArn as string;
    const webhookQueueUrl = (
      await sqs.send(
        new CreateQueueCommand({
          QueueName: WEBHOOK_QUEUE,
          Attributes: {
            VisibilityTimeout: String(WEBHOOK_VISIBILITY_TIMEOUT_SECONDS),
            RedrivePolicy: JSON.stringify({
              deadLetterTargetArn: webhookDeadLetterArn,
              maxReceiveCount: String(WEBHOOK_MAX_RECEIVES),
            }),
          },
        }),
      )
    ).QueueUrl as string;

    const s3 = new S3rver({
      silent: true,
      directory: join(options.dataDir, 's3'),
      configureBuckets: [{ name: DOCUMENTS_BUCKET }],
    });
    const s3rver = s3 as unknown as S3rverInternals;
    storeObjectsSafely(s3, incoming);
    cacheBucketConfiguration(s3);
    // s3rver serves anyone who reaches it, signed or not: it listens on a socket in a directory only this user may
    // enter (mkdtemp makes it 0700), so the proxy is the only way in.
    const socketDirectory = mkdtempSync(join(tmpdir(), 'aps-s3-'));
    stops.push(async () => rmSync(socketDirectory, { recursive: true, force: true }));
    const socketPath = join(socketDirectory, 's3rver.sock');
    await s3rver.configureBuckets();
    s3rver.httpServer = await s3rver.listen(socketPath);
    // As listen() below does for the other servers: the proxy's keep-alive agent reuses idle sockets, and s3rver's
    // server closing one after its default 5 s, as the proxy sends on it, was a PUT answered 500 "read ECONNRESET"
    // (seen once in CI).
    s3rver.httpServer.keepAliveTimeout = 65_000;
    s3rver.httpServer.headersTimeout = 66_000;
    stops.push(() => s3.close());
    // S3 → SQS notification: the same JSON body S3 sends for ObjectCreated events.
    s3.on('event', (event: { Records: { eventName: string; s3: { object: { key: string } } }[] }) => {
      const created = event.Records.filter((record) => {
        if (!record.eventName.startsWith('ObjectCreated:')) return false;
        if (notificationMatches(options.notificationFilter, record.s3.object.key)) return true;
        options.onNotificationFiltered?.(record.s3.object.key);
        return false;
      });
      if (created.length === 0) return;
      sqs
        .send(
          new SendMessageCommand({ QueueUrl: processingQueueUrl, MessageBody: JSON.stringify({ Records: created }) }),
        )
        .catch((error: unknown) => console.error('could not forward an S3 event to the processing queue', error));
    });

    const proxy = await startS3SignatureProxy({
      upstream: { socketPath },
      credentials,
      region: LOCAL_REGION,
      host: options.host,
      port: options.s3Port,
      maxUploadBytes: options.maxUploadBytes ?? defaultMaxUploadBytes(),
    });
    stops.push(() => proxy.close());

    return {
      dynamodbEndpoint,
      s3Endpoint: proxy.url,
      sqsEndpoint,
      processingQueueUrl,
      deadLetterQueueUrl,
      flowRunQueueUrl,
      flowRunDeadLetterQueueUrl,
      webhookQueueUrl,
      webhookDeadLetterQueueUrl,
      tableNames,
      credentials,
      stop: async () => {
        for (const stop of stops.reverse()) await stop().catch(() => undefined);
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw error;
  }
}
