/**
 * A flow's life through the API alone, so it holds against the local runtime and any deployment (the synthesized
 * stack of `npm run test:stack`, LocalStack): a definition stored, a webhook that pauses at a human-in-the-loop node,
 * the message that resumes it to the end, an app event, the sessions as the dashboard reads them, and the analytics
 * events each run recorded, queried by session and by event name, for the organization that owns the agent only.
 * The model is the offline one (no model configured), which any deployment without Bedrock or MODEL_BASE_URL runs.
 */
import { randomUUID } from 'node:crypto';
import { crmFlow, refundFlow } from '../helpers/flow-definitions';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;
let agentId: string;

interface Result {
  sessionId: string;
  status: string;
  currentNode: string | null;
  flowName: string | null;
  aiMessages: { node: string; content: string }[];
}

interface AnalyticsEvent {
  eventName: string;
  sessionId: string;
  payload: Record<string, unknown>;
}

beforeAll(async () => {
  service = await startService();
  call = client(service);
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Refund desk' } });
  expect(agent.status).toBe(201);
  agentId = agent.body.agentId;
  const stored = await call('PUT', `/dashboard/agents/${agentId}/definition/production`, {
    body: { flows: [refundFlow, crmFlow], tools: [], variables: {} },
  });
  expect(stored.status).toBe(200);
});
afterAll(() => service?.stop());

const webhook = (body: Record<string, unknown>) =>
  call<Result>('POST', `/api/v1/webhooks/${agentId}/production/RefundStart`, { body });

/** The events of the query, oldest first. */
async function events(filters: Record<string, unknown>): Promise<AnalyticsEvent[]> {
  const page = await call<{ data: AnalyticsEvent[] }>('POST', '/api/v1/events/agent', {
    body: { agentId, filters: { environment: 'production', ...filters }, limit: 1000 },
  });
  expect(page.status).toBe(200);
  return [...page.body.data].reverse();
}

it('pauses a webhook run at a human-in-the-loop node and resumes it to the end with the next message', async () => {
  const started = await webhook({ customer: { name: 'Ada' } });
  expect(started.status).toBe(200);
  expect(started.body).toMatchObject({ status: 'paused', currentNode: 'AskReason', flowName: 'refund' });
  expect(started.body.aiMessages.map((m) => m.content)).toEqual(['Ask Ada why they want a refund.']);
  const { sessionId } = started.body;

  const answered = await webhook({ sessionId, message: 'The router arrived broken' });
  expect(answered.body).toMatchObject({ sessionId, status: 'completed', currentNode: null });
  expect(answered.body.aiMessages.map((m) => m.content)).toEqual(['Confirm the refund of the damaged router to Ada.']);

  const session = await call<{ status: string; messages: { role: string }[] }>(
    'GET',
    `/dashboard/agents/${agentId}/sessions/production/${sessionId}`,
  );
  expect(session.body.status).toBe('completed');
  expect(session.body.messages.map((m) => m.role)).toEqual(['assistant', 'user', 'assistant']);

  // Analytics events are written in the background of a run: wait until both runs' are there.
  const recorded = await pollUntil(
    () => events({ sessionId }),
    (found) => found.filter((e) => e.eventName === 'node_execution').length >= 3,
  );
  expect(recorded.every((e) => e.sessionId === sessionId)).toBe(true);
  expect(recorded.filter((e) => e.eventName === 'invocation_start').map((e) => e.payload.resumedNode)).toEqual([
    null,
    'AskReason',
  ]);
  expect(recorded.filter((e) => e.eventName === 'node_execution').map((e) => e.payload.nodeName)).toEqual([
    'RefundStart',
    'AskReason',
    'Approve',
  ]);
});

it('runs an app event to its tool, whose custom analytics event is found by name, by its owner only', async () => {
  const delivered = await call<Result>('POST', `/api/v1/app-events/${agentId}/production`, {
    body: { appName: 'crm', eventName: 'ticket.created', payload: { ticketId: 'T-42' } },
  });
  expect(delivered.status).toBe(200);
  expect(delivered.body).toMatchObject({ status: 'completed', flowName: 'crm' });
  // Its prompt node does not send its message (sendAiMessage false).
  expect(delivered.body.aiMessages).toEqual([]);

  const tracked = await pollUntil(
    () => events({ eventName: 'ticket_acknowledged' }),
    (found) => found.length > 0,
  );
  expect(tracked).toHaveLength(1);
  expect(tracked[0]).toMatchObject({ sessionId: delivered.body.sessionId, payload: { ticketId: 'T-42' } });

  const other = client(service, service.tokens[1]);
  const foreign = await other('POST', '/api/v1/events/agent', {
    body: { agentId, filters: { environment: 'production' } },
  });
  expect(foreign.status).toBe(404);
});

