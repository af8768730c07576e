/**
 * POST /api/v1/events/agent over HTTP against the local runtime. Events are seeded the way the flow runtime will
 * record them: through the AnalyticsSink's DynamoDB adapter, pointed at the runtime's own DynamoDB. The expected
 * answers come from a plain in-memory list of the same events (ids 1, 2, … per agent in write order; created_at =
 * the time of the write).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import type { AnalyticsEventRecord, NewAnalyticsEvent } from '#core/analytics/event';
import { PAGE_MAX_BYTES } from '#core/analytics/query';
import type { Environment } from '#core/knowledge/fields';
import { LOCAL_REGION } from '../../lib/local/engine-credentials';
import { client, startService, type TestService } from '../helpers/service';

const PATH = '/api/v1/events/agent';
const SESSIONS = ['6a0c3b51-96c4-4a44-8f0e-5f7c1f3b2a01', '6a0c3b51-96c4-4a44-8f0e-5f7c1f3b2a02'];
const NAMES = ['invocation_start', 'node_execution', 'checkout'];

interface Page {
  success: boolean;
  data: AnalyticsEventRecord[];
  count: number;
  limit: number;
  offset: number;
  nextToken: string | null;
}

let service: TestService;
let orgA: ReturnType<typeof client>;
let orgB: ReturnType<typeof client>;
let dynamo: DynamoDBDocumentClient;
let sink: DynamoAnalyticsStore;
/** Three consecutive UTC days ending a few days ago: recent, so well inside the 400-day retention. */
const FIRST_DAY = Math.floor(Date.now() / 86_400_000 - 5) * 86_400_000;
const DAY = [0, 1, 2].map((i) => new Date(FIRST_DAY + i * 86_400_000).toISOString().slice(0, 10));
const clock = { ms: FIRST_DAY, now: () => new Date(clock.ms) };
let agentId: string;
let siblingId: string;
let otherOrgAgentId: string;
/** Everything written so far, as the API should return it. */
const written: AnalyticsEventRecord[] = [];
const lastIds = new Map<string, number>();
let keys = 0;

async function createAgent(call: ReturnType<typeof client>, displayName: string): Promise<string> {
  const response = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName } });
  expect(response.status).toBe(201);
  return response.body.agentId;
}

/** Records one batch at the clock's time, and the records the API should now have. */
async function record(events: Omit<NewAnalyticsEvent, 'eventKey' | 'payload'>[]): Promise<void> {
  const batch = events.map((e) => ({ ...e, eventKey: `k${++keys}`, payload: { n: keys, nested: { ok: true } } }));
  await sink.write(batch);
  for (const e of batch) {
    const id = (lastIds.get(e.agentId) ?? 0) + 1;
    lastIds.set(e.agentId, id);
    const { eventKey: _key, ...fields } = e;
    written.push({ ...fields, id, created_at: new Date(clock.ms).toISOString() });
  }
}

function expected(
  id: string,
  filters: { environment?: Environment; sessionId?: string; eventName?: string; from?: string; to?: string } = {},
) {
  return written
    .filter(
      (e) =>
        e.agentId === id &&
        e.environment === (filters.environment ?? 'production') &&
        (filters.sessionId === undefined || e.sessionId === filters.sessionId) &&
        (filters.eventName === undefined || e.eventName === filters.eventName) &&
        (filters.from === undefined || e.created_at >= filters.from) &&
        (filters.to === undefined || e.created_at <= filters.to),
    )
    .sort((a, b) => b.id - a.id);
}

const query = (body: Record<string, unknown>, call = () => orgA) => call()<Page>('POST', PATH, { body });

