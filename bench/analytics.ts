/**
 * `npm run bench -- analytics`: POST /api/v1/events/agent's use case on the local engine (dynalite in memory, the
 * table of lib/tables.ts), for each filter combination at 10k and at 100k events of one agent, with other agents'
 * events in the same table. Events are written through the AnalyticsSink adapter, as the flow runtime writes them.
 * The goal: a query's time does not grow with the table (ratio 100k / 10k ≈ 1), and an offset into the settled past
 * costs about what offset 0 costs once the process, or another before it, has marks there (issue 40: ≤ 3× at 10,000).
 */
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';
import { TableMarks } from '#adapters/store/dynamodb/analytics-marks';
import { OffsetIndex, type SharedMarks } from '#adapters/store/dynamodb/analytics-offsets';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import type { NewAnalyticsEvent } from '#core/analytics/event';
import { type QueryEventsRequest, queryEvents } from '#core/analytics/query';
import type { Environment } from '#core/knowledge/fields';
import type { AgentStore } from '#ports/stores';
import { createTableInput } from '../lib/local/engines';
import { TABLES } from '../lib/tables';
import { type Benchmark, type BenchRow, type BenchSection, medianMs } from './report';

const AGENT = '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10';
const OTHER_AGENTS = ['7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f', '5f1d2c9a-7b10-4f0e-9a59-0b5a1a9e8c1f'];
const SMALL = 10_000;
const LARGE = 100_000;
/** Other agents' events per event of the measured agent. */
const OTHERS_PER_EVENT = 0.2;
const BATCH = 500;
const SESSION_SIZE = 10;
/** The sink stamps each batch with the clock; batches are 5 minutes apart, so 100k events span about 17 hours. */
const START = Date.parse('2025-01-06T00:00:00.000Z');
const BATCH_STEP_MS = 5 * 60_000;
const ORGANIZATION = 'bench-org';
/** A window among the first 10k events (which span about two hours), so both sizes return the same records. */
const WINDOW = { startDate: '2025-01-06T00:40:00Z', endDate: '2025-01-06T01:20:00Z' };
/** The measured session: the agent's first production session recorded from here on, inside WINDOW. */
const PROBE_FROM = Date.parse('2025-01-06T01:00:00Z');

const NODE_EVENTS = [
  'invocation_start',
  ...Array.from({ length: SESSION_SIZE - 3 }, () => 'node_execution'),
  'checkout',
];

interface Seeder {
  readonly store: DynamoAnalyticsStore;
  readonly clock: { ms: number; now(): Date };
  agentEvents: number;
  sessions: number;
  probeSession?: string;
}

/** One session = SESSION_SIZE events: invocation_start, node_execution…, checkout, and an invocation_error. */
function session(seeder: Seeder, agentId: string, environment: Environment): NewAnalyticsEvent[] {
  seeder.sessions += 1;
  const sessionId = `session-${String(seeder.sessions).padStart(8, '0')}`;
  if (!seeder.probeSession && agentId === AGENT && environment === 'production' && seeder.clock.ms >= PROBE_FROM) {
    seeder.probeSession = sessionId;
  }
  const names = [...NODE_EVENTS, 'invocation_error'];
  return names.map((eventName, step) => ({
    eventKey: `${sessionId}:${step}`,
    agentId,
    environment,
    sessionId,
    eventName,
    payload: { step, durationMs: 40 + step, node: `node-${step}` },
  }));
}

/** Seeds the measured agent up to `total` events, with other agents' sessions interleaved, in batches of 500. */
async function seedUpTo(seeder: Seeder, total: number): Promise<void> {
  let others = 0;
  while (seeder.agentEvents < total) {
    const batch: NewAnalyticsEvent[] = [];
    while (batch.length < BATCH && seeder.agentEvents < total) {
      // Mostly production, some development and staging, as a real agent's traffic.
      const environment: Environment =
        seeder.sessions % 10 === 7 ? 'development' : seeder.sessions % 10 === 9 ? 'staging' : 'production';
      const events = session(seeder, AGENT, environment);
      batch.push(...events);
      seeder.agentEvents += events.length;
      others += events.length * OTHERS_PER_EVENT;
      while (others >= SESSION_SIZE) {
        batch.push(...session(seeder, OTHER_AGENTS[seeder.sessions % OTHER_AGENTS.length], 'production'));
        others -= SESSION_SIZE;
      }
    }
    await seeder.store.write(batch);
    seeder.clock.ms += BATCH_STEP_MS;
  }
}

type Filters = Partial<QueryEventsRequest['filters']>;

