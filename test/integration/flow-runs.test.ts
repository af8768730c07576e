/**
 * Runs longer than a request (docs/flows.md, "Long runs") on the local runtime (`bin/local.ts` as a child process,
 * FLOW_SYNC_BUDGET_MS=1000) with HTTP tools and the agent's callback on a loopback server (allowed by
 * OUTBOUND_ALLOW_PRIVATE_NETWORK=true) whose slow tools take 2 s:
 *
 * - a webhook whose run outlives the budget answers 202 `{ sessionId, status: "running" }`; the run goes on through
 *   the flow runner's queue (fauxqs) in the runtime's own flow runner, GET …/sessions/… shows its progress, AI
 *   messages reach the callback while it runs, and it completes with each tool called once; an app event too;
 * - with LOCAL_WORKER=off the flow runner is a separate process (`bin/worker.ts`): SIGKILLed while a node is in
 *   flight, a new one takes the run over once the session's lease ran out and completes it. Every tool that had
 *   completed is called once; only the node in flight at the kill ran again (its callback POST is seen twice: the
 *   documented at-least-once boundary).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';
import { startWorker, type TestWorker } from '../helpers/worker';

jest.setTimeout(120_000);

interface Session {
  sessionId: string;
  status: string;
  currentNode: string | null;
  outputs: Record<string, Record<string, unknown>>;
  aiMessages: { node: string; content: string; callback?: { delivered: boolean } }[];
  error: { code: string } | null;
  run?: {
    next: { node: string; phase: string } | null;
    runner: string | null;
    takeovers: number;
    steps: { step: number; node: string }[];
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The loopback tool and callback server: counts calls per path; `/slow*` answer after 2 s. */
let toolServer: Server;
let toolUrl: string;
const calls = new Map<string, number>();
const callbacks: { node: string; content: string }[] = [];
/** Called with each request before it is answered (a test holds or inspects the run there). */
let onRequest: (path: string, body: Record<string, unknown>, response: ServerResponse) => Promise<boolean> = async () =>
  false;

beforeAll(async () => {
  toolServer = createServer((request: IncomingMessage, response: ServerResponse) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      void (async () => {
        const path = request.url ?? '/';
        const body = parts.length ? (JSON.parse(Buffer.concat(parts).toString()) as Record<string, unknown>) : {};
        calls.set(path, (calls.get(path) ?? 0) + 1);
        if (path === '/callback') callbacks.push({ node: String(body.node), content: String(body.content) });
        if (await onRequest(path, body, response)) return;
        if (path.startsWith('/slow')) await sleep(2_000);
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path, ok: true }));
      })();
    });
  });
  await new Promise<void>((done) => toolServer.listen(0, '127.0.0.1', done));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  toolServer?.closeAllConnections();
  await new Promise<void>((done) => toolServer?.close(() => done()));
});

beforeEach(() => {
  calls.clear();
  callbacks.length = 0;
  onRequest = async () => false;
});

