/**
 * `offset` through the marks of the settled past (lambdas/adapters/store/dynamodb/analytics-offsets.ts), against an
 * in-process dynalite with the table of lib/tables.ts: every offset answers exactly the slice of the walk by cursor
 * (nextToken) at the same instant, whether the marks are being built, already there, re-rooted after new writes,
 * or stopped by events about to expire; in one process, and with a new process for every query that resumes from
 * the marks the others shared through the table (analytics-marks.ts). Marks every 5 entries from an offset of 1, so
 * small tables cross many.
 */
import {
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/lib-dynamodb';
import { chainOf, MAX_MARKS_BYTES, marksKey, marksText, TableMarks } from '#adapters/store/dynamodb/analytics-marks';
import { OffsetIndex, SETTLE_MS, WRITE_WINDOW_MS } from '#adapters/store/dynamodb/analytics-offsets';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import { analyticsQueryContainer } from '#composition/analytics-query';
import type { AnalyticsEventRecord, NewAnalyticsEvent } from '#core/analytics/event';
import type { AnalyticsEventQuery } from '#ports/analytics';
import { configureHandlerEnvironment } from '#shared/environment';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

const AGENT = '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10';
const START = Date.parse('2024-05-01T00:00:00.000Z');
const MINUTE = 60_000;
const DAY = 86_400_000;
const MARKS = { rankStep: 5, minOffset: 1 };

let dynamo: LocalDynamo;
let client: DynamoDBDocumentClient;
let tables = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
  client = dynamo.client;
});
afterAll(() => dynamo?.stop());

/** An analytics table, and beside it its marks' table (`<name>-marks`: a rateLimits table, as in the stack). */
async function newTable(): Promise<string> {
  tables += 1;
  await dynamo.createTable(`offsets${tables}-marks`, TABLES.rateLimits);
  return dynamo.createTable(`offsets${tables}`, TABLES.analytics);
}

const marksTableOf = (table: string) => `${table}-marks`;

/**
 * The test's client, adding up the entries its counting Queries (Select COUNT) scanned into `scanned` and its calls
 * by command into `calls`.
 */
function countingClient(sink: DynamoDBDocumentClient = client) {
  const counting = {
    scanned: 0,
    calls: {} as Record<string, number>,
    reset() {
      counting.scanned = 0;
      counting.calls = {};
    },
    client: {
      send: async (command: unknown) => {
        const name = (command as object).constructor.name;
        counting.calls[name] = (counting.calls[name] ?? 0) + 1;
        const answer = (await sink.send(command as never)) as { ScannedCount?: number };
        if (command instanceof QueryCommand && command.input.Select === 'COUNT') {
          counting.scanned += answer.ScannedCount ?? 0;
        }
        return answer;
      },
    } as unknown as DynamoDBDocumentClient,
  };
  return counting;
}

function clockAt(ms: number) {
  const clock = { ms, now: () => new Date(clock.ms) };
  return clock;
}

function storeOn(table: string, clock: { now(): Date }, retentionDays = 400, sink = client, shared = false) {
  return new DynamoAnalyticsStore(sink, table, {
    clock,
    retentionDays,
    offsets: new OffsetIndex({ ...MARKS, shared: shared ? new TableMarks(sink, marksTableOf(table)) : undefined }),
    sleep: async () => undefined,
  });
}

type Reader = Pick<DynamoAnalyticsStore, 'query'>;

/** A reader of offsets: one process (its marks its own), or a new process per query sharing marks through the table. */
function readerOn(table: string, clock: { now(): Date }, newProcessEachQuery: boolean, sink = client): Reader {
  if (!newProcessEachQuery) return storeOn(table, clock, 400, sink);
  return { query: (asked) => storeOn(table, clock, 400, sink, true).query(asked) };
}

let keys = 0;
function events(count: number): NewAnalyticsEvent[] {
  return Array.from({ length: count }, () => {
    keys += 1;
    return {
      eventKey: `key-${keys}`,
      agentId: AGENT,
      environment: 'production' as const,
      sessionId: `s-${keys % 3}`,
      eventName: keys % 4 === 0 ? 'checkout' : 'node_execution',
      payload: { n: keys },
    };
  });
}

