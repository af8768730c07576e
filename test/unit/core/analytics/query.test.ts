/**
 * The analytics query without storage: request validation (each bad value names its field and rule), the ISO 8601
 * bounds, the nextToken, and the use case's tenancy and paging rules with in-memory ports.
 */
import { decodeCursor, encodeCursor } from '#core/analytics/cursor';
import { parseIsoSpan } from '#core/analytics/dates';
import type { AnalyticsEventRecord } from '#core/analytics/event';
import { eventBytes, PAGE_MAX_BYTES, queryEvents } from '#core/analytics/query';
import { type AppError, ValidationError } from '#core/errors';
import { parseInput } from '#core/validation';
import { queryEventsSchema } from '#handlers/http/analytics/schemas';
import type { AnalyticsEventQuery, AnalyticsEventReader } from '#ports/analytics';
import type { AgentRecord, AgentStore } from '#ports/stores';

const AGENT = '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10';

function details(input: unknown) {
  try {
    parseInput(queryEventsSchema, input);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).details.map(({ field, rule }) => ({ field, rule }));
  }
  throw new Error('expected a validation error');
}

describe('request', () => {
  it('defaults environment to production, limit to 100 and offset to 0', () => {
    expect(parseInput(queryEventsSchema, { agentId: AGENT })).toEqual({
      agentId: AGENT,
      filters: { environment: 'production' },
      limit: 100,
      offset: 0,
    });
    expect(parseInput(queryEventsSchema, { agentId: AGENT, filters: { sessionId: 's' } }).filters).toEqual({
      environment: 'production',
      sessionId: 's',
    });
  });

  it('accepts every filter, limit 1 and 1000, and a large offset', () => {
    const filters = {
      environment: 'staging',
      sessionId: '5f1d2c9a-7b10-4f0e-9a59-0b5a1a9e8c1f',
      eventName: 'node_execution',
      startDate: '2024-05-01',
      endDate: '2024-05-01T23:59:59.999+02:00',
    };
    expect(parseInput(queryEventsSchema, { agentId: AGENT, filters, limit: 1, offset: 250_000 }).filters).toEqual(
      filters,
    );
    expect(parseInput(queryEventsSchema, { agentId: AGENT, limit: 1000 }).limit).toBe(1000);
  });

  it.each([
    ['limit 0', { limit: 0 }, 'limit', 'min'],
    ['limit 1001', { limit: 1001 }, 'limit', 'max'],
    ['limit "x"', { limit: 'x' }, 'limit', 'type'],
    ['limit "10" (a string)', { limit: '10' }, 'limit', 'type'],
    ['limit 1.5', { limit: 1.5 }, 'limit', 'type'],
    ['offset -1', { offset: -1 }, 'offset', 'min'],
    ['offset null', { offset: null }, 'offset', 'type'],
    ['an unknown top-level field', { page: 2 }, 'page', 'unknownField'],
    ['an unknown filter', { filters: { session: 'x' } }, 'filters.session', 'unknownField'],
    ['filters that are not an object', { filters: 'production' }, 'filters', 'type'],
    ['an unknown environment', { filters: { environment: 'prod' } }, 'filters.environment', 'enum'],
    ['an empty sessionId', { filters: { sessionId: '' } }, 'filters.sessionId', 'minLength'],
    ['an eventName with a space', { filters: { eventName: 'my event' } }, 'filters.eventName', 'eventName.format'],
    ['a startDate that is no date', { filters: { startDate: 'yesterday' } }, 'filters.startDate', 'format.iso8601'],
    ['an endDate of Feb 30', { filters: { endDate: '2024-02-30' } }, 'filters.endDate', 'format.iso8601'],
    [
      'a date and time apart by a space (RFC 3339 allows it, ISO 8601 does not)',
      { filters: { startDate: '2024-05-01 10:00:00' } },
      'filters.startDate',
      'format.iso8601',
    ],
    ['an hour without minutes', { filters: { endDate: '2024-05-01T10' } }, 'filters.endDate', 'format.iso8601'],
    [
      'a startDate after the endDate',
      { filters: { startDate: '2024-05-02', endDate: '2024-05-01T23:59:59Z' } },
      'filters.startDate',
      'dateRange',
    ],
    ['a missing agentId', { agentId: undefined }, 'agentId', 'required'],
    ['an agentId that is no UUID', { agentId: 'agent-1' }, 'agentId', 'format.uuid'],
    ['an empty nextToken', { nextToken: '' }, 'nextToken', 'minLength'],
  ])('refuses %s, naming the field', (_name, changes, field, rule) => {
    expect(details({ agentId: AGENT, ...changes })).toEqual([{ field, rule }]);
  });

  it('accepts a date alone and a date-time without a zone (UTC), as ISO 8601 allows', () => {
    const filters = { startDate: '2026-11-01', endDate: '2026-11-01T10:00:00' };
    expect(parseInput(queryEventsSchema, { agentId: AGENT, filters }).filters).toMatchObject(filters);
  });

  it('accepts the same day as start and end', () => {
    expect(() =>
      parseInput(queryEventsSchema, { agentId: AGENT, filters: { startDate: '2024-05-01', endDate: '2024-05-01' } }),
    ).not.toThrow();
  });
});

