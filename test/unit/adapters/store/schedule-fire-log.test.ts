/**
 * What the schedule tick sent of each trigger, on DynamoDB (adapters/store/dynamodb/schedule-fire-log.ts) against
 * dynalite, in the rate limits table: nothing known at first; the latest fire sent is kept as one item under
 * `schedule#…`, apart from the counters, with its TTL a day after that fire; an earlier fire (a slower tick) never
 * moves it back; triggers are apart from each other.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoScheduleFireLog } from '#adapters/store/dynamodb/schedule-fire-log';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

let dynamo: LocalDynamo;
let table: string;
let log: DynamoScheduleFireLog;

beforeAll(async () => {
  dynamo = await startDynalite();
  table = await dynamo.createTable('rateLimits', TABLES.rateLimits);
  log = new DynamoScheduleFireLog(dynamo.client, table);
});

afterAll(() => dynamo?.stop());

const item = async (key: string) => (await dynamo.client.send(new GetCommand({ TableName: table, Key: { key } }))).Item;
const NINE = Date.parse('2026-03-01T09:00:00.000Z');

it('knows nothing of a trigger never sent', async () => {
  await expect(log.sentThrough('agent-1#production#Morning')).resolves.toBeNull();
});

it('keeps the latest fire sent, with a TTL a day after it, and never moves it back', async () => {
  await log.markSent('agent-1#production#Daily', NINE);
  await expect(log.sentThrough('agent-1#production#Daily')).resolves.toBe(NINE);
  expect(await item('schedule#agent-1#production#Daily')).toEqual({
    key: 'schedule#agent-1#production#Daily',
    sentThrough: NINE,
    expiresAt: NINE / 1000 + 86_400,
  });

  await log.markSent('agent-1#production#Daily', NINE + 60_000);
  await expect(log.sentThrough('agent-1#production#Daily')).resolves.toBe(NINE + 60_000);
  // A tick that got less far writes after: the later fire stays.
  await log.markSent('agent-1#production#Daily', NINE);
  await expect(log.sentThrough('agent-1#production#Daily')).resolves.toBe(NINE + 60_000);
  await expect(log.sentThrough('agent-1#staging#Daily')).resolves.toBeNull();
});
