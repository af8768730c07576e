/**
 * The DynamoDB analytics store against an in-process dynalite with the table of lib/tables.ts: every filter
 * combination answers what a plain in-memory filter of the same events answers, newest first; writes are
 * idempotent per event key; ids stay unique and increasing under concurrent writers and skewed clocks.
 */
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { OffsetIndex } from '#adapters/store/dynamodb/analytics-offsets';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import type { AnalyticsEventRecord, NewAnalyticsEvent } from '#core/analytics/event';
import type { Environment } from '#core/knowledge/fields';
import type { AnalyticsEventQuery } from '#ports/analytics';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

const AGENT = '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10';
const OTHER_AGENT = '7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f';
const SESSIONS = ['s-1', 's-2', 's#3'];
const NAMES = ['invocation_start', 'node_execution', 'checkout'];
const ENVIRONMENTS: Environment[] = ['production', 'development'];
const START = Date.parse('2024-05-01T00:00:00.000Z');

let dynamo: LocalDynamo;
let client: DynamoDBDocumentClient;
let tableCount = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
  client = dynamo.client;
});
afterAll(() => dynamo?.stop());

/** A fresh table (of lib/tables.ts) per test group, so the counters start at 0. */
async function newTable(): Promise<string> {
  tableCount += 1;
  return dynamo.createTable(`analytics${tableCount}`, TABLES.analytics);
}

function clockAt(ms: number) {
  const clock = { ms, now: () => new Date(clock.ms) };
  return clock;
}

function storeOn(table: string, clock: { now(): Date }, sink: DynamoDBDocumentClient = client) {
  return new DynamoAnalyticsStore(sink, table, {
    clock,
    retentionDays: 400,
    sleep: async () => undefined,
    offsets: new OffsetIndex(),
  });
}

let keyCount = 0;
function event(changes: Partial<NewAnalyticsEvent> = {}): NewAnalyticsEvent {
  keyCount += 1;
  return {
    eventKey: `key-${keyCount}`,
    agentId: AGENT,
    environment: 'production',
    sessionId: SESSIONS[0],
    eventName: NAMES[0],
    payload: { n: keyCount },
    ...changes,
  };
}

const baseQuery = (changes: Partial<AnalyticsEventQuery> = {}): AnalyticsEventQuery => ({
  agentId: AGENT,
  environment: 'production',
  offset: 0,
  limit: 1000,
  now: new Date(START + 86_400_000),
  ...changes,
});