describe('ISO 8601 bounds', () => {
  const at = (iso: string) => Date.parse(iso);

  it.each([
    ['2024-05-01', '2024-05-01T00:00:00.000Z', '2024-05-01T23:59:59.999Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z', '2024-02-29T23:59:59.999Z'],
    ['2024-05-01T10:30Z', '2024-05-01T10:30:00.000Z', '2024-05-01T10:30:59.999Z'],
    ['2024-05-01T10:30:15Z', '2024-05-01T10:30:15.000Z', '2024-05-01T10:30:15.999Z'],
    ['2024-05-01T10:30:15.2Z', '2024-05-01T10:30:15.200Z', '2024-05-01T10:30:15.299Z'],
    ['2024-05-01T10:30:15.250Z', '2024-05-01T10:30:15.250Z', '2024-05-01T10:30:15.250Z'],
    ['2024-05-01T12:30:15.250+02:00', '2024-05-01T10:30:15.250Z', '2024-05-01T10:30:15.250Z'],
    ['2024-05-01T05:00:00-0530', '2024-05-01T10:30:00.000Z', '2024-05-01T10:30:00.999Z'],
    // without a zone: UTC
    ['2024-05-01T10:30', '2024-05-01T10:30:00.000Z', '2024-05-01T10:30:59.999Z'],
    ['2024-05-01T10:30:15', '2024-05-01T10:30:15.000Z', '2024-05-01T10:30:15.999Z'],
    ['2024-05-01T23:59:59.999', '2024-05-01T23:59:59.999Z', '2024-05-01T23:59:59.999Z'],
  ])('%s covers %s to %s', (value, first, last) => {
    expect(parseIsoSpan(value)).toEqual({ first: at(first), last: at(last) });
  });

  it.each([
    '2023-02-29',
    '2024-13-01',
    '2024-05-01T24:00Z',
    '2024-05-01T10:60Z',
    '2024-05-01T10:60',
    '2024-05-01T10',
    '2024-05-01 10:00',
    '2024-05-01t10:00',
    '2024-05-01T10:00:00+2',
    '2024-5-1',
    '20240501',
    '',
  ])('refuses %j', (value) => {
    expect(parseIsoSpan(value)).toBeUndefined();
  });
});

describe('nextToken', () => {
  const identity = { agentId: AGENT, environment: 'production', sessionId: 's-1' };
  const position = { createdAt: '2024-05-01T10:00:00.000Z', id: 42 };

  it('round-trips a position for the same query', () => {
    expect(decodeCursor(encodeCursor(position, identity), identity)).toEqual(position);
  });

  it('is refused with other filters or another agent, naming nextToken', () => {
    const token = encodeCursor(position, identity);
    for (const other of [
      { ...identity, sessionId: undefined },
      { ...identity, environment: 'staging' },
      { ...identity, agentId: '7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f' },
      { ...identity, fromMs: 0 },
    ]) {
      expect(() => decodeCursor(token, other)).toThrow(
        expect.objectContaining({
          details: [expect.objectContaining({ field: 'nextToken', rule: 'nextToken.mismatch' })],
        }),
      );
    }
  });

  it.each([
    'not-a-token',
    Buffer.from('{"v":1,"q":"x","t":"yesterday","i":1}').toString('base64url'),
    Buffer.from('{"v":2}').toString('base64url'),
  ])('refuses a token it did not issue: %s', (token) => {
    expect(() => decodeCursor(token, identity)).toThrow(
      expect.objectContaining({ details: [expect.objectContaining({ field: 'nextToken', rule: 'nextToken.format' })] }),
    );
  });
});