const FLOW_ENV = { OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true', FLOW_SYNC_BUDGET_MS: '1000' };

function definition(nodes: Record<string, unknown>[], trigger: Record<string, unknown>) {
  const names = [trigger.name as string, ...nodes.map((n) => n.name as string)];
  return {
    callbackUrl: `${toolUrl}/callback`,
    tools: ['slow', 'slowAgain', 'lookup', 'finish'].map((name) => ({ name, url: `${toolUrl}/${name}` })),
    flows: [
      {
        name: 'long',
        nodes: [trigger, ...nodes],
        edges: names.slice(1).map((to, i) => ({ from: names[i], to, type: 'stepForward' })),
      },
    ],
  };
}

const toolNode = (name: string, toolName: string) => ({ name, type: 'tool', toolName });
const promptNode = (name: string, prompt: string) => ({ name, type: 'promptNode', displayName: name, prompt });

async function agentWith(call: ReturnType<typeof client>, body: Record<string, unknown>): Promise<string> {
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Long runs' } });
  const stored = await call('PUT', `/dashboard/agents/${agent.body.agentId}/definition/production`, { body });
  expect(stored.status).toBe(200);
  return agent.body.agentId;
}

describe('a run that outlives the budget, on the runtime with its own flow runner', () => {
  let service: TestService;
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    service = await startService({ env: FLOW_ENV });
    call = client(service);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('answers 202 running, shows progress and delivers AI messages as they come, then completes', async () => {
    const agentId = await agentWith(
      call,
      definition(
        [
          toolNode('Slow', 'slow'),
          promptNode('Greet', 'Hello {memory.customer}, we are on it.'),
          toolNode('SlowAgain', 'slowAgain'),
          promptNode('Bye', 'Done, {memory.customer}: {tools.SlowAgain.path}.'),
        ],
        { name: 'Start', type: 'trigger', triggerType: 'webhook' },
      ),
    );
    // While SlowAgain runs in the flow runner: what the API shows, and whether the session takes another message.
    let during: { session: Session; callbacks: string[]; busy: { status: number; body: unknown } } | undefined;
    const sessions = new Set<string>();
    onRequest = async (path, _body, response) => {
      if (path !== '/slowAgain') return false;
      // The runner may get here before the 202 reaches this test.
      while (sessions.size === 0) await sleep(20);
      const sessionId = [...sessions][0];
      const got = await call<Session>('GET', `/dashboard/agents/${agentId}/sessions/production/${sessionId}`);
      const busy = await call('POST', `/api/v1/webhooks/${agentId}/production/Start`, { body: { sessionId } });
      during = { session: got.body, callbacks: callbacks.map((c) => c.node), busy };
      await sleep(2_000);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"path":"/slowAgain"}');
      return true;
    };

    const answer = await call<Session & { success: boolean }>('POST', `/api/v1/webhooks/${agentId}/production/Start`, {
      body: { customer: 'Ada' },
    });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ success: true, sessionId: expect.any(String), status: 'running', aiMessages: [] });
    const path = `/dashboard/agents/${agentId}/sessions/production/${answer.body.sessionId}`;
    // Answered before the run ended: SlowAgain holds the run until this test has the session id, then 2 s more.
    sessions.add(answer.body.sessionId);
    expect((await call<Session>('GET', path)).body.status).toBe('running');

    const ended = await pollUntil(
      () => call<Session>('GET', path),
      (r) => r.body.status !== 'running',
      30_000,
    );
    expect(ended.body).toMatchObject({ status: 'completed', error: null, currentNode: null });
    expect(ended.body.aiMessages.map((m) => [m.node, m.content, m.callback?.delivered])).toEqual([
      ['Greet', 'Hello Ada, we are on it.', true],
      ['Bye', 'Done, Ada: /slowAgain.', true],
    ]);
    expect(ended.body.run).toMatchObject({ next: null, runner: null, takeovers: 1 });
    expect(ended.body.run?.steps.map((s) => s.node)).toEqual(['Start', 'Slow', 'Greet', 'SlowAgain', 'Bye']);
    expect(Object.fromEntries(calls)).toEqual({ '/slow': 1, '/slowAgain': 1, '/callback': 2 });

    // Mid-run, in the runner: Greet stored and its message already at the callback; the session refuses a message.
    expect(during?.session).toMatchObject({
      status: 'running',
      outputs: { Greet: { response: 'Hello Ada, we are on it.' } },
    });
    expect(during?.session.run).toMatchObject({ next: { node: 'SlowAgain', phase: 'run' }, takeovers: 1 });
    expect(during?.session.run?.runner).toEqual(expect.any(String));
    expect(during?.session.aiMessages.map((m) => m.node)).toEqual(['Greet']);
    expect(during?.callbacks).toEqual(['Greet']);
    expect(during?.busy).toMatchObject({ status: 409, body: { success: false, error: { code: 'SESSION_BUSY' } } });

    // Once ended, the session takes the next message at once (no lease left behind).
    const next = await call<Session>('POST', `/api/v1/webhooks/${agentId}/production/Start`, {
      body: { sessionId: answer.body.sessionId },
    });
    expect(next.status).toBe(202);
    onRequest = async () => false;
    await pollUntil(
      () => call<Session>('GET', path),
      (r) => r.body.status !== 'running',
      30_000,
    );
  });

  it('answers an app event that outlives the budget with 202 too, and the run completes', async () => {
    const agentId = await agentWith(
      call,
      definition([toolNode('Slow', 'slow'), toolNode('Finish', 'finish')], {
        name: 'Ticket',
        type: 'trigger',
        triggerType: 'app',
        appName: 'crm',
      }),
    );
    const answer = await call<Session>('POST', `/api/v1/app-events/${agentId}/production`, {
      body: { appName: 'crm', eventName: 'ticket.created', payload: { ticketId: 'T-1' } },
    });
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ status: 'running' });
    const ended = await pollUntil(
      () => call<Session>('GET', `/dashboard/agents/${agentId}/sessions/production/${answer.body.sessionId}`),
      (r) => r.body.status !== 'running',
      30_000,
    );
    expect(ended.body).toMatchObject({ status: 'completed', outputs: { Finish: { path: '/finish' } } });
    expect(Object.fromEntries(calls)).toEqual({ '/slow': 1, '/finish': 1 });
  });

  it('answers 200 as before when the run ends within the budget', async () => {
    const agentId = await agentWith(
      call,
      definition([toolNode('Finish', 'finish')], { name: 'Start', type: 'trigger', triggerType: 'webhook' }),
    );
    const answer = await call<Session>('POST', `/api/v1/webhooks/${agentId}/production/Start`, { body: {} });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'completed', outputs: { Finish: { path: '/finish' } } });
    expect(answer.body).not.toHaveProperty('run');
  });
});

