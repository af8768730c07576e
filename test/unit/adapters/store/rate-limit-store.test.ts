/**
 * The rate limits' counters on DynamoDB (adapters/store/dynamodb/rate-limit-store.ts) against dynalite: one request
 * counts 1 as before; an amount (the flow work budget's browser seconds) counts whole, whether the window is the
 * item's or starts with it; a later window starts anew; a count of an earlier window is let through uncounted.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoRateLimitCounters } from '#adapters/store/dynamodb/rate-limit-store';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

let dynamo: LocalDynamo;
let table: string;
let counters: DynamoRateLimitCounters;

beforeAll(async () => {
  dynamo = await startDynalite();
  table = await dynamo.createTable('rateLimits', TABLES.rateLimits);
  counters = new DynamoRateLimitCounters(dynamo.client, table);
});

afterAll(() => dynamo?.stop());

const item = async (key: string) => (await dynamo.client.send(new GetCommand({ TableName: table, Key: { key } }))).Item;

it('counts one request per hit without an amount, starting the window at its first', async () => {
  expect(await counters.hit('token#a', 10, 1_000)).toBe(1);
  expect(await counters.hit('token#a', 10, 1_000)).toBe(2);
  expect(await counters.hit('token#a', 10, 1_000, 1)).toBe(3);
  expect(await item('token#a')).toEqual({ key: 'token#a', window: 10, count: 3, expiresAt: 1_000 });
});

it('adds an amount above 1 to the window it holds', async () => {
  expect(await counters.hit('work#org-1', 20, 2_000)).toBe(1);
  expect(await counters.hit('work#org-1', 20, 2_000, 120)).toBe(121);
  expect(await counters.hit('work#org-1', 20, 2_000)).toBe(122);
});

it('starts a window with an amount above 1, and a later window anew with its own amount', async () => {
  expect(await counters.hit('work#org-2', 30, 3_000, 50)).toBe(50);
  expect(await item('work#org-2')).toEqual({ key: 'work#org-2', window: 30, count: 50, expiresAt: 3_000 });
  expect(await counters.hit('work#org-2', 31, 3_002, 7)).toBe(7);
  expect(await item('work#org-2')).toEqual({ key: 'work#org-2', window: 31, count: 7, expiresAt: 3_002 });
});

it('lets a count of an earlier window through uncounted, leaving the later window as it was', async () => {
  await counters.hit('work#org-3', 40, 4_000, 5);
  expect(await counters.hit('work#org-3', 39, 3_998, 100)).toBe(0);
  expect(await item('work#org-3')).toMatchObject({ window: 40, count: 5 });
});

it('counts concurrent amounts at a window start exactly once each', async () => {
  const answers = await Promise.all([3, 4, 5, 6].map((amount) => counters.hit('work#org-4', 50, 5_000, amount)));
  expect(Math.max(...answers)).toBe(18);
  expect(await item('work#org-4')).toMatchObject({ window: 50, count: 18 });
});