beforeAll(async () => {
  service = await startService();
  if (!service.dynamodbEndpoint) throw new Error('these tests seed events through the local runtime’s DynamoDB');
  orgA = client(service, service.tokens[0]);
  orgB = client(service, service.tokens[1]);
  agentId = await createAgent(orgA, 'Support bot');
  siblingId = await createAgent(orgA, 'Sales bot');
  otherOrgAgentId = await createAgent(orgB, 'Their bot');
  dynamo = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: service.dynamodbEndpoint,
      region: LOCAL_REGION,
      credentials: service.engineCredentials ?? undefined,
    }),
  );
  sink = new DynamoAnalyticsStore(dynamo, 'analytics', { clock, retentionDays: 400 });
  // Three days, eight batches a day, 3 hours apart; each batch mixes sessions, names, environments and agents.
  let n = 0;
  for (let batch = 0; batch < 24; batch += 1) {
    clock.ms = FIRST_DAY + batch * 3 * 3_600_000;
    const events: Omit<NewAnalyticsEvent, 'eventKey' | 'payload'>[] = [];
    for (let i = 0; i < 6; i += 1, n += 1) {
      events.push({
        agentId: n % 11 === 0 ? siblingId : n % 13 === 0 ? otherOrgAgentId : agentId,
        environment: n % 4 === 0 ? 'development' : 'production',
        sessionId: SESSIONS[n % 2],
        eventName: NAMES[Math.floor(n / 2) % 3],
      });
    }
    await record(events);
  }
}, 120_000);
afterAll(async () => {
  dynamo?.destroy();
  await service?.stop();
});

it('answers the production events of the agent, newest first, with the defaults', async () => {
  const response = await query({ agentId });
  expect(response.status).toBe(200);
  const want = expected(agentId);
  expect(want.length).toBeGreaterThan(60);
  expect(want.length).toBeLessThan(100);
  expect(response.body).toEqual({
    success: true,
    data: want,
    count: want.length,
    limit: 100,
    offset: 0,
    nextToken: null,
  });
  expect(response.body.data[0]).toEqual({
    id: expect.any(Number),
    agentId,
    sessionId: expect.any(String),
    environment: 'production',
    eventName: expect.any(String),
    payload: { n: expect.any(Number), nested: { ok: true } },
    created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:00:00\.000Z$/),
  });
});

interface Filters {
  environment?: Environment;
  sessionId?: string;
  eventName?: string;
  startDate?: string;
  endDate?: string;
}

describe('filters', () => {
  it.each<[string, Filters]>([
    ['environment development', { environment: 'development' }],
    ['environment staging (no events)', { environment: 'staging' }],
    ['sessionId', { sessionId: SESSIONS[1] }],
    ['eventName', { eventName: 'checkout' }],
    ['startDate', { startDate: `${DAY[1]}T12:00:00Z` }],
    ['endDate', { endDate: `${DAY[0]}T23:00:00Z` }],
    ['sessionId and eventName', { sessionId: SESSIONS[0], eventName: 'node_execution' }],
    ['eventName and dates', { eventName: 'invocation_start', startDate: `${DAY[1]}`, endDate: `${DAY[1]}` }],
    [
      'every filter',
      {
        environment: 'development',
        sessionId: SESSIONS[0],
        eventName: 'node_execution',
        startDate: `${DAY[0]}T03:00:00Z`,
        endDate: `${DAY[2]}T06:00:00Z`,
      },
    ],
  ])('by %s', async (_name, filters) => {
    const from = filters.startDate && new Date(Date.parse(filters.startDate)).toISOString();
    const to =
      filters.endDate &&
      (filters.endDate.length === 10 ? `${filters.endDate}T23:59:59.999Z` : new Date(filters.endDate).toISOString());
    const response = await query({ agentId, filters });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual(expected(agentId, { ...filters, from, to }));
  });

  it('includes events recorded exactly at startDate and at endDate', async () => {
    const response = await query({
      agentId,
      filters: { startDate: `${DAY[1]}T03:00:00Z`, endDate: `${DAY[1]}T09:00:00.000Z` },
    });
    const times = [...new Set(response.body.data.map((e) => e.created_at))];
    expect(times).toEqual([`${DAY[1]}T09:00:00.000Z`, `${DAY[1]}T06:00:00.000Z`, `${DAY[1]}T03:00:00.000Z`]);
  });

  it('reads a date as the whole day, and an offset as its instant', async () => {
    const day = await query({ agentId, filters: { startDate: `${DAY[2]}`, endDate: `${DAY[2]}` } });
    expect(day.body.data).toEqual(
      expected(agentId, { from: `${DAY[2]}T00:00:00.000Z`, to: `${DAY[2]}T23:59:59.999Z` }),
    );
    // 02:00 at UTC+2 is midnight UTC: exactly the first batch of the first day.
    const midnight = await query({
      agentId,
      filters: { startDate: `${DAY[0]}T02:00:00+02:00`, endDate: `${DAY[0]}T02:00:00+02:00` },
    });
    expect(new Set(midnight.body.data.map((e) => e.created_at))).toEqual(new Set([`${DAY[0]}T00:00:00.000Z`]));
  });

  it('reads a date-time without a zone as UTC', async () => {
    const zoned = await query({ agentId, filters: { startDate: `${DAY[1]}T03:00:00Z`, endDate: `${DAY[1]}T09:00Z` } });
    const plain = await query({ agentId, filters: { startDate: `${DAY[1]}T03:00:00`, endDate: `${DAY[1]}T09:00` } });
    expect(plain.status).toBe(200);
    expect(plain.body.data.length).toBeGreaterThan(0);
    expect(plain.body.data).toEqual(zoned.body.data);
  });

  it('never returns another agent’s events, even with the same session', async () => {
    const response = await query({ agentId: siblingId, filters: { sessionId: SESSIONS[0] } });
    expect(response.body.data.length).toBeGreaterThan(0);
    expect(response.body.data).toEqual(expected(siblingId, { sessionId: SESSIONS[0] }));
  });
});