describe('queries', () => {
  let table: string;
  let store: DynamoAnalyticsStore;
  let all: AnalyticsEventRecord[];
  const writtenPayloads: unknown[] = [];

  beforeAll(async () => {
    table = await newTable();
    const clock = clockAt(START);
    store = storeOn(table, clock);
    // 36 batches, one minute apart, mixing sessions, names, environments and another agent's events.
    for (let batch = 0; batch < 36; batch += 1) {
      clock.ms = START + batch * 60_000;
      const events: NewAnalyticsEvent[] = [];
      for (let i = 0; i < 10; i += 1) {
        const n = batch * 10 + i;
        events.push(
          event({
            agentId: n % 7 === 0 ? OTHER_AGENT : AGENT,
            environment: ENVIRONMENTS[n % 5 === 0 ? 1 : 0],
            sessionId: SESSIONS[n % 3],
            eventName: NAMES[Math.floor(n / 3) % 3],
          }),
        );
      }
      await store.write(events);
      writtenPayloads.push(...events.map((e) => e.payload));
    }
    all = [];
    for (const agentId of [AGENT, OTHER_AGENT]) {
      for (const environment of ENVIRONMENTS) {
        all.push(...(await store.query(baseQuery({ agentId, environment }))).events);
      }
    }
  });

  function expected(query: AnalyticsEventQuery): AnalyticsEventRecord[] {
    return all
      .filter(
        (e) =>
          e.agentId === query.agentId &&
          e.environment === query.environment &&
          (query.sessionId === undefined || e.sessionId === query.sessionId) &&
          (query.eventName === undefined || e.eventName === query.eventName) &&
          (query.fromMs === undefined || Date.parse(e.created_at) >= query.fromMs) &&
          (query.toMs === undefined || Date.parse(e.created_at) <= query.toMs),
      )
      .sort((a, b) => b.id - a.id)
      .slice(query.offset, query.offset + query.limit);
  }

  it('stores every event once, with ids 1..n per agent', () => {
    const ids = (agentId: string) =>
      all
        .filter((e) => e.agentId === agentId)
        .map((e) => e.id)
        .sort((a, b) => a - b);
    const agentCount = all.filter((e) => e.agentId === AGENT).length;
    expect(all).toHaveLength(360);
    const byN = (a: unknown, b: unknown) => (a as { n: number }).n - (b as { n: number }).n;
    expect(all.map((e) => e.payload).sort(byN)).toEqual([...writtenPayloads].sort(byN));
    expect(ids(AGENT)).toEqual(Array.from({ length: agentCount }, (_, i) => i + 1));
    expect(ids(OTHER_AGENT)).toEqual(Array.from({ length: 360 - agentCount }, (_, i) => i + 1));
  });

  it('returns records newest first, id and created_at descending together', async () => {
    const { events } = await store.query(baseQuery());
    expect(events.length).toBeGreaterThan(100);
    for (let i = 1; i < events.length; i += 1) {
      expect(events[i].id).toBeLessThan(events[i - 1].id);
      expect(events[i].created_at <= events[i - 1].created_at).toBe(true);
    }
    expect(events[0]).toEqual({
      id: expect.any(Number),
      agentId: AGENT,
      sessionId: expect.any(String),
      environment: 'production',
      eventName: expect.any(String),
      payload: { n: expect.any(Number) },
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
  });

  it.each([
    ['environment only', {}],
    ['development', { environment: 'development' as const }],
    ['sessionId', { sessionId: 's-2' }],
    ['a sessionId with #', { sessionId: 's#3' }],
    ['eventName', { eventName: 'checkout' }],
    ['sessionId and eventName', { sessionId: 's-1', eventName: 'node_execution' }],
    ['startDate', { fromMs: START + 20 * 60_000 }],
    ['endDate', { toMs: START + 5 * 60_000 }],
    ['both dates', { fromMs: START + 10 * 60_000, toMs: START + 12 * 60_000 }],
    ['sessionId and dates', { sessionId: 's-2', fromMs: START + 3 * 60_000, toMs: START + 30 * 60_000 }],
    ['eventName and dates', { eventName: 'checkout', fromMs: START + 3 * 60_000, toMs: START + 30 * 60_000 }],
    [
      'every filter',
      { sessionId: 's-1', eventName: 'invocation_start', fromMs: START + 60_000, toMs: START + 20 * 60_000 },
    ],
    ['the other agent', { agentId: OTHER_AGENT }],
    ['a session with no events', { sessionId: 'nobody' }],
  ])('filters by %s exactly as an in-memory filter does', async (_name, filters) => {
    const query = baseQuery(filters);
    const want = expected(query);
    expect((await store.query(query)).events).toEqual(want);
  });

  it('includes events at exactly startDate and endDate, and none a millisecond outside', async () => {
    const at = START + 10 * 60_000;
    const exact = await store.query(baseQuery({ fromMs: at, toMs: at }));
    expect(exact.events.length).toBeGreaterThan(0);
    expect(exact.events.every((e) => Date.parse(e.created_at) === at)).toBe(true);
    expect((await store.query(baseQuery({ fromMs: at + 1, toMs: at + 59_999 }))).events).toEqual([]);
    expect((await store.query(baseQuery({ fromMs: at + 1, toMs: at }))).events).toEqual([]);
  });

  it('answers any combination of filters, limit and offset like the in-memory filter (property)', async () => {
    const minute = fc.integer({ min: -2, max: 38 }).map((m) => START + m * 60_000);
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            agentId: fc.constantFrom(AGENT, OTHER_AGENT),
            environment: fc.constantFrom(...ENVIRONMENTS),
            sessionId: fc.constantFrom(...SESSIONS),
            eventName: fc.constantFrom(...NAMES),
            fromMs: minute,
            toMs: minute,
          },
          { requiredKeys: ['agentId', 'environment'] },
        ),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 60 }),
        async (filters, limit, offset) => {
          const query = baseQuery({ ...filters, limit, offset });
          const page = await store.query(query);
          expect(page.events).toEqual(expected(query));
          const more = expected({ ...query, limit: limit + 1 }).length > limit;
          expect(page.next !== undefined).toBe(more);
        },
      ),
      { numRuns: 120, seed: 6 },
    );
  });

  it('continues strictly after a cursor position, then applies the offset', async () => {
    const first = await store.query(baseQuery({ limit: 25 }));
    expect(first.next).toEqual({ createdAt: first.events[24].created_at, id: first.events[24].id });
    const second = await store.query(baseQuery({ limit: 25, before: first.next }));
    expect(second.events).toEqual(expected(baseQuery({ limit: 25, offset: 25 })));
    const skipped = await store.query(baseQuery({ limit: 5, offset: 10, before: first.next }));
    expect(skipped.events).toEqual(expected(baseQuery({ limit: 5, offset: 35 })));
  });

  it('returns a 1,000-record page in order (ten BatchGetItem calls)', async () => {
    const big = await newTable();
    const writer = storeOn(big, clockAt(START));
    await writer.write(Array.from({ length: 1100 }, () => event()));
    const page = await writer.query(baseQuery({ limit: 1000 }));
    expect(page.events.map((e) => e.id)).toEqual(Array.from({ length: 1000 }, (_, i) => 1100 - i));
    expect(page.next?.id).toBe(101);
  });
});

