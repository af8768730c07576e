/**
 * The local TTL sweep of the rateLimits table (lib/local/ttl-sweep.ts): dynalite has no TTL, so the runtime deletes
 * the rate limit windows (and analytics marks) whose `expiresAt` is more than an hour past, as DynamoDB's TTL would;
 * an item not yet that far past, or written again meanwhile, stays; the sweep's timer runs it every interval.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { LOCAL_REGION } from '../../lib/local/engine-credentials';
import { type EnginesProcess, startEnginesProcess } from '../../lib/local/engines-process';
import { startTtlSweep, ttlSweepIntervalFromEnv } from '../../lib/local/ttl-sweep';

let dataDir: string;
let engines: EnginesProcess;
let client: DynamoDBDocumentClient;
const NOW = Math.floor(Date.now() / 1000);

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'ttl-sweep-'));
  // In a process of their own, as `npm start` runs them (fauxqs is ES modules only, which jest cannot load).
  engines = await startEnginesProcess({ dataDir, host: '127.0.0.1', s3Port: 0 });
  client = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: engines.dynamodbEndpoint,
      region: LOCAL_REGION,
      credentials: { ...engines.credentials },
    }),
  );
});
afterAll(async () => {
  client.destroy();
  await engines.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const put = (key: string, expiresAt: number) =>
  client.send(new PutCommand({ TableName: engines.tableNames.rateLimits, Item: { key, count: 3, expiresAt } }));
const exists = async (key: string) =>
  (await client.send(new GetCommand({ TableName: engines.tableNames.rateLimits, Key: { key }, ConsistentRead: true })))
    .Item !== undefined;

test('deletes what expired more than an hour ago, and keeps the rest', async () => {
  const sweep = startTtlSweep(engines, { intervalSeconds: 0 });
  try {
    await put('organization#o1#100', NOW - 7200);
    await put('organization#o1#101', NOW - 3601);
    await put('organization#o1#102', NOW - 60);
    await put('organization#o1#103', NOW + 60);
    await put('analytics-marks#index#partition', NOW + 86_400);
    expect(await sweep.sweep(NOW)).toBe(2);
    expect(await exists('organization#o1#100')).toBe(false);
    expect(await exists('organization#o1#101')).toBe(false);
    expect(await exists('organization#o1#102')).toBe(true);
    expect(await exists('organization#o1#103')).toBe(true);
    expect(await exists('analytics-marks#index#partition')).toBe(true);
    // Nothing more to delete: a second sweep deletes nothing.
    expect(await sweep.sweep(NOW)).toBe(0);
  } finally {
    sweep.stop();
  }
});

test('120 expired windows are all deleted', async () => {
  const sweep = startTtlSweep(engines, { intervalSeconds: 0 });
  try {
    const keys = Array.from({ length: 120 }, (_, i) => `organization#o2#${i}`);
    for (const key of keys) await put(key, NOW - 10_000);
    expect(await sweep.sweep(NOW)).toBe(120);
    for (const key of [keys[0], keys[60], keys[119]]) expect(await exists(key)).toBe(false);
  } finally {
    sweep.stop();
  }
});

test('its timer sweeps every interval, not at start', async () => {
  await put('organization#o3#1', NOW - 7200);
  const sweep = startTtlSweep(engines, { intervalSeconds: 1 });
  try {
    expect(await exists('organization#o3#1')).toBe(true);
    const deadline = Date.now() + 10_000;
    while ((await exists('organization#o3#1')) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await exists('organization#o3#1')).toBe(false);
  } finally {
    sweep.stop();
  }
});

test('LOCAL_TTL_SWEEP_SECONDS: 600 by default, 0 turns the sweep off, anything else is refused', () => {
  expect(ttlSweepIntervalFromEnv({})).toBe(600);
  expect(ttlSweepIntervalFromEnv({ LOCAL_TTL_SWEEP_SECONDS: '0' })).toBe(0);
  expect(ttlSweepIntervalFromEnv({ LOCAL_TTL_SWEEP_SECONDS: '30' })).toBe(30);
  for (const bad of ['-1', '1.5', 'often']) {
    expect(() => ttlSweepIntervalFromEnv({ LOCAL_TTL_SWEEP_SECONDS: bad })).toThrow(/LOCAL_TTL_SWEEP_SECONDS/);
  }
});
