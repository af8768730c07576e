/**
 * The flow work budget (docs/rate-limits.md, "Flow work") on the local runtime (`bin/local.ts` as a child process)
 * with a small budget: 20 units every 5 s (FLOW_WORK_BURST=20, FLOW_WORK_PER_SECOND=4), counted in the runtime's
 * DynamoDB, the hand-over's delay held by its SQS engine (fauxqs) and the run finished by its own flow runner:
 *
 * - a webhook whose run of 30 nodes (chained by jumps) uses the window up answers 202: handed over where the budget ran
 *   out, the runner's message delayed until the window ends; it completes in the next window, the runner taking it
 *   once (a message delivered before the delay would have been refused and handed over again);
 * - meanwhile the same organization's next webhook, and the dashboard's mirror of it, get 429 RATE_LIMITED with
 *   Retry-After, and no session; the other organization's webhook answers 200.
 */
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

jest.setTimeout(60_000);

const BURST = 20;
const WINDOW_MS = 5_000;

interface Session {
  sessionId: string;
  status: string;
  error: { code: string } | null;
  run?: { next: { node: string; phase: string } | null; runner: string | null; takeovers: number; step: number };
}

let service: TestService;

beforeAll(async () => {
  service = await startService({ env: { FLOW_WORK_PER_SECOND: '4', FLOW_WORK_BURST: String(BURST) } });
});
afterAll(() => service?.stop());

/** Start → J1 ⤳ J2 ⤳ … ⤳ J28 ⤳ End: 30 nodes. */
function jumpChain() {
  const jumps = Array.from({ length: 28 }, (_, i) => `J${i + 1}`);
  return {
    flows: [
      {
        name: 'loop',
        nodes: [
          { name: 'Start', type: 'trigger', triggerType: 'webhook' },
          ...jumps.map((name, i) => ({ name, type: 'jumpToNode', targetNodeId: jumps[i + 1] ?? 'End' })),
          { name: 'End', type: 'junction' },
        ],
        edges: [{ from: 'Start', to: 'J1', type: 'stepForward' }],
      },
    ],
  };
}

async function agentWith(call: ReturnType<typeof client>, definition: Record<string, unknown>): Promise<string> {
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Work' } });
  const stored = await call('PUT', `/dashboard/agents/${agent.body.agentId}/definition/production`, {
    body: definition,
  });
  expect(stored.status).toBe(200);
  return agent.body.agentId;
}

/** Waits for the start of the next window (the runtime's clock is this machine's), with room for the requests. */
async function nextWindow(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, WINDOW_MS - (Date.now() % WINDOW_MS) + 50));
}

it("hands a run that uses the budget up over, refuses the organization's next invocations, and finishes the run later", async () => {
  const callA = client(service, service.tokens[0]);
  const callB = client(service, service.tokens[1]);
  const loop = await agentWith(callA, jumpChain());
  const short = await agentWith(callB, {
    flows: [
      {
        name: 'short',
        nodes: [
          { name: 'Start', type: 'trigger', triggerType: 'webhook' },
          { name: 'End', type: 'junction' },
        ],
        edges: [{ from: 'Start', to: 'End', type: 'stepForward' }],
      },
    ],
  });

  await nextWindow();
  const windowEnds = Date.now() - (Date.now() % WINDOW_MS) + WINDOW_MS;
  const first = await callA<Session>('POST', `/api/v1/webhooks/${loop}/production/Start`, { body: {} });
  expect(first.status).toBe(202);
  expect(first.body).toMatchObject({ success: true, status: 'running' });
  const path = `/dashboard/agents/${loop}/sessions/production/${first.body.sessionId}`;
  // Waiting for the window to end: 20 nodes run, the 21st not yet taken by a runner.
  const waiting = await callA<Session>('GET', path);
  expect(waiting.body).toMatchObject({ status: 'running', run: { next: { node: 'J20', phase: 'run' }, step: 20 } });

  const sessionId = '6f7c2b1e-0d3a-4c5b-9e8f-7a6b5c4d3e2f';
  const refused = await callA('POST', `/api/v1/webhooks/${loop}/production/Start`, { body: { sessionId } });
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({
    success: false,
    error: { code: 'RATE_LIMITED', message: expect.stringContaining('flow work budget of this organization') },
  });
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(5);
  // Nothing of it was written.
  expect((await callA('GET', `/dashboard/agents/${loop}/sessions/production/${sessionId}`)).status).toBe(404);
  // The dashboard's mirror of the webhook is the same invocation.
  const mirrored = await callA('POST', `/dashboard/agents/${loop}/webhooks/production/Start`, { body: {} });
  expect(mirrored.status).toBe(429);
  expect(mirrored.headers.get('retry-after')).toEqual(expect.any(String));

  // Another organization's budget is its own.
  const other = await callB<Session>('POST', `/api/v1/webhooks/${short}/production/Start`, { body: {} });
  expect(other.status).toBe(200);
  expect(other.body).toMatchObject({ status: 'completed' });
  expect(Date.now()).toBeLessThan(windowEnds);

  const ended = await pollUntil(
    () => callA<Session>('GET', path),
    (r) => r.body.status !== 'running',
    30_000,
  );
  expect(ended.body).toMatchObject({ status: 'completed', error: null, run: { next: null, step: 30, takeovers: 1 } });
  // Not before the window ended: the runner's message was held back until then.
  expect(Date.now()).toBeGreaterThanOrEqual(windowEnds);
});