describe('pages', () => {
  it('walks every event exactly once, in order, by nextToken while new events are written', async () => {
    const before = expected(agentId).map((e) => e.id);
    const seen: number[] = [];
    let nextToken: string | null = null;
    let pages = 0;
    do {
      const response: { status: number; body: Page } = await query({ agentId, limit: 7, nextToken });
      expect(response.status).toBe(200);
      expect(response.body.count).toBe(response.body.data.length);
      seen.push(...response.body.data.map((e) => e.id));
      nextToken = response.body.nextToken;
      pages += 1;
      // Newer events arrive between pages; a walk that started earlier does not see them.
      clock.ms += 60_000;
      await record([{ agentId, environment: 'production', sessionId: SESSIONS[0], eventName: 'checkout' }]);
    } while (nextToken);
    expect(seen).toEqual(before);
    expect(pages).toBe(Math.ceil(before.length / 7));
    // The new ones are at the top of a fresh query.
    const fresh = await query({ agentId, limit: pages });
    expect(fresh.body.data.map((e) => e.id)).toEqual(
      expected(agentId)
        .slice(0, pages)
        .map((e) => e.id),
    );
    expect(fresh.body.data[0].id).toBeGreaterThan(before[0]);
  });

  it('pages by offset: each event once, the last page short, then an empty page', async () => {
    const all = expected(agentId, { sessionId: SESSIONS[1] });
    const seen: AnalyticsEventRecord[] = [];
    for (let offset = 0; offset <= all.length; offset += 10) {
      const response = await query({ agentId, filters: { sessionId: SESSIONS[1] }, limit: 10, offset });
      expect(response.body).toMatchObject({ limit: 10, offset, count: response.body.data.length });
      expect(response.body.nextToken === null).toBe(offset + 10 >= all.length);
      seen.push(...response.body.data);
    }
    expect(seen).toEqual(all);
  });

  it('applies offset after nextToken: the token fixes the position, offset skips from there', async () => {
    const all = expected(agentId);
    const first = await query({ agentId, limit: 5 });
    const skipped = await query({ agentId, limit: 5, offset: 3, nextToken: first.body.nextToken });
    expect(skipped.body.data).toEqual(all.slice(8, 13));
    expect(skipped.body.offset).toBe(3);
  });

  it('ends a page of large events before 4 MiB, and walks on from the first one left out', async () => {
    // 300 events of 30 KB each (about 9 MB): a page of 1,000 would be far over what a function may answer.
    const bigAgent = await createAgent(orgA, 'Verbose bot');
    const text = 'x'.repeat(30_000);
    for (let batch = 0; batch < 12; batch += 1) {
      clock.ms += 1000;
      await sink.write(
        Array.from({ length: 25 }, (_, i) => ({
          eventKey: `big-${batch}-${i}`,
          agentId: bigAgent,
          environment: 'production' as const,
          sessionId: SESSIONS[0],
          eventName: 'checkout',
          payload: { text },
        })),
      );
    }
    const seen: number[] = [];
    const counts: number[] = [];
    let nextToken: string | null = null;
    do {
      const response: { status: number; body: Page } = await query({ agentId: bigAgent, limit: 1000, nextToken });
      expect(response.status).toBe(200);
      expect(Buffer.byteLength(JSON.stringify(response.body))).toBeLessThan(PAGE_MAX_BYTES);
      seen.push(...response.body.data.map((e) => e.id));
      counts.push(response.body.count);
      nextToken = response.body.nextToken;
    } while (nextToken);
    expect(counts.length).toBeGreaterThan(2);
    expect(counts.slice(0, -1).every((n) => n > 100 && n < 300)).toBe(true);
    expect(seen).toEqual(Array.from({ length: 300 }, (_, i) => 300 - i));
  });

  it('refuses a nextToken given with other filters', async () => {
    const first = await query({ agentId, limit: 2 });
    const response = await query({ agentId, filters: { eventName: 'checkout' }, nextToken: first.body.nextToken });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      error: { code: 'VALIDATION_ERROR', details: [{ field: 'nextToken', rule: 'nextToken.mismatch' }] },
    });
  });
});