interface SessionSummary {
  sessionId: string;
  status: string;
  flowName: string | null;
  currentNode: string | null;
  trigger: { name: string; type: string };
  createdAt: string;
  updatedAt: string;
}

it('lists the sessions newest first, a page at a time, filtered by status; a bad limit, status or token is a 400', async () => {
  const started: string[] = [];
  for (let i = 0; i < 5; i++) {
    const run = await webhook({ customer: { name: `Customer ${i}` } });
    expect(run.status).toBe(200);
    started.push(run.body.sessionId);
  }
  const ended = await webhook({ sessionId: started[0], message: 'It arrived broken' });
  expect(ended.status).toBe(200);
  const path = `/dashboard/agents/${agentId}/sessions/production`;
  type Page = { data: SessionSummary[]; count: number; nextToken: string | null };
  const all: SessionSummary[] = [];
  let nextToken: string | null = null;
  do {
    const query: Record<string, string> = { limit: '2', ...(nextToken ? { nextToken } : {}) };
    const page = await call<Page>('GET', path, { query });
    expect(page.status).toBe(200);
    expect(page.body.count).toBe(page.body.data.length);
    expect(page.body.data.length).toBeLessThanOrEqual(2);
    all.push(...page.body.data);
    nextToken = page.body.nextToken;
  } while (nextToken);
  const positions = all.map((s) => `${s.createdAt}#${s.sessionId}`);
  expect(positions).toEqual([...positions].sort().reverse());
  expect(new Set(all.map((s) => s.sessionId)).size).toBe(all.length);
  for (const id of started) expect(all.map((s) => s.sessionId)).toContain(id);
  expect(all.find((s) => s.sessionId === started[1])).toEqual({
    sessionId: started[1],
    status: 'paused',
    flowName: 'refund',
    currentNode: 'AskReason',
    trigger: { name: 'RefundStart', type: 'webhook' },
    createdAt: expect.any(String),
    updatedAt: expect.any(String),
  });

  const completed = await call<Page>('GET', path, { query: { status: 'completed', limit: '100' } });
  expect(completed.status).toBe(200);
  expect(completed.body.data.map((s) => s.sessionId)).toContain(started[0]);
  expect(completed.body.data.every((s) => s.status === 'completed')).toBe(true);
  expect(completed.body.data.map((s) => s.sessionId)).not.toContain(started[1]);

  // A caller may start a session with an id of its own, in upper case: the newest, so a token points at it.
  const ownId = randomUUID().toUpperCase();
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect((await webhook({ sessionId: ownId, customer: { name: 'Grace' } })).status).toBe(200);
  const first = await call<Page>('GET', path, { query: { limit: '1' } });
  expect(first.body.data.map((s) => s.sessionId)).toEqual([ownId]);
  const second = await call<Page>('GET', path, { query: { limit: '1', nextToken: first.body.nextToken as string } });
  expect(second.status).toBe(200);
  expect(second.body.data).toHaveLength(1);
  expect(second.body.data[0].sessionId).not.toBe(ownId);
  const refusals: [Record<string, string>, string][] = [
    [{ limit: '0' }, 'limit'],
    [{ limit: '101' }, 'limit'],
    [{ limit: 'ten' }, 'limit'],
    [{ status: 'sleeping' }, 'status'],
    [{ nextToken: 'not-a-token' }, 'nextToken'],
    // A token of the unfiltered list is refused for the filtered one.
    [{ status: 'paused', nextToken: first.body.nextToken as string }, 'nextToken'],
  ];
  for (const [query, field] of refusals) {
    const refused = await call<{ error: { code: string; details: { field: string }[] } }>('GET', path, { query });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('VALIDATION_ERROR');
    expect(refused.body.error.details[0].field).toBe(field);
  }
  const mismatch = await call<{ error: { details: { rule: string }[] } }>('GET', path, {
    query: { status: 'paused', nextToken: first.body.nextToken as string },
  });
  expect(mismatch.body.error.details[0].rule).toBe('nextToken.query');
});
