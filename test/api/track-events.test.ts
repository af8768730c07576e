/**
 * POST /api/v1/events/track (issue 37, item 3) over HTTP against the local runtime: a custom event recorded from
 * outside a flow is returned by POST /api/v1/events/agent with the built-in ones; a retry with the same eventKey
 * stores it once; built-in names, bad names, oversized payloads and unknown fields are 400s naming the field and the
 * rule; another organization's agent, or an agent a restricted token may not use, is 404; a token without the
 * analytics scope is 403.
 */
import type { AnalyticsEventRecord } from '#core/analytics/event';
import { client, startService, type TestService } from '../helpers/service';

const TRACK = '/api/v1/events/track';
const QUERY = '/api/v1/events/agent';

let service: TestService;
let orgA: ReturnType<typeof client>;
let orgB: ReturnType<typeof client>;
let agentId: string;
let siblingId: string;

beforeAll(async () => {
  service = await startService();
  orgA = client(service);
  orgB = client(service, service.tokens[1]);
  const create = async (displayName: string) =>
    (await orgA<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName } })).body.agentId;
  agentId = await create('Desk');
  siblingId = await create('Sibling');
});

afterAll(async () => {
  await service?.stop();
});

async function events(filters: Record<string, unknown> = {}) {
  const page = await orgA<{ data: AnalyticsEventRecord[] }>('POST', QUERY, { body: { agentId, filters } });
  expect(page.status).toBe(200);
  return page.body.data;
}

it('records a custom event that the events query returns, once per eventKey', async () => {
  const first = await orgA('POST', TRACK, {
    body: {
      agentId,
      environment: 'staging',
      sessionId: 'session-42',
      eventName: 'ticket.escalated',
      payload: { tier: 'gold', minutes: 12 },
      eventKey: 'ticket-7-escalated',
    },
  });
  expect(first).toMatchObject({
    status: 201,
    body: {
      success: true,
      agentId,
      environment: 'staging',
      sessionId: 'session-42',
      eventName: 'ticket.escalated',
      eventKey: 'ticket-7-escalated',
      duplicate: false,
    },
  });
  // The same key again (a retried call): 200, nothing stored twice.
  const again = await orgA('POST', TRACK, {
    body: { agentId, environment: 'staging', eventName: 'ticket.escalated', eventKey: 'ticket-7-escalated' },
  });
  expect(again).toMatchObject({ status: 200, body: { duplicate: true } });

  const stored = await events({ environment: 'staging', eventName: 'ticket.escalated' });
  expect(stored).toEqual([
    {
      id: expect.any(Number),
      agentId,
      sessionId: 'session-42',
      environment: 'staging',
      eventName: 'ticket.escalated',
      payload: { tier: 'gold', minutes: 12 },
      created_at: expect.any(String),
    },
  ]);

  // Defaults: production, session `external`, a new key each call, an empty payload.
  const plain = await orgA<{ eventKey: string }>('POST', TRACK, { body: { agentId, eventName: 'csat' } });
  expect(plain).toMatchObject({ status: 201, body: { environment: 'production', sessionId: 'external' } });
  expect((await orgA('POST', TRACK, { body: { agentId, eventName: 'csat' } })).status).toBe(201);
  const csat = await events({ eventName: 'csat', sessionId: 'external' });
  expect(csat.map((event) => event.payload)).toEqual([{}, {}]);
});

it('refuses what a caller may not record, naming the field and the rule', async () => {
  const bad = async (body: Record<string, unknown>, field: string, rule: string) => {
    const answer = await orgA<{ error: { code: string; details: { field: string; rule: string }[] } }>('POST', TRACK, {
      body: { agentId, ...body },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('VALIDATION_ERROR');
    expect(answer.body.error.details).toContainEqual(expect.objectContaining({ field, rule }));
  };
  await bad({ eventName: 'invocation_start' }, 'eventName', 'eventName.reserved');
  await bad({ eventName: 'has space' }, 'eventName', 'eventName.format');
  await bad({ eventName: 'x'.repeat(101) }, 'eventName', 'maxLength');
  await bad({ eventName: 'big', payload: { text: 'x'.repeat(33 * 1024) } }, 'payload', 'payload.maxBytes');
  await bad({ eventName: 'list', payload: [1, 2] }, 'payload', 'type');
  await bad({ eventName: 'env', environment: 'test' }, 'environment', 'enum');
  await bad({ eventName: 'extra', created_at: '2020-01-01' }, 'created_at', 'unknownField');
  await bad({ eventName: 'key', eventKey: 'a\u0000b' }, 'eventKey', 'eventKey.characters');
  // Nothing of these was stored.
  expect((await events()).map((event) => event.eventName)).not.toContain('invocation_start');
});

it('answers 404 for an agent of another organization or one a restricted token may not use, 403 without the scope', async () => {
  expect(await orgB('POST', TRACK, { body: { agentId, eventName: 'intrusion' } })).toMatchObject({
    status: 404,
    body: { error: { code: 'AGENT_NOT_FOUND' } },
  });
  const restricted = await orgA<{ token: string }>('POST', '/dashboard/tokens', {
    body: { scopes: ['analytics'], agentIds: [siblingId], name: 'sibling code' },
  });
  expect(restricted.status).toBe(201);
  const siblingCode = client(service, restricted.body.token);
  expect(await siblingCode('POST', TRACK, { body: { agentId, eventName: 'intrusion' } })).toMatchObject({
    status: 404,
    body: { error: { code: 'AGENT_NOT_FOUND' } },
  });
  expect((await siblingCode('POST', TRACK, { body: { agentId: siblingId, eventName: 'own' } })).status).toBe(201);
  const knowledgeOnly = await orgA<{ token: string }>('POST', '/dashboard/tokens', {
    body: { scopes: ['knowledge-management'], name: 'documents only' },
  });
  expect(
    await client(service, knowledgeOnly.body.token)('POST', TRACK, { body: { agentId, eventName: 'x' } }),
  ).toMatchObject({
    status: 403,
  });
  expect((await events()).map((event) => event.eventName)).not.toContain('intrusion');
});