type Filters = Partial<AnalyticsEventQuery>;
const query = (now: Date, changes: Filters): AnalyticsEventQuery => ({
  agentId: AGENT,
  environment: 'production',
  offset: 0,
  limit: 4,
  now,
  ...changes,
});

/** Every record of the filters, walked by cursor 7 at a time (what a caller paging by nextToken gets). */
async function walk(store: Reader, now: Date, filters: Filters): Promise<AnalyticsEventRecord[]> {
  const all: AnalyticsEventRecord[] = [];
  let before: AnalyticsEventQuery['before'];
  do {
    const page = await store.query(query(now, { ...filters, limit: 7, before }));
    all.push(...page.events);
    before = page.next;
  } while (before);
  return all;
}

/** Each offset from `offsets` answers the walk's slice, and `next` says whether records follow. */
async function expectSlices(
  store: Reader,
  now: Date,
  filters: Filters,
  walked: readonly AnalyticsEventRecord[],
  offsets: readonly number[],
): Promise<void> {
  for (const offset of offsets) {
    const page = await store.query(query(now, { ...filters, offset }));
    expect({ offset, ids: page.events.map((e) => e.id) }).toEqual({
      offset,
      ids: walked.slice(offset, offset + 4).map((e) => e.id),
    });
    expect(page.events).toEqual(walked.slice(offset, offset + 4));
    expect(page.next !== undefined).toBe(offset + 4 < walked.length);
  }
}

/** What the table's TTL does in AWS: deletes the items whose `expiresAt` has passed. */
async function removeExpired(table: string, now: Date): Promise<void> {
  for (const [name, key] of [
    [table, 'pk'],
    [marksTableOf(table), 'key'],
  ] as const) {
    const { Items = [] } = await client.send(
      new ScanCommand({
        TableName: name,
        FilterExpression: 'expiresAt <= :now',
        ExpressionAttributeValues: { ':now': Math.floor(now.getTime() / 1000) },
      }),
    );
    for (const item of Items) await client.send(new DeleteCommand({ TableName: name, Key: { [key]: item[key] } }));
  }
}

const upTo = (n: number) => Array.from({ length: n + 2 }, (_, i) => i);