describe('writes', () => {
  it('stores a batch written twice once, and keeps the first version of a repeated key', async () => {
    const table = await newTable();
    const store = storeOn(table, clockAt(START));
    const batch = [event(), event(), event()];
    expect(await store.write(batch)).toEqual({ written: 3, alreadyStored: 0 });
    expect(await store.write(batch)).toEqual({ written: 0, alreadyStored: 3 });
    const changed = { ...batch[1], payload: { changed: true } };
    expect(await store.write([changed, event()])).toEqual({ written: 1, alreadyStored: 1 });
    const { events } = await store.query(baseQuery());
    expect(events.map((e) => e.id)).toEqual([4, 3, 2, 1]);
    expect(events.find((e) => e.id === 2)?.payload).toEqual(batch[1].payload);
  });

  it('stores a key repeated within one batch once', async () => {
    const store = storeOn(await newTable(), clockAt(START));
    const once = event();
    expect(await store.write([once, { ...once, payload: { again: true } }])).toEqual({ written: 1, alreadyStored: 1 });
    expect((await store.query(baseQuery())).events).toHaveLength(1);
  });

  it('gives unique, increasing ids to concurrent writers, with created_at never going back', async () => {
    const table = await newTable();
    // Three writers whose clocks disagree by up to an hour, as separate Lambda instances might.
    const writers = [0, 3_600_000, -60_000].map((skew) => storeOn(table, clockAt(START + skew)));
    await Promise.all(
      Array.from({ length: 24 }, (_, i) => writers[i % 3].write(Array.from({ length: 20 }, () => event()))),
    );
    const { events } = await writers[0].query(baseQuery({ now: new Date(START + 7_200_000) }));
    expect(events).toHaveLength(480);
    expect(events.map((e) => e.id)).toEqual(Array.from({ length: 480 }, (_, i) => 480 - i));
    for (let i = 1; i < events.length; i += 1) expect(events[i].created_at <= events[i - 1].created_at).toBe(true);
  });

  it('retries the items BatchWriteItem leaves unprocessed until all are stored', async () => {
    const table = await newTable();
    let calls = 0;
    // Every first BatchWriteItem call stores only half of its items and reports the rest as unprocessed.
    const flaky = {
      send: async (command: unknown) => {
        if (command instanceof BatchWriteCommand && calls++ % 2 === 0) {
          const requests = command.input.RequestItems?.[table] ?? [];
          const half = Math.ceil(requests.length / 2);
          await client.send(new BatchWriteCommand({ RequestItems: { [table]: requests.slice(0, half) } }));
          return { UnprocessedItems: requests.length > half ? { [table]: requests.slice(half) } : {} };
        }
        return client.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const store = storeOn(table, clockAt(START), flaky);
    expect(await store.write(Array.from({ length: 60 }, () => event()))).toEqual({ written: 60, alreadyStored: 0 });
    expect(calls).toBeGreaterThan(3);
    expect((await store.query(baseQuery())).events).toHaveLength(60);
  });

  it('fails loudly when items stay unprocessed, and a retry of the batch stores each event once', async () => {
    const table = await newTable();
    const stuck = {
      send: async (command: unknown) =>
        command instanceof BatchWriteCommand
          ? { UnprocessedItems: command.input.RequestItems }
          : client.send(command as never),
    } as unknown as DynamoDBDocumentClient;
    const batch = Array.from({ length: 5 }, () => event());
    await expect(storeOn(table, clockAt(START), stuck).write(batch)).rejects.toThrow(/unprocessed/);
    const store = storeOn(table, clockAt(START));
    await store.write(batch);
    await store.write(batch);
    expect((await store.query(baseQuery())).events).toHaveLength(5);
  });

  it('skips an offset of live events only, when expired ones TTL has not removed yet lie among them', async () => {
    const table = await newTable();
    const clock = clockAt(START);
    const shortLived = new DynamoAnalyticsStore(client, table, {
      clock,
      retentionDays: 1,
      sleep: async () => undefined,
      offsets: new OffsetIndex(),
    });
    const kept = storeOn(table, clock);
    const live: string[] = [];
    for (let i = 0; i < 30; i++) {
      clock.ms += 1000;
      const written = event();
      // Two expired events, then a live one, and so on: every count of the skip meets expired entries.
      await (i % 3 === 2 ? kept : shortLived).write([written]);
      if (i % 3 === 2) live.unshift(written.eventKey);
    }
    const later = new Date(START + 2 * 86_400_000);
    const keyOf = (payload: unknown) => `key-${(payload as { n: number }).n}`;
    for (let offset = 0; offset <= live.length + 1; offset++) {
      const page = await kept.query(baseQuery({ now: later, limit: 3, offset }));
      expect(page.events.map((e) => keyOf(e.payload))).toEqual(live.slice(offset, offset + 3));
      expect(page.next !== undefined).toBe(offset + 3 < live.length);
    }
  });

  it('sets expiresAt from the retention, and stops returning an event once it has expired', async () => {
    const table = await newTable();
    const store = new DynamoAnalyticsStore(client, table, {
      clock: clockAt(START),
      retentionDays: 30,
      offsets: new OffsetIndex(),
    });
    await store.write([event()]);
    const day = 86_400_000;
    expect((await store.query(baseQuery({ now: new Date(START + 30 * day - 1000) }))).events).toHaveLength(1);
    expect((await store.query(baseQuery({ now: new Date(START + 30 * day) }))).events).toHaveLength(0);
  });
});
