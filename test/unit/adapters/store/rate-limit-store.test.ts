/**
 * The rate limits' counters on DynamoDB (adapters/store/dynamodb/rate-limit-store.ts) against dynalite, with the rule
 * that uses them (core/auth/rate-limit.ts, `checkRateLimit`): one UpdateItem per request, at a window's first as at
 * any other, allowed or refused; the organization's count shared by its tokens, so a token that has used up the
 * burst has used up its organization's and another token of it is refused too; another organization apart; a new
 * window counted anew in an item of its own; a caller without an organization counted by token only. The in-memory
 * counters of the unit tests (test/helpers/in-memory-ports.ts) answer the same verdicts. And the flow work budget's
 * counts: an amount counts whole, a later window anew, an earlier one in its own count.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoRateLimitCounters } from '#adapters/store/dynamodb/rate-limit-store';
import { checkRateLimit, type RateLimitSettings } from '#core/auth/rate-limit';
import type { RateLimitCounters } from '#ports/rate-limits';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';
import { InMemoryRateLimitCounters } from '../../../helpers/in-memory-ports';

/** 3 requests every 3 s. */
const SETTINGS: RateLimitSettings = { perSecond: 1, burst: 3 };
const WINDOW_MS = 3_000;
/** The start of window 600,000,000 of SETTINGS. */
const START = 600_000_000 * WINDOW_MS;
const WINDOW = 600_000_000;
const WINDOW_TTL = (START + WINDOW_MS) / 1000 + 60;

let dynamo: LocalDynamo;
let table: string;
let counters: DynamoRateLimitCounters;
/** The commands the document client sent, by name, since the last `sent()`. */
let commands: string[] = [];

beforeAll(async () => {
  dynamo = await startDynalite();
  table = await dynamo.createTable('rateLimits', TABLES.rateLimits);
  counters = new DynamoRateLimitCounters(dynamo.client, table);
  const send = dynamo.client.send.bind(dynamo.client);
  jest.spyOn(dynamo.client, 'send').mockImplementation(((command: object) => {
    commands.push(command.constructor.name);
    return send(command as never);
  }) as never);
});

afterAll(() => dynamo?.stop());

/** What was sent since the last call, and forgets it. */
function sent(): string[] {
  const answer = commands;
  commands = [];
  return answer;
}

const item = async (key: string) => {
  const answer = (await dynamo.client.send(new GetCommand({ TableName: table, Key: { key } }))).Item;
  sent();
  return answer;
};

const request = (tokenId: string, organizationId: string | undefined, nowMs = START + 100) =>
  checkRateLimit(counters, SETTINGS, { tokenId, organizationId }, nowMs);

