/**
 * `offset` through the marks of the settled past (lambdas/adapters/store/dynamodb/analytics-offsets.ts), against an
 * in-process dynalite with the table of lib/tables.ts: every offset answers exactly the slice of the walk by cursor
 * (nextToken) at the same instant, whether the marks are being built, already there, re-rooted after new writes,
 * or stopped by events about to expire. Marks every 5 entries from an offset of 1, so small tables cross many.
 */
import { BatchWriteCommand, type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { OffsetIndex, SETTLE_MS, WRITE_WINDOW_MS } from '#adapters/store/dynamodb/analytics-offsets';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import type { AnalyticsEventRecord, NewAnalyticsEvent } from '#core/analytics/event';
import type { AnalyticsEventQuery } from '#ports/analytics';
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

async function newTable(): Promise<string> {
  tables += 1;
  return dynamo.createTable(`offsets${tables}`, TABLES.analytics);
}

/** The test's client, adding up the entries its counting Queries (Select COUNT) scanned into `scanned`. */
function countingClient() {
  const counting = {
    scanned: 0,
    client: {
      send: async (command: unknown) => {
        const answer = (await client.send(command as never)) as { ScannedCount?: number };
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

function storeOn(table: string, clock: { now(): Date }, retentionDays = 400, sink = client) {
  return new DynamoAnalyticsStore(sink, table, {
    clock,
    retentionDays,
    offsets: new OffsetIndex(MARKS),
    sleep: async () => undefined,
  });
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
async function walk(store: DynamoAnalyticsStore, now: Date, filters: Filters): Promise<AnalyticsEventRecord[]> {
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
  store: DynamoAnalyticsStore,
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

const upTo = (n: number) => Array.from({ length: n + 2 }, (_, i) => i);

describe('offset by marks', () => {
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
    const reader = storeOn(table, clockAt(START + DAY));
    // The deepest offset first marks where its count's pages ended; ascending offsets count between those marks,
    // marking every 5 entries; descending ones then read them, jumping back.
    await expectSlices(reader, now, filters, walked, [walked.length - 2]);
    await expectSlices(reader, now, filters, walked, upTo(walked.length));
    await expectSlices(reader, now, filters, walked, upTo(walked.length).reverse());
  });

  it('skips a deep offset, once marked, by counting less than one step', async () => {
    const counting = countingClient();
    const reader = storeOn(table, clockAt(START + DAY), 400, counting.client);
    const walked = await walk(writer, now, {});
    const offset = walked.length - 9;
    const ask = async (at: number, most: number) => {
      counting.scanned = 0;
      expect((await reader.query(query(now, { offset: at }))).events).toEqual(walked.slice(at, at + 4));
      expect(counting.scanned).toBeLessThanOrEqual(most);
    };
    // Counted once (as without marks), then the same offset is a jump; between two marks, counted once more.
    await ask(offset, offset);
    expect(counting.scanned).toBe(offset);
    await ask(offset, 0);
    await ask(offset - 2, offset - 2);
    for (const deep of [offset - 2, offset - 7, 13, 14]) await ask(deep, MARKS.rankStep - 1);
  });

  it('counts no further than a startDate, however large the offset', async () => {
    const counting = countingClient();
    const reader = storeOn(table, clockAt(START + DAY), 400, counting.client);
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
    const reader = storeOn(table, clockAt(START + DAY));
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
      await expectSlices(store, now, {}, walked, [walked.length - 2]);
      await expectSlices(store, now, {}, walked, upTo(walked.length));
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
    const reader = storeOn(fresh, clockAt(START));
    // An hour after the writes, then the next day when the short-lived ones have expired.
    for (const now of [new Date(START + 100 * MINUTE), new Date(START + DAY + 20 * MINUTE)]) {
      const walked = await walk(lasting, now, {});
      await expectSlices(reader, now, {}, walked, upTo(walked.length));
      await expectSlices(reader, now, {}, walked, upTo(walked.length));
    }
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
