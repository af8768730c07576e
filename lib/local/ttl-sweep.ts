/**
 * DynamoDB's TTL for the local runtime's rateLimits table, which dynalite does not have. Each rate limit window is an
 * item of its own (`organization#<id>#<window>`, docs/rate-limits.md) that AWS deletes soon after its `expiresAt`;
 * without this sweep the local table kept one per organization per busy 2 s window for good (about 4 MB a day for an
 * organization busy all day). Every `intervalSeconds` (LOCAL_TTL_SWEEP_SECONDS, 600; 0 turns it off), the items whose
 * `expiresAt` is more than `graceSeconds` (an hour) past are deleted, each with a condition that it still is: an item
 * written again meanwhile (the analytics offset marks kept in the same table move their `expiresAt` on) stays. The
 * first sweep comes one interval after start, so a short run (a test, whose fake clock may write windows in the past)
 * is never swept.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import { unlessConditionFails } from '#adapters/store/dynamodb/expressions';
import { TABLES } from '../tables';
import { LOCAL_REGION } from './engine-credentials';
import type { EngineEndpoints } from './engines';

export interface TtlSweep {
  /** Deletes what has expired more than the grace before `nowSeconds` (epoch seconds); how many items it deleted. */
  sweep(nowSeconds?: number): Promise<number>;
  stop(): void;
}

export interface TtlSweepOptions {
  readonly intervalSeconds: number;
  readonly graceSeconds?: number;
}

const TABLE = 'rateLimits';
const DEFAULT_GRACE_SECONDS = 3600;

export function startTtlSweep(engines: EngineEndpoints, options: TtlSweepOptions): TtlSweep {
  const schema = TABLES[TABLE];
  const ttlAttribute = schema.timeToLiveAttribute;
  if (!ttlAttribute || schema.sortKey) throw new Error(`the ${TABLE} table's schema does not fit the TTL sweep`);
  const partitionKey = schema.partitionKey;
  const tableName = engines.tableNames[TABLE];
  const grace = options.graceSeconds ?? DEFAULT_GRACE_SECONDS;
  const client = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: engines.dynamodbEndpoint,
      region: LOCAL_REGION,
      credentials: { ...engines.credentials },
    }),
  );
  let running: Promise<number> | undefined;

  const sweepOnce = async (nowSeconds: number): Promise<number> => {
    // What the scan keeps is what each delete checks again: expired past the grace.
    const expired = '#ttl < :cutoff';
    const names = { '#ttl': ttlAttribute };
    const values = { ':cutoff': nowSeconds - grace };
    let deleted = 0;
    const pages = paginateScan(
      { client },
      {
        TableName: tableName,
        ProjectionExpression: '#key',
        FilterExpression: expired,
        ExpressionAttributeNames: { ...names, '#key': partitionKey },
        ExpressionAttributeValues: values,
      },
    );
    for await (const page of pages) {
      for (const item of page.Items ?? []) {
        const written = await unlessConditionFails(() =>
          client.send(
            new DeleteCommand({
              TableName: tableName,
              Key: { [partitionKey]: item[partitionKey] },
              ConditionExpression: expired,
              ExpressionAttributeNames: names,
              ExpressionAttributeValues: values,
            }),
          ),
        );
        if (written) deleted++;
      }
    }
    return deleted;
  };

  const sweep = async (nowSeconds = Math.floor(Date.now() / 1000)): Promise<number> => {
    while (running) await running.catch(() => undefined);
    running = sweepOnce(nowSeconds);
    try {
      return await running;
    } finally {
      running = undefined;
    }
  };

  const timer =
    options.intervalSeconds > 0
      ? setInterval(() => {
          sweep().catch((error: unknown) => console.error('TTL sweep of the rateLimits table failed', error));
        }, options.intervalSeconds * 1000)
      : undefined;
  timer?.unref();
  return {
    sweep,
    stop: () => {
      if (timer) clearInterval(timer);
      client.destroy();
    },
  };
}

/** LOCAL_TTL_SWEEP_SECONDS: how often the sweep runs (default 600 s); 0 turns it off. */
export function ttlSweepIntervalFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.LOCAL_TTL_SWEEP_SECONDS;
  if (raw === undefined || raw === '') return 600;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    throw new Error('Invalid configuration: LOCAL_TTL_SWEEP_SECONDS must be a whole number of seconds (0: off)');
  }
  return value;
}