describe('queryEvents', () => {
  const orgA = { organizationId: 'org-a', tokenId: 't', scopes: ['analytics'] };
  const orgB = { organizationId: 'org-b', tokenId: 't', scopes: ['analytics'] };
  const agent: AgentRecord = { organizationId: 'org-a', agentId: AGENT, displayName: 'Bot', createdAt: '' };
  const agents: Pick<AgentStore, 'put' | 'get' | 'list' | 'rename'> = {
    put: async () => undefined,
    get: async (organizationId, agentId) =>
      organizationId === agent.organizationId && agentId === agent.agentId ? agent : undefined,
    list: async () => [agent],
    rename: async () => undefined,
  };
  const now = new Date('2024-06-01T00:00:00.000Z');

  function readerReturning(next?: { createdAt: string; id: number }) {
    const queries: AnalyticsEventQuery[] = [];
    const analytics: AnalyticsEventReader = {
      query: async (query) => {
        queries.push(query);
        return { events: [], next };
      },
    };
    return { analytics, queries };
  }

  const request = (changes = {}) => ({
    ...parseInput(queryEventsSchema, { agentId: AGENT }),
    ...changes,
  });

  it('answers another organization exactly like an unknown agent (404 AGENT_NOT_FOUND)', async () => {
    const { analytics, queries } = readerReturning();
    const deps = { agents, analytics, clock: { now: () => now } };
    const other = queryEvents(deps, orgB, request()).catch((e: AppError) => [e.status, e.code]);
    const unknown = queryEvents(deps, orgA, request({ agentId: '7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f' })).catch(
      (e: AppError) => [e.status, e.code],
    );
    expect(await other).toEqual([404, 'AGENT_NOT_FOUND']);
    expect(await unknown).toEqual([404, 'AGENT_NOT_FOUND']);
    expect(queries).toEqual([]);
  });

  it('turns the filters into one store query, with the dates as inclusive milliseconds', async () => {
    const { analytics, queries } = readerReturning();
    const result = await queryEvents(
      { agents, analytics, clock: { now: () => now } },
      orgA,
      request({
        filters: { environment: 'staging', eventName: 'checkout', startDate: '2024-05-01', endDate: '2024-05-02' },
        limit: 10,
        offset: 5,
      }),
    );
    expect(result).toEqual({ data: [], count: 0, limit: 10, offset: 5, nextToken: null });
    expect(queries).toEqual([
      {
        agentId: AGENT,
        environment: 'staging',
        sessionId: undefined,
        eventName: 'checkout',
        fromMs: Date.parse('2024-05-01T00:00:00.000Z'),
        toMs: Date.parse('2024-05-02T23:59:59.999Z'),
        before: undefined,
        offset: 5,
        limit: 10,
        now,
      },
    ]);
  });

  it('returns a nextToken that brings the next query back to the position after the page', async () => {
    const position = { createdAt: '2024-05-01T10:00:00.000Z', id: 42 };
    const first = readerReturning(position);
    const deps = { agents, analytics: first.analytics, clock: { now: () => now } };
    const { nextToken } = await queryEvents(deps, orgA, request());
    expect(typeof nextToken).toBe('string');
    const second = readerReturning();
    await queryEvents({ ...deps, analytics: second.analytics }, orgA, request({ nextToken, offset: 3 }));
    expect(second.queries[0]).toMatchObject({ before: position, offset: 3 });
  });

  describe('a page bounded by bytes', () => {
    /** `count` records of the agent, newest first, each with a payload of `text`. */
    const records = (count: number, text: string): AnalyticsEventRecord[] =>
      Array.from({ length: count }, (_, i) => ({
        id: count - i,
        agentId: AGENT,
        sessionId: 's',
        environment: 'production',
        eventName: 'big',
        payload: { text },
        created_at: new Date(Date.parse('2024-05-01T00:00:00.000Z') + (count - i) * 1000).toISOString(),
      }));
    /** A reader of `all` that honours `before` and `limit`, as the store does. */
    const readerOf = (all: AnalyticsEventRecord[]): AnalyticsEventReader => ({
      query: async (query) => {
        const after = all.filter((e) => !query.before || e.id < query.before.id);
        const events = after.slice(0, query.limit);
        const last = events[events.length - 1];
        return after.length > query.limit ? { events, next: { createdAt: last.created_at, id: last.id } } : { events };
      },
    });

    it.each([
      ['plain text', 'x'.repeat(32 * 1024 - 20)],
      ['quotes, which the answer escapes twice', '"'.repeat(16 * 1024 - 20)],
    ])(
      'stops 1,000 records of 32 KiB (%s) before the budget, and the next page goes on with the first left out',
      async (_, text) => {
        const all = records(1000, text);
        const deps = { agents, analytics: readerOf(all), clock: { now: () => now } };
        const seen: number[] = [];
        let nextToken: string | null = null;
        let pages = 0;
        do {
          const page: Awaited<ReturnType<typeof queryEvents>> = await queryEvents(
            deps,
            orgA,
            request({ limit: 1000, nextToken }),
          );
          expect(page.count).toBe(page.data.length);
          expect(page.data.reduce((sum, e) => sum + eventBytes(e), 0)).toBeLessThanOrEqual(PAGE_MAX_BYTES);
          // What the function answers (the body, a JSON string in the proxy answer) stays under Lambda's 6 MB.
          const answer = JSON.stringify({ statusCode: 200, body: JSON.stringify({ success: true, ...page }) });
          expect(Buffer.byteLength(answer)).toBeLessThan(PAGE_MAX_BYTES + 4096);
          seen.push(...page.data.map((e) => e.id));
          nextToken = page.nextToken;
          pages += 1;
        } while (nextToken);
        expect(pages).toBeGreaterThan(1);
        expect(seen).toEqual(all.map((e) => e.id));
      },
    );

    it("keeps a page of small records whole, with the store's nextToken", async () => {
      const all = records(1500, 'small');
      const page = await queryEvents(
        { agents, analytics: readerOf(all), clock: { now: () => now } },
        orgA,
        request({ limit: 1000 }),
      );
      expect(page.count).toBe(1000);
      expect(decodeCursor(page.nextToken as string, { agentId: AGENT, environment: 'production' })).toEqual({
        createdAt: all[999].created_at,
        id: all[999].id,
      });
    });
  });
});