/** Every combination of the optional filters; environment is always there (default production). */
function queries(session: string): [name: string, filters: Filters][] {
  return [
    ['environment (default production)', {}],
    ['+ sessionId', { sessionId: session }],
    ['+ eventName', { eventName: 'node_execution' }],
    ['+ sessionId + eventName', { sessionId: session, eventName: 'node_execution' }],
    ['+ startDate/endDate', WINDOW],
    ['+ sessionId + dates', { sessionId: session, ...WINDOW }],
    ['+ eventName + dates', { eventName: 'node_execution', ...WINDOW }],
    ['+ sessionId + eventName + dates', { sessionId: session, eventName: 'node_execution', ...WINDOW }],
  ];
}

/** Median of a list of numbers. */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * Times `a` and `b` in alternating rounds (medianMs of a few runs each) and returns the median of each side's round
 * medians: load from anything else on the machine falls on both sides alike, so their ratio stays meaningful.
 */
async function alternating(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  rounds = 9,
): Promise<[number, number]> {
  const timesA: number[] = [];
  const timesB: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    timesA.push(await medianMs(a, 5, 1));
    timesB.push(await medianMs(b, 5, 1));
  }
  return [median(timesA), median(timesB)];
}

const agents: Pick<AgentStore, 'put' | 'get' | 'list' | 'rename'> = {
  put: async () => undefined,
  get: async (organizationId, agentId) =>
    organizationId === ORGANIZATION && agentId === AGENT
      ? { organizationId, agentId, displayName: 'Bench bot', createdAt: new Date(START).toISOString() }
      : undefined,
  list: async () => [],
  rename: async () => undefined,
};
const caller = { organizationId: ORGANIZATION, tokenId: 'bench', scopes: ['analytics'] };

/** A table seeded with `size` events of the agent; the same seed order, so its first 10k events match the other's. */
async function seededTable(raw: DynamoDBClient, client: DynamoDBDocumentClient, name: string, size: number) {
  await raw.send(new CreateTableCommand(createTableInput(name, TABLES.analytics)));
  // Where the query function shares its offset marks: the rateLimits table (analytics-marks.ts).
  const marksTable = `${name}-marks`;
  await raw.send(new CreateTableCommand(createTableInput(marksTable, TABLES.rateLimits)));
  const clock = { ms: START, now: () => new Date(clock.ms) };
  // The query handler's store (composition/analytics-query.ts): with the offset marks it keeps and shares.
  const store = new DynamoAnalyticsStore(client, name, {
    clock,
    retentionDays: 400,
    concurrency: 8,
    offsets: new OffsetIndex({ shared: new TableMarks(client, marksTable) }),
  });
  const seeder: Seeder = { store, clock, agentEvents: 0, sessions: 0 };
  const started = Date.now();
  await seedUpTo(seeder, size);
  const deps = { agents, analytics: store, clock: { now: () => new Date(START + 86_400_000) } };
  const shared = new TableMarks(client, marksTable);
  // The first query of a process where nobody counted before: the item read, found empty, then written.
  const noneBefore: SharedMarks = {
    read: async (partition) => ({ version: (await shared.read(partition)).version }),
    write: (partition, chain, version) => shared.write(partition, chain, version),
  };
  // A store of its own per call, as a new container: the offset marks a process keeps (analytics-offsets.ts) are not
  // there yet; it reads those other processes shared through the table ('shared'), or finds none ('cold').
  const newProcessDeps = (process: 'cold' | 'shared') => ({
    ...deps,
    analytics: new DynamoAnalyticsStore(client, name, {
      clock,
      retentionDays: 400,
      concurrency: 8,
      offsets: new OffsetIndex({ shared: process === 'cold' ? noneBefore : shared }),
    }),
  });
  const ask = (filters: Filters, page: Partial<QueryEventsRequest> = {}, process?: 'cold' | 'shared') =>
    queryEvents(process ? newProcessDeps(process) : deps, caller, {
      agentId: AGENT,
      filters: { environment: 'production', ...filters },
      limit: 100,
      offset: 0,
      ...page,
    });
  return {
    ask,
    seeder,
    seconds: (Date.now() - started) / 1000,
    others: seeder.sessions * SESSION_SIZE - seeder.agentEvents,
  };
}