describe('bad requests name the field', () => {
  it.each([
    ['limit 0', { limit: 0 }, 'limit', 'min'],
    ['limit 1001', { limit: 1001 }, 'limit', 'max'],
    ['limit "x"', { limit: 'x' }, 'limit', 'type'],
    ['offset -1', { offset: -1 }, 'offset', 'min'],
    ['an unknown field', { sort: 'asc' }, 'sort', 'unknownField'],
    ['an unknown filter', { filters: { name: 'checkout' } }, 'filters.name', 'unknownField'],
    ['a bad date', { filters: { startDate: '2024-13-01' } }, 'filters.startDate', 'format.iso8601'],
    [
      'a startDate after the endDate',
      { filters: { startDate: `${DAY[2]}`, endDate: `${DAY[1]}` } },
      'filters.startDate',
      'dateRange',
    ],
    ['an unknown environment', { filters: { environment: 'live' } }, 'filters.environment', 'enum'],
    ['a token we did not issue', { nextToken: 'abc' }, 'nextToken', 'nextToken.format'],
  ])('%s', async (_name, changes, field, rule) => {
    const response = await query({ agentId, ...changes });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      success: false,
      error: {
        code: 'VALIDATION_ERROR',
        message: expect.any(String),
        details: [expect.objectContaining({ field, rule })],
      },
    });
  });

  it('limit 1 and limit 1000 are accepted', async () => {
    expect((await query({ agentId, limit: 1 })).body.count).toBe(1);
    expect((await query({ agentId, limit: 1000 })).body.count).toBe(expected(agentId).length);
  });
});

describe('organizations', () => {
  it('answers an agent of another organization exactly like an unknown one', async () => {
    const foreign = await query({ agentId: otherOrgAgentId });
    const unknown = await query({ agentId: '00000000-0000-4000-8000-000000000000' });
    expect(foreign.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(foreign.body).toEqual({
      success: false,
      error: { code: 'AGENT_NOT_FOUND', message: `Agent ${otherOrgAgentId} was not found`, details: [] },
    });
    expect((unknown.body as unknown as { error: unknown }).error).toMatchObject({
      code: 'AGENT_NOT_FOUND',
      details: [],
    });
  });

  it('lets the other organization read its own agent', async () => {
    const response = await query({ agentId: otherOrgAgentId }, () => orgB);
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual(expected(otherOrgAgentId));
    expect(response.body.count).toBeGreaterThan(0);
  });

  it('needs the analytics scope', async () => {
    const token = async (scopes: string[]) =>
      (await orgA<{ token: string }>('POST', '/dashboard/tokens', { body: { scopes } })).body.token;
    const analytics = await token(['analytics']);
    const knowledge = await token(['knowledge-management']);
    expect((await orgA('POST', PATH, { token: analytics, body: { agentId } })).status).toBe(200);
    expect((await orgA('POST', PATH, { token: knowledge, body: { agentId } })).status).toBe(403);
    expect((await orgA('POST', PATH, { token: null, body: { agentId } })).status).toBe(401);
  });
});