describe('requests', () => {
  it('counts a request in one UpdateItem, its window’s first included, in the organization’s window', async () => {
    sent();
    const first = await request('t-1', 'org-1');
    expect(sent()).toEqual(['UpdateCommand']);
    expect(first).toEqual({ allowed: true, limit: 3, remaining: 2, resetSeconds: 3, windowSeconds: 3 });
    expect(await request('t-1', 'org-1', START + 1_100)).toMatchObject({
      allowed: true,
      remaining: 1,
      resetSeconds: 2,
    });
    expect(sent()).toEqual(['UpdateCommand']);
    expect(await item(`organization#org-1#${WINDOW}`)).toEqual({
      key: `organization#org-1#${WINDOW}`,
      count: 2,
      expiresAt: WINDOW_TTL,
    });
  });

  it('refuses past the burst in one UpdateItem too, with Retry-After until the window ends', async () => {
    for (const remaining of [2, 1, 0]) {
      expect(await request('t-2', 'org-2')).toMatchObject({ allowed: true, remaining });
    }
    sent();
    const refused = await request('t-2', 'org-2', START + 1_500);
    expect(sent()).toEqual(['UpdateCommand']);
    expect(refused).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 2, windowSeconds: 3 });
    // A refused request is counted too (docs/rate-limits.md, "Accuracy").
    expect(await item(`organization#org-2#${WINDOW}`)).toMatchObject({ count: 4 });
  });

  it('shares the organization’s count among its tokens: a token that used up the burst used up the organization’s', async () => {
    expect(await request('t-3', 'org-3')).toMatchObject({ allowed: true, remaining: 2 });
    // The second token has made one request, its organization two: the organization's count answers.
    expect(await request('t-4', 'org-3')).toMatchObject({ allowed: true, remaining: 1 });
    expect(await request('t-3', 'org-3')).toMatchObject({ allowed: true, remaining: 0 });
    expect(await request('t-5', 'org-3')).toMatchObject({ allowed: false, remaining: 0 });
    for (let i = 0; i < 3; i++) await request('t-6', 'org-4');
    expect(await request('t-6', 'org-4')).toMatchObject({ allowed: false });
    expect(await request('t-7', 'org-4')).toMatchObject({ allowed: false });
    // Another organization is counted apart, and so is the same token there.
    expect(await request('t-3', 'org-5')).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('counts a new window anew in an item of its own, in one UpdateItem', async () => {
    for (let i = 0; i < 4; i++) await request('t-8', 'org-6');
    expect(await request('t-8', 'org-6')).toMatchObject({ allowed: false });
    sent();
    expect(await request('t-8', 'org-6', START + WINDOW_MS)).toMatchObject({ allowed: true, remaining: 2 });
    expect(sent()).toEqual(['UpdateCommand']);
    expect(await item(`organization#org-6#${WINDOW + 1}`)).toEqual({
      key: `organization#org-6#${WINDOW + 1}`,
      count: 1,
      expiresAt: WINDOW_TTL + 3,
    });
    // The window before keeps its count until TTL removes it.
    expect(await item(`organization#org-6#${WINDOW}`)).toMatchObject({ count: 5 });
  });

  it('counts a caller without an organization by token only, in one UpdateItem', async () => {
    sent();
    expect(await request('person:p-1', undefined)).toMatchObject({ allowed: true, remaining: 2 });
    expect(sent()).toEqual(['UpdateCommand']);
    for (const remaining of [1, 0]) {
      expect(await request('person:p-1', undefined)).toMatchObject({ allowed: true, remaining });
    }
    expect(await request('person:p-1', undefined)).toMatchObject({ allowed: false, remaining: 0 });
    expect(await item(`token#person:p-1#${WINDOW}`)).toEqual({
      key: `token#person:p-1#${WINDOW}`,
      count: 4,
      expiresAt: WINDOW_TTL,
    });
    // The same person acting in an organization is counted there, apart from their own routes' count.
    expect(await request('person:p-1', 'org-7')).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('counts concurrent requests of one window exactly, letting through the burst and no more', async () => {
    const verdicts = await Promise.all(
      ['a', 'b', 'a', 'b', 'a', 'c'].map((token) => request(`t-${token}`, 'org-8', START + 200)),
    );
    expect(verdicts.filter((v) => v.allowed)).toHaveLength(3);
    expect(await item(`organization#org-8#${WINDOW}`)).toMatchObject({ count: 6 });
  });
});

describe('the in-memory counters of the unit tests', () => {
  /** The verdicts of a sequence of requests (token, organization) in one window, then one of the next window. */
  const verdictsOf = async (store: RateLimitCounters, org: string) => {
    const calls: [string, string | undefined][] = [
      ['x', org],
      ['y', org],
      ['x', org],
      ['x', org],
      ['y', org],
      ['z', undefined],
    ];
    const answers = [];
    for (const [token, organizationId] of calls) {
      answers.push(await checkRateLimit(store, SETTINGS, { tokenId: `${org}-${token}`, organizationId }, START + 500));
    }
    answers.push(
      await checkRateLimit(store, SETTINGS, { tokenId: `${org}-x`, organizationId: org }, START + WINDOW_MS),
    );
    return answers;
  };

  it('answer what the DynamoDB counters answer', async () => {
    const expected = await verdictsOf(counters, 'org-9');
    expect(expected.map((v) => [v.allowed, v.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
      [true, 2],
      [true, 2],
    ]);
    expect(await verdictsOf(new InMemoryRateLimitCounters(), 'org-9')).toEqual(expected);
  });
});

describe('flow work (hit with an amount)', () => {
  it('counts one per hit without an amount, and an amount whole, in one UpdateItem each', async () => {
    sent();
    expect(await counters.hit('work#org-1', 20, 2_000)).toBe(1);
    expect(await counters.hit('work#org-1', 20, 2_000, 120)).toBe(121);
    expect(await counters.hit('work#org-1', 20, 2_000)).toBe(122);
    expect(sent()).toEqual(['UpdateCommand', 'UpdateCommand', 'UpdateCommand']);
    expect(await item('work#org-1#20')).toEqual({ key: 'work#org-1#20', count: 122, expiresAt: 2_000 });
  });

  it('counts a later window anew, and an earlier one in its own count, leaving the later as it was', async () => {
    expect(await counters.hit('work#org-2', 30, 3_000, 50)).toBe(50);
    expect(await counters.hit('work#org-2', 31, 3_002, 7)).toBe(7);
    expect(await counters.hit('work#org-2', 30, 3_000, 5)).toBe(55);
    expect(await item('work#org-2#31')).toEqual({ key: 'work#org-2#31', count: 7, expiresAt: 3_002 });
  });

  it('counts concurrent amounts at a window start exactly once each', async () => {
    const answers = await Promise.all([3, 4, 5, 6].map((amount) => counters.hit('work#org-4', 50, 5_000, amount)));
    expect(Math.max(...answers)).toBe(18);
    expect(await item('work#org-4#50')).toMatchObject({ count: 18 });
  });

  it('in memory as on DynamoDB: the latest window’s count', async () => {
    const memory = new InMemoryRateLimitCounters();
    expect(await memory.hit('work#org-5', 30, 0, 50)).toBe(50);
    expect(await memory.hit('work#org-5', 31, 0, 7)).toBe(7);
    expect(await memory.hit('work#org-5', 30, 0, 5)).toBe(55);
    expect(memory.counted('work#org-5')).toBe(7);
  });
});