describe('a flow runner SIGKILLed during a run (LOCAL_WORKER=off, bin/worker.ts)', () => {
  let service: TestService;
  let call: ReturnType<typeof client>;
  const workers: TestWorker[] = [];
  // Short, so the test does not wait a minute: the runner renews the lease every second while it lives.
  const RUNNER_ENV = { ...FLOW_ENV, FLOW_SESSION_LEASE_MS: '3000' };

  beforeAll(async () => {
    service = await startService({
      env: { ...RUNNER_ENV, LOCAL_WORKER: 'off', FLOW_RUN_VISIBILITY_TIMEOUT_SECONDS: '2' },
    });
    call = client(service);
  });
  afterAll(async () => {
    for (const worker of workers) await worker.kill();
    await service?.stop();
  });

  it('is taken over from its last stored node: completed tools are not called again', async () => {
    const agentId = await agentWith(
      call,
      definition(
        [
          toolNode('Slow', 'slow'),
          toolNode('Lookup', 'lookup'),
          promptNode('Notify', 'Your order is being looked at, {memory.customer}.'),
          toolNode('Finish', 'finish'),
        ],
        { name: 'Start', type: 'trigger', triggerType: 'webhook' },
      ),
    );
    let notified: () => void = () => undefined;
    const firstNotify = new Promise<void>((resolve) => {
      notified = resolve;
    });
    // The first callback POST of Notify is held open: the runner is in flight in that node when it is killed.
    onRequest = async (path, _body, response) => {
      if (path !== '/callback' || calls.get('/callback') !== 1) return false;
      notified();
      response.on('close', () => undefined);
      return true;
    };

    const answer = await call<Session>('POST', `/api/v1/webhooks/${agentId}/production/Start`, {
      body: { customer: 'Ada' },
    });
    expect(answer.status).toBe(202);
    const path = `/dashboard/agents/${agentId}/sessions/production/${answer.body.sessionId}`;
    // No runner yet: the run waits in the queue.
    await sleep(500);
    expect((await call<Session>('GET', path)).body.run).toMatchObject({ next: { node: 'Lookup' }, runner: null });

    workers.push(await startWorker(service.dataDir as string, RUNNER_ENV));
    await firstNotify;
    await workers[0].kill();
    const killed = (await call<Session>('GET', path)).body;
    expect(killed).toMatchObject({ status: 'running', outputs: { Lookup: { path: '/lookup' } } });
    expect(killed.outputs).not.toHaveProperty('Notify');
    expect(killed.run).toMatchObject({ next: { node: 'Notify', phase: 'run' }, takeovers: 1 });

    workers.push(await startWorker(service.dataDir as string, RUNNER_ENV));
    const ended = await pollUntil(
      () => call<Session>('GET', path),
      (r) => r.body.status !== 'running',
      45_000,
    );
    expect(ended.body).toMatchObject({ status: 'completed', error: null });
    expect(ended.body.run).toMatchObject({ next: null, takeovers: 2 });
    expect(ended.body.run?.steps.map((s) => s.node)).toEqual(['Start', 'Slow', 'Lookup', 'Notify', 'Finish']);
    // Each tool once; the node in flight at the kill (Notify) ran again: its callback was POSTed twice, its message
    // is stored once.
    expect(Object.fromEntries(calls)).toEqual({ '/slow': 1, '/lookup': 1, '/finish': 1, '/callback': 2 });
    expect(ended.body.aiMessages.map((m) => [m.node, m.callback?.delivered])).toEqual([['Notify', true]]);
  });
});