describe.each([
  ['in one process', false],
  ['a new process for each query, marks shared through the table', true],
])('offset by marks, %s', (_mode, shared) => {
  let table: string;
  let writer: DynamoAnalyticsStore;
  const now = new Date(START + DAY);

  beforeAll(async () => {
    table = await newTable();
    const clock = clockAt(START);
    writer = storeOn(table, clock);
    // 30 batches a minute apart, some of one event, some of a dozen sharing one created_at.
    for (let batch = 0; batch < 30; batch += 1) {
      clock.ms = START + batch * MINUTE;
      await writer.write(events(batch % 5 === 0 ? 12 : (batch % 3) + 1));
    }
  });

  it.each<[string, Filters]>([
    ['environment only', {}],
    ['eventName', { eventName: 'checkout' }],
    ['sessionId', { sessionId: 's-1' }],
    ['startDate and endDate', { fromMs: START + 4 * MINUTE, toMs: START + 21 * MINUTE }],
    ['startDate', { fromMs: START + 9 * MINUTE }],
  ])('answers every offset as the slice of the cursor walk, %s: building, then from the marks', async (_, filters) => {
    const walked = await walk(writer, now, filters);
    expect(walked.length).toBeGreaterThan(10);
    const reader = readerOn(table, clockAt(START + DAY), shared);
    // The deepest offset first marks where its count's pages ended; ascending offsets count between those marks,
    // marking every 5 entries; descending ones then read them, jumping back.
    await expectSlices(reader, now, filters, walked, [walked.length - 2]);
    await expectSlices(reader, now, filters, walked, upTo(walked.length));
    await expectSlices(reader, now, filters, walked, upTo(walked.length).reverse());
  });

  it('skips a deep offset, once marked, by counting less than one step', async () => {
    const counting = countingClient();
    const reader = readerOn(table, clockAt(START + DAY), shared, counting.client);
    const walked = await walk(writer, now, {});
    const offset = walked.length - 9;
    const ask = async (at: number, most: number) => {
      counting.scanned = 0;
      expect((await reader.query(query(now, { offset: at }))).events).toEqual(walked.slice(at, at + 4));
      expect(counting.scanned).toBeLessThanOrEqual(most);
    };
    // Counted once (as without marks), then the same offset is a jump; between two marks, counted once more.
    await ask(offset, offset);
    // Shared, the marks of the queries above (same partition, same table) may already be there.
    if (!shared) expect(counting.scanned).toBe(offset);
    await ask(offset, 0);
    await ask(offset - 2, offset - 2);
    for (const deep of [offset - 2, offset - 7, 13, 14]) await ask(deep, MARKS.rankStep - 1);
  });

  it('counts no further than a startDate, however large the offset', async () => {
    const counting = countingClient();
    const reader = readerOn(table, clockAt(START + DAY), shared, counting.client);
    const recent = { fromMs: START + 25 * MINUTE };
    const inRange = (await walk(writer, now, recent)).length;
    for (const offset of [inRange + 1, 10_000]) {
      counting.scanned = 0;
      expect((await reader.query(query(now, { ...recent, offset }))).events).toEqual([]);
      expect(counting.scanned).toBeLessThanOrEqual(inRange);
    }
  });

  it('answers a cursor followed by an offset as the slice after the cursor', async () => {
    const walked = await walk(writer, now, {});
    const reader = readerOn(table, clockAt(START + DAY), shared);
    await reader.query(query(now, { offset: walked.length - 1 }));
    for (const at of [0, 3, 4, 11, 25, walked.length - 3]) {
      const before = { createdAt: walked[at].created_at, id: walked[at].id };
      for (const offset of [1, 2, 5, 6, 17]) {
        const page = await reader.query(query(now, { before, offset }));
        expect(page.events).toEqual(walked.slice(at + 1 + offset, at + 5 + offset));
      }
    }
  });

  it('stays exact as events arrive: the newest minutes are counted, the marks move up to the settled past', async () => {
    const fresh = await newTable();
    const clock = clockAt(START);
    const store = storeOn(fresh, clock);
    const reader = readerOn(fresh, clock, shared);
    const write = async (at: number, count: number) => {
      clock.ms = at;
      await store.write(events(count));
    };
    for (let minute = 0; minute < 20; minute += 1) await write(START + minute * MINUTE, 3);
    // Now is 10 minutes after the last write: the root is at START + 10 min, the last 10 minutes are counted.
    let now = new Date(START + 19 * MINUTE + SETTLE_MS);
    const check = async () => {
      const walked = await walk(store, now, {});
      // The deepest first: the marks move up to the new root, shifted by what settled since.
      await expectSlices(reader, now, {}, walked, [walked.length - 2]);
      await expectSlices(reader, now, {}, walked, upTo(walked.length));
    };
    await check();
    // Events of the unsettled minutes and of now: above the root, counted on every query.
    await write(START + 19 * MINUTE + 30_000, 4);
    await write(now.getTime(), 2);
    await check();
    // Half an hour on, more events: the marks move up (re-rooted), counting only what settled since.
    for (let minute = 21; minute < 50; minute += 4) await write(START + minute * MINUTE, 5);
    now = new Date(START + 55 * MINUTE + SETTLE_MS);
    await check();
    await check();
  });

  it('counts events about to expire without marking them, and stops returning them once expired', async () => {
    const fresh = await newTable();
    const clock = clockAt(START);
    const lasting = storeOn(fresh, clock);
    const shortLived = storeOn(fresh, clock, 1);
    for (let minute = 0; minute < 40; minute += 1) {
      clock.ms = START + minute * MINUTE;
      await (minute % 4 === 1 ? shortLived : lasting).write(events(2));
    }
    const reader = readerOn(fresh, clockAt(START), shared);
    // An hour after the writes, then the next day when the short-lived ones have expired, and then once the TTL
    // has removed them (dynalite has no TTL: the test deletes them as DynamoDB would).
    const nextDay = new Date(START + DAY + 20 * MINUTE);
    for (const [now, removed] of [
      [new Date(START + 100 * MINUTE), false],
      [nextDay, false],
      [nextDay, true],
    ] as const) {
      if (removed) await removeExpired(fresh, now);
      const walked = await walk(lasting, now, {});
      await expectSlices(reader, now, {}, walked, upTo(walked.length));
      await expectSlices(reader, now, {}, walked, upTo(walked.length));
    }
  });
});