async function run(): Promise<BenchSection> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const raw = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
  const client = DynamoDBDocumentClient.from(raw);
  try {
    const small = await seededTable(raw, client, 'analytics10k', SMALL);
    const large = await seededTable(raw, client, 'analytics100k', LARGE);
    const session = small.seeder.probeSession;
    if (!session || session !== large.seeder.probeSession) throw new Error('no common session inside the window');

    const rows: BenchRow[] = [];
    for (const [name, filters] of queries(session)) {
      const [at10k, at100k] = await Promise.all([small.ask(filters), large.ask(filters)]);
      if (JSON.stringify(at10k.data) !== JSON.stringify(at100k.data) && (filters.sessionId || filters.startDate)) {
        throw new Error(`${name}: the two tables answer different records`);
      }
      const [ms10k, ms100k] = await alternating(
        () => small.ask(filters),
        () => large.ask(filters),
      );
      rows.push({
        name: `${name}: ${at100k.count} records, 100k events`,
        value: ms100k,
        unit: 'ms',
        baseline: ms10k,
        baselineName: 'same query, 10k events',
        reading: 'goal ≈ 1 (does not grow with the table)',
      });
    }

    for (const offset of [1_000, 10_000]) {
      const [offsetZero, offsetN] = await alternating(
        () => large.ask({}),
        () => large.ask({}, { offset }),
        3,
      );
      rows.push({
        name: `offset ${offset.toLocaleString('en')}, limit 100, 100k events`,
        value: offsetN,
        unit: 'ms',
        baseline: offsetZero,
        baselineName: 'offset 0',
        reading:
          offset === 10_000
            ? 'goal ≤ 3 (issue 40): the settled past skipped by the marks the process keeps (docs/analytics.md)'
            : 'goal ≤ 3: a mark at the offset once it was counted',
        ...(offset === 10_000
          ? {
              goal: {
                measure: 'analytics offset 10,000 / offset 0, a process that skipped there before',
                of: 'ratio',
                atMost: 3,
                source: 'issue 40',
              } as const,
            }
          : {}),
      });
    }
    // A new offset each call, past the last mark (10,000): up to 999 entries counted, as a caller paging by offset.
    let unmarked = 0;
    const nextUnmarked = () => {
      unmarked += 1;
      return 10_000 + 1 + ((unmarked * 379) % 998);
    };
    for (const [name, offset, process] of [
      ['offset 10,001 … 10,998, a new one each call (counted past the mark at 10,000)', nextUnmarked, undefined],
      ['offset 10,000, first query of a process (marks made on the way)', () => 10_000, 'cold'],
      [
        'offset 10,000, first query of a process after another process counted there (its marks read from the table)',
        () => 10_000,
        'shared',
      ],
    ] as const) {
      const [offsetZero, offsetN] = await alternating(
        () => large.ask({}),
        () => large.ask({}, { offset: offset() }, process),
        3,
      );
      rows.push({
        name: `${name}, limit 100, 100k events`,
        value: offsetN,
        unit: 'ms',
        baseline: offsetZero,
        baselineName: 'offset 0',
        reading:
          process === 'cold'
            ? 'nobody counted there before: counted as before issue 40 (pages of up to 1 MB), then the marks written'
            : process === 'shared'
              ? 'goal ≤ 3: one GetItem of the marks another process wrote (docs/analytics.md), nothing counted below the root'
              : 'goal ≤ 3',
        ...(process
          ? {
              goal: {
                measure:
                  process === 'cold'
                    ? 'analytics offset 10,000 / offset 0, the first such query of a process'
                    : 'analytics offset 10,000 / offset 0, the first such query of a process after another counted there',
                of: 'ratio',
                atMost: 3,
                source: 'issue 40',
              } as const,
            }
          : {}),
      });
    }
    // The same depth reached by a cursor: the token is a key bound, so nothing is read and discarded.
    let nextToken: string | null = null;
    for (let page = 0; page < 10; page += 1) nextToken = (await large.ask({}, { limit: 1000, nextToken })).nextToken;
    const [offsetZero, deep] = await alternating(
      () => large.ask({}),
      () => large.ask({}, { nextToken }),
    );
    rows.push({
      name: 'nextToken at depth 10,000, limit 100, 100k events',
      value: deep,
      unit: 'ms',
      baseline: offsetZero,
      baselineName: 'offset 0',
      reading: 'goal ≈ 1',
    });

    return {
      title: 'Analytics: POST /api/v1/events/agent on the local engine',
      notes: [
        `dynalite in memory, table and indexes of lib/tables.ts, two tables: ${SMALL.toLocaleString('en')} and ` +
          `${LARGE.toLocaleString('en')} events of one agent, plus ${small.others.toLocaleString('en')} and ` +
          `${large.others.toLocaleString('en')} of two other agents, written through the AnalyticsSink in batches ` +
          `of ${BATCH} (${(small.seconds + large.seconds).toFixed(0)} s to seed)`,
        'each time: the use case (tenancy check, one index Query, BatchGetItem of the page), limit 100, newest ' +
          'first; the median of 9 alternating rounds (3 for offsets) of medianMs over 5 runs, the two sides ' +
          'interleaved so that other load on the machine falls on both',
        'the session and the date window lie in the first 10k events, so both tables return the same records',
        `load average of the machine (2 cores) at the end of the run: ${loadavg()[0].toFixed(1)}`,
      ],
      rows,
    };
  } finally {
    client.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
}

export const analyticsBenchmark: Benchmark = { id: 'analytics', run };