describe('marks shared between processes', () => {
  let table: string;
  let walked: AnalyticsEventRecord[];
  const now = new Date(START + DAY);
  const partition = `byEnvironment#${AGENT}#production`;
  const marksItemKey = () => ({ TableName: marksTableOf(table), Key: { key: marksKey(partition) } });

  beforeAll(async () => {
    table = await newTable();
    const clock = clockAt(START);
    const writer = storeOn(table, clock);
    for (let batch = 0; batch < 30; batch += 1) {
      clock.ms = START + batch * MINUTE;
      await writer.write(events((batch % 3) + 2));
    }
    walked = await walk(writer, now, {});
    expect(walked.length).toBeGreaterThan(80);
  });
  beforeEach(() => client.send(new DeleteCommand(marksItemKey())));

  /** A new process (a new container): a store and an OffsetIndex of its own over the table, its calls counted. */
  function newProcess(sink: DynamoDBDocumentClient = client) {
    const counting = countingClient(sink);
    const store = storeOn(table, clockAt(START + DAY), 400, counting.client, true);
    const ask = async (offset: number) => {
      const page = await store.query(query(now, { offset }));
      expect({ offset, ids: page.events.map((e) => e.id) }).toEqual({
        offset,
        ids: walked.slice(offset, offset + 4).map((e) => e.id),
      });
      expect(page.events).toEqual(walked.slice(offset, offset + 4));
    };
    return { counting, ask };
  }
  const storedMarks = async () => (await client.send(new GetCommand(marksItemKey()))).Item;

  it('resumes from the marks another process made: one GetItem, nothing counted below the root', async () => {
    const deep = walked.length - 9;
    const first = newProcess();
    await first.ask(deep);
    expect(first.counting.scanned).toBe(deep);
    expect(first.counting.calls).toMatchObject({ GetCommand: 1, UpdateCommand: 1 });

    const second = newProcess();
    await second.ask(deep);
    // The Query that counts the minutes above the root (none there), the page, its records, and the marks' item.
    expect(second.counting.scanned).toBe(0);
    expect(second.counting.calls).toEqual({ GetCommand: 1, QueryCommand: 2, BatchGetCommand: 1 });
    // A new depth: counted from the root, marked every 5 entries on the way, and shared.
    second.counting.reset();
    await second.ask(deep - 30);
    expect(second.counting.calls).toMatchObject({ UpdateCommand: 1 });
    expect(second.counting.calls.GetCommand).toBeUndefined();

    // A third process finds both processes' marks: any depth counts less than a step, with one GetItem in all.
    const third = newProcess();
    for (const offset of [deep, deep - 30, 7, 31, deep - 31, 12]) {
      const before = third.counting.scanned;
      await third.ask(offset);
      expect(third.counting.scanned - before).toBeLessThan(MARKS.rankStep);
    }
    expect(third.counting.calls.GetCommand).toBe(1);
  });

  it("merges the marks after losing a race to write them: the item keeps both processes' marks", async () => {
    const deep = walked.length - 9;
    // Its first read of the item is stale (eventually consistent): it sees none, though the other wrote one.
    let stale = true;
    const late = newProcess({
      send: async (command: unknown) => {
        if (stale && command instanceof GetCommand) {
          stale = false;
          return {};
        }
        return client.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient);
    const other = newProcess();
    await other.ask(deep);
    expect((await storedMarks())?.v).toBe(1);
    await late.ask(deep - 40);
    // Its write lost (the item is at version 1, not absent): the item is the other's, its marks its own.
    expect((await storedMarks())?.v).toBe(1);
    late.counting.reset();
    await late.ask(deep - 40);
    expect(late.counting.scanned).toBe(0);
    expect(late.counting.calls).toMatchObject({ GetCommand: 1, UpdateCommand: 1 });
    expect((await storedMarks())?.v).toBe(2);

    const next = newProcess();
    await next.ask(deep);
    await next.ask(deep - 40);
    expect(next.counting.scanned).toBe(0);
  });

  it.each<[string, (item: Record<string, unknown>) => Record<string, unknown>]>([
    ['marks that are not JSON', (item) => ({ ...item, marks: '[[12,' })],
    [
      'a mark repeated (ranks out of order)',
      (item) => {
        const rows = JSON.parse(item.marks as string) as unknown[];
        return { ...item, marks: JSON.stringify([...rows, ...rows]) };
      },
    ],
    [
      'a mark whose key is no event',
      (item) => ({
        ...item,
        marks: JSON.stringify(JSON.parse(item.marks as string).map(([r, p]: unknown[]) => [r, p, 'counter#x'])),
      }),
    ],
    [
      'a mark whose position is no position',
      (item) => ({
        ...item,
        marks: JSON.stringify(JSON.parse(item.marks as string).map(([r, , k]: unknown[]) => [r, 'x', k])),
      }),
    ],
    ['a root that is not a minute', (item) => ({ ...item, root: 'yesterday' })],
    ['a total above the marks', (item) => ({ ...item, total: 1 })],
    ['another partition', (item) => ({ ...item, partition: `byEnvironment#${AGENT}#staging` })],
    ['another format', (item) => ({ ...item, kind: 'offsetMarks2' })],
    ['a version that is not a number', (item) => ({ ...item, v: 'seven' })],
    ['something else under its key', (item) => ({ key: item.key, note: 'not marks' })],
    [
      'marks over the size bound',
      (item) => {
        const rows = JSON.parse(item.marks as string) as unknown[];
        const padded = Array.from(
          { length: Math.ceil(MAX_MARKS_BYTES / (item.marks as string).length) + 1 },
          () => rows,
        );
        return { ...item, marks: JSON.stringify(padded.flat()) };
      },
    ],
  ])('ignores a marks item with %s: counts, answers exactly, and writes valid marks over it', async (_, spoil) => {
    const deep = walked.length - 9;
    await newProcess().ask(deep);
    const item = await storedMarks();
    expect(item?.kind).toBe('offsetMarks');
    await client.send(new PutCommand({ TableName: marksTableOf(table), Item: spoil(item as Record<string, unknown>) }));

    const reader = newProcess();
    await reader.ask(deep);
    expect(reader.counting.scanned).toBe(deep);
    expect(reader.counting.calls.UpdateCommand).toBe(1);
    const after = newProcess();
    await after.ask(deep);
    expect(after.counting.scanned).toBe(0);
  });

  it('keeps a chain within the size bound by dropping every other mark, its deepest kept', () => {
    const root = '2024-05-02T00:00:00.000Z';
    const marks = Array.from({ length: 1000 }, (_, i) => {
      const position = `2024-05-01T12:00:00.000Z#${String(5000 - i).padStart(16, '0')}`;
      return {
        key: { pk: `event#${AGENT}#key-${'k'.repeat(60)}-${i}`, environmentKey: `${AGENT}#production`, position },
        position,
        rank: (i + 1) * 5,
      };
    });
    const chain = { root, marks, validUntil: 1_800_000_000, total: 5003 };
    const text = marksText(chain, partition);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_MARKS_BYTES);
    const read = chainOf(
      { kind: 'offsetMarks', partition, v: 1, root, validUntil: chain.validUntil, total: 5003, marks: text },
      partition,
    );
    expect(read?.marks.length).toBeGreaterThan(50);
    expect(read?.marks.at(-1)).toEqual(marks.at(-1));
    // A subset of the chain's own marks, keys and ranks unchanged.
    for (const mark of read?.marks ?? []) expect(marks[mark.rank / 5 - 1]).toEqual(mark);
    expect(read?.total).toBe(5003);
  });

  it('answers exactly when the marks cannot be read or written, and counts as without them', async () => {
    const deep = walked.length - 9;
    const failing = (name: string) =>
      ({
        send: async (command: unknown) => {
          if ((command as object).constructor.name === name) throw new Error(`${name}: throttled`);
          return client.send(command as never);
        },
      }) as unknown as DynamoDBDocumentClient;
    const unwritable = newProcess(failing('UpdateCommand'));
    await unwritable.ask(deep);
    expect(unwritable.counting.scanned).toBe(deep);
    expect(await storedMarks()).toBeUndefined();
    // Its own marks still serve it; it reads the item again before writing over it.
    unwritable.counting.reset();
    await unwritable.ask(deep);
    expect(unwritable.counting.scanned).toBe(0);
    expect(unwritable.counting.calls).toMatchObject({ GetCommand: 1 });
    const unreadable = newProcess(failing('GetCommand'));
    await unreadable.ask(deep);
    await unreadable.ask(deep - 1);
    expect(unreadable.counting.calls.UpdateCommand).toBeUndefined();
  });
});

describe("the query function's store (composition/analytics-query.ts)", () => {
  afterAll(() => configureHandlerEnvironment({}));

  it('shares its marks through the table: a deep offset leaves them in the marks item', async () => {
    const table = await newTable();
    configureHandlerEnvironment({
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      ANALYTICS_TABLE: table,
      RATE_LIMITS_TABLE: marksTableOf(table),
    });
    // Yesterday's events: settled, below the root of now.
    const now = new Date();
    const clock = clockAt(now.getTime() - DAY);
    const writer = storeOn(table, clock);
    for (let batch = 0; batch < 11; batch += 1) {
      clock.ms += MINUTE;
      await writer.write(events(100));
    }
    const walked = await walk(writer, now, {});
    const deep = 1_050;
    const page = await analyticsQueryContainer.analytics.query(query(now, { offset: deep }));
    expect(page.events).toEqual(walked.slice(deep, deep + 4));
    const { Item } = await client.send(
      new GetCommand({ TableName: marksTableOf(table), Key: { key: marksKey(`byEnvironment#${AGENT}#production`) } }),
    );
    expect(Item).toMatchObject({ kind: 'offsetMarks', v: 1 });
  });
});

describe('the write window', () => {
  it('fails a write whose id reservation grew older than the window; its retry stores each event once', async () => {
    const table = await newTable();
    const clock = clockAt(START);
    let slow = true;
    // The first BatchWriteItem call is answered after the window: the clock moves on while it is in flight.
    const lagging = {
      send: async (command: unknown) => {
        const answer = await client.send(command as never);
        if (slow && command instanceof BatchWriteCommand) {
          slow = false;
          clock.ms += WRITE_WINDOW_MS + 1;
          return { UnprocessedItems: command.input.RequestItems };
        }
        return answer;
      },
    } as unknown as DynamoDBDocumentClient;
    const batch = events(30);
    const store = new DynamoAnalyticsStore(lagging, table, {
      clock,
      retentionDays: 400,
      concurrency: 1,
      sleep: async () => undefined,
    });
    await expect(store.write(batch)).rejects.toThrow(/not stored within 60 s/);
    expect(await store.write(batch)).toEqual({ written: 5, alreadyStored: 25 });
    const stored = await walk(store, new Date(START + DAY), {});
    expect(stored).toHaveLength(30);
    // The retried ones carry the later time and new ids.
    expect(stored.slice(0, 5).every((e) => Date.parse(e.created_at) === clock.ms)).toBe(true);
    expect(new Set(stored.map((e) => e.id)).size).toBe(30);
  });
});
