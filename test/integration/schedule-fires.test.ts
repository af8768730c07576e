/**
 * Schedule fires fanned out to the flow runner's queue (docs/flows.md, "Schedules"), on the local runtime
 * (`bin/local.ts` as a child process, LOCAL_WORKER=off) and its engines: the runtime's timer calls the schedule tick's
 * handler every 200 ms with "now" read from a file this test writes (SCHEDULER_CLOCK_FILE), the tick sends each due
 * fire to the flow-runs queue in fauxqs, and separate flow runners (`bin/worker.ts`, SIGKILLable) run them. Flows
 * call HTTP tools on a loopback server that counts the calls and can hold a request open.
 *
 * Proves: (a) one message per due fire: three fires of a trigger are three messages, three sessions, each run once,
 * and later ticks send nothing more; (b) a fire delivered three times (two copies sent by hand at once, as SQS may
 * deliver twice or two ticks send, then the tick's own) runs once; (c) a fire whose runner is killed in a node is delivered again and run to its end from
 * its last stored node; (d) the tick sends every tenant's fires while one tenant's fire is held in a tool, and the
 * others run to their end meanwhile.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { fireSessionId } from '#core/flows/scheduler';
import type { ScheduleFireMessage } from '#ports/flows';
import type { EnginesFile } from '../../lib/local/data-folder';
import { LOCAL_REGION } from '../../lib/local/engine-credentials';
import { queueDrained } from '../../lib/local/queue-worker';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';
import { startWorker, type TestWorker } from '../helpers/worker';

jest.setTimeout(120_000);

interface Session {
  sessionId: string;
  status: string;
  trigger: { name: string; type: string };
  memory: Record<string, unknown>;
  outputs: Record<string, Record<string, unknown>>;
  invocations: number;
  version: number;
  updatedAt: string;
  run?: { next: { node: string } | null; runner: string | null; takeovers: number; steps: { node: string }[] };
}

interface LastTick {
  sequence: number;
  now: string;
  sent: number;
  alreadySent: number;
  failed: number;
  sentTotal: number;
}

let service: TestService;
let call: ReturnType<typeof client>;
let callB: ReturnType<typeof client>;
let clockDir: string;
let clockFile: string;
let sqs: SQSClient;
let engines: EnginesFile;
const workers: TestWorker[] = [];
// Short, so a killed runner's run is taken over in seconds: a live runner renews its lease every second.
const RUNNER_ENV = { OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true', FLOW_SESSION_LEASE_MS: '3000' };

/** The loopback tool server: counts calls per path; a path in `holding` is answered only when the test says so. */
let toolServer: Server;
let toolUrl: string;
const calls = new Map<string, number>();
const holding = new Map<string, { reached: () => void; responses: ServerResponse[] }>();

beforeAll(async () => {
  toolServer = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('end', () => {
      const path = request.url ?? '/';
      calls.set(path, (calls.get(path) ?? 0) + 1);
      const hold = holding.get(path);
      if (hold) {
        hold.responses.push(response);
        hold.reached();
        return;
      }
      const answer = () =>
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path, ok: true }));
      if (path.endsWith('/slow')) setTimeout(answer, 1_000);
      else answer();
    });
  });
  await new Promise<void>((done) => toolServer.listen(0, '127.0.0.1', done));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;

  clockDir = mkdtempSync(join(tmpdir(), 'aps-clock-'));
  clockFile = join(clockDir, 'now');
  setClock(new Date());
  service = await startService({
    env: {
      ...RUNNER_ENV,
      LOCAL_WORKER: 'off',
      FLOW_RUN_VISIBILITY_TIMEOUT_SECONDS: '2',
      SCHEDULER_CLOCK_FILE: clockFile,
      SCHEDULER_INTERVAL_MS: '200',
    },
  });
  call = client(service);
  callB = client(service, service.tokens[1]);
  engines = JSON.parse(readFileSync(join(service.dataDir as string, 'engines.json'), 'utf8')) as EnginesFile;
  sqs = new SQSClient({
    endpoint: engines.sqsEndpoint,
    region: LOCAL_REGION,
    credentials: { ...engines.credentials },
    useQueueUrlAsEndpoint: false,
  });
  workers.push(await startWorker(service.dataDir as string, RUNNER_ENV));
});

afterAll(async () => {
  for (const hold of holding.values()) for (const response of hold.responses) response.destroy();
  for (const worker of workers) await worker.kill();
  sqs?.destroy();
  await service?.stop();
  toolServer?.closeAllConnections();
  await new Promise<void>((done) => toolServer?.close(() => done()));
  if (clockDir) rmSync(clockDir, { recursive: true, force: true });
});

/** The latest time the scheduler's clock was set to: each test's fires come after it. */
let horizon = 0;

function setClock(at: Date): void {
  horizon = Math.max(horizon, at.getTime());
  writeFileSync(clockFile, at.toISOString());
}

/** The runtime writes each tick's outcome beside the clock file (bin/local.ts); waits for one that holds. */
async function tickWhere(holds: (tick: LastTick) => boolean): Promise<LastTick> {
  const read = async (): Promise<LastTick | null> => {
    try {
      return JSON.parse(readFileSync(`${clockFile}.last-tick`, 'utf8')) as LastTick;
    } catch {
      return null; // not written yet, or read while being written
    }
  };
  const tick = await pollUntil(read, (t) => t !== null && holds(t));
  if (!tick || !holds(tick)) throw new Error(`no schedule tick such that ${holds}; last: ${JSON.stringify(tick)}`);
  return tick;
}

/**
 * `count` consecutive whole minutes in one hour, after both the real time (so after the definition is stored, as a
 * fire must be) and every clock set so far (so no earlier test's trigger fires in them), and a cron (UTC) that fires
 * at exactly those minutes of that day: no other fire in this test's run.
 */
function nextMinutes(count: number): { fires: Date[]; cron: string } {
  let first = Math.ceil((Math.max(Date.now() + 90_000, horizon + 60_000) + 1) / 60_000) * 60_000;
  if (new Date(first).getUTCMinutes() + count > 60) first = Math.ceil(first / 3_600_000) * 3_600_000;
  const fires = Array.from({ length: count }, (_, i) => new Date(first + i * 60_000));
  const start = fires[0];
  const cron = `${fires.map((f) => f.getUTCMinutes()).join(',')} ${start.getUTCHours()} ${start.getUTCDate()} ${start.getUTCMonth() + 1} *`;
  return { fires, cron };
}

/** A new agent whose flow `Tick → one tool node per path` runs on `cron`; each tool calls `<toolUrl><path>`. */
async function scheduledAgent(
  as: ReturnType<typeof client>,
  name: string,
  cron: string,
  paths: string[],
): Promise<string> {
  const agent = await as<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: name } });
  const nodes = paths.map((_, i) => `Step${i + 1}`);
  const definition = {
    tools: paths.map((path, i) => ({ name: `tool${i + 1}`, url: `${toolUrl}${path}` })),
    flows: [
      {
        name: 'scheduled',
        nodes: [
          { name: 'Tick', type: 'trigger', triggerType: 'schedule', cronExpression: cron, timezone: 'UTC' },
          ...nodes.map((node, i) => ({ name: node, type: 'tool', toolName: `tool${i + 1}` })),
        ],
        edges: ['Tick', ...nodes].slice(1).map((to, i) => ({ from: ['Tick', ...nodes][i], to, type: 'stepForward' })),
      },
    ],
  };
  const stored = await as('PUT', `/dashboard/agents/${agent.body.agentId}/definition/production`, { body: definition });
  expect(stored.status).toBe(200);
  return agent.body.agentId;
}

const sessionPath = (agentId: string, at: Date) =>
  `/dashboard/agents/${agentId}/sessions/production/${fireSessionId(agentId, 'production', 'Tick', at)}`;

async function ended(as: ReturnType<typeof client>, agentId: string, at: Date, ms = 30_000): Promise<Session> {
  const answer = await pollUntil(
    () => as<Session>('GET', sessionPath(agentId, at)),
    (r) => r.status === 200 && r.body.status !== 'running',
    ms,
  );
  expect(answer.status).toBe(200);
  return answer.body;
}

async function startsOf(as: ReturnType<typeof client>, agentId: string, at: Date): Promise<unknown[]> {
  const sessionId = fireSessionId(agentId, 'production', 'Tick', at);
  const page = await as<{ data: { eventName: string; payload: Record<string, unknown> }[] }>(
    'POST',
    '/api/v1/events/agent',
    { body: { agentId, filters: { environment: 'production', sessionId }, limit: 1000 } },
  );
  expect(page.status).toBe(200);
  return page.body.data.filter((e) => e.eventName === 'invocation_start').map((e) => e.payload);
}

/** Holds every request to `path` open until released; resolves `reached` at the first. */
function hold(path: string): { reached: Promise<void>; release: () => void } {
  let reached: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const entry = { reached, responses: [] as ServerResponse[] };
  holding.set(path, entry);
  return {
    reached: promise,
    release: () => {
      holding.delete(path);
      for (const response of entry.responses.splice(0)) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path, released: true }));
      }
    },
  };
}

it('(a) sends one message per due fire, and each fire runs once', async () => {
  const { fires, cron } = nextMinutes(3);
  const agentId = await scheduledAgent(call, 'Three fires', cron, ['/a/ping']);
  const before = await tickWhere(() => true);

  const now = new Date(fires[2].getTime() + 20_000).toISOString();
  setClock(new Date(now));
  const tick = await tickWhere((t) => t.now === now && t.sequence > before.sequence);
  // The first tick at that clock sent the three fires; every tick after it finds them sent.
  const later = await tickWhere((t) => t.now === now && t.sequence > tick.sequence + 2);
  expect(later).toMatchObject({ sent: 0, alreadySent: 3, failed: 0 });
  expect(later.sentTotal - before.sentTotal).toBe(3);

  for (const at of fires) {
    const session = await ended(call, agentId, at);
    expect(session).toMatchObject({
      status: 'completed',
      trigger: { name: 'Tick', type: 'schedule' },
      memory: { scheduledAt: at.toISOString() },
      invocations: 1,
      run: { next: null, takeovers: 1 },
    });
    expect(await startsOf(call, agentId, at)).toEqual([
      expect.objectContaining({ triggerType: 'schedule', body: { scheduledAt: at.toISOString() } }),
    ]);
  }
  expect(calls.get('/a/ping')).toBe(3);
});

it('(b) runs a fire delivered three times only once', async () => {
  const {
    fires: [at],
    cron,
  } = nextMinutes(1);
  const agentId = await scheduledAgent(call, 'Delivered thrice', cron, ['/b/slow']);
  const fire: ScheduleFireMessage = {
    kind: 'schedule-fire',
    agentId,
    environment: 'production',
    trigger: 'Tick',
    scheduledAt: at.toISOString(),
  };
  // Two copies by hand, run by two runners at once (its tool takes 1 s), then the tick's own.
  for (let copy = 0; copy < 2; copy += 1) {
    await sqs.send(new SendMessageCommand({ QueueUrl: engines.flowRunQueueUrl, MessageBody: JSON.stringify(fire) }));
  }
  // Counted by every tick's running total, as (a) and (d) do: the outcome file holds only the latest tick, and a later
  // tick at the same clock (sent 0, one already sent) may replace the one that sent before this test reads it.
  const before = await tickWhere(() => true);
  const now = new Date(at.getTime() + 10_000).toISOString();
  setClock(new Date(now));
  await tickWhere((t) => t.now === now && t.sentTotal - before.sentTotal === 1);

  const session = await ended(call, agentId, at);
  await queueDrained(sqs, engines.flowRunQueueUrl);
  expect(session).toMatchObject({ status: 'completed', invocations: 1, run: { takeovers: 1 } });
  expect(calls.get('/b/slow')).toBe(1);
  expect(await startsOf(call, agentId, at)).toHaveLength(1);
  // Every copy is consumed and none changed the ended session.
  expect((await call<Session>('GET', sessionPath(agentId, at))).body).toMatchObject({
    version: session.version,
    updatedAt: session.updatedAt,
  });
});

it('(c) runs a fire whose runner was killed in a node again, from its last stored node', async () => {
  const {
    fires: [at],
    cron,
  } = nextMinutes(1);
  const agentId = await scheduledAgent(call, 'Cut off', cron, ['/c/first', '/c/held', '/c/last']);
  const held = hold('/c/held');
  setClock(new Date(at.getTime() + 10_000));
  await held.reached;

  // The runner dies in Step2: the fire is cut off there, its first tool stored as done.
  await workers[0].kill();
  const cut = (await call<Session>('GET', sessionPath(agentId, at))).body;
  expect(cut).toMatchObject({ status: 'running', run: { next: { node: 'Step2' }, takeovers: 1 } });
  expect(cut.outputs).toHaveProperty('Step1');
  held.release();

  // The message comes back after its visibility timeout (2 s), the lease (3 s) has run out: a new runner ends it.
  workers.push(await startWorker(service.dataDir as string, RUNNER_ENV));
  const session = await ended(call, agentId, at, 45_000);
  expect(session).toMatchObject({ status: 'completed', run: { next: null, takeovers: 2 } });
  expect(session.run?.steps.map((s) => s.node)).toEqual(['Tick', 'Step1', 'Step2', 'Step3']);
  // The tools done before the kill ran once; the one in flight ran again (at least once).
  expect(Object.fromEntries([...calls].filter(([path]) => path.startsWith('/c/')))).toEqual({
    '/c/first': 1,
    '/c/held': 2,
    '/c/last': 1,
  });
  expect(await startsOf(call, agentId, at)).toHaveLength(1);
});

it("(d) sends every tenant's fires while one tenant's fire is held, and the others run meanwhile", async () => {
  const {
    fires: [at],
    cron,
  } = nextMinutes(1);
  const slow = await scheduledAgent(call, 'Held tenant', cron, ['/d/held']);
  const others: { as: ReturnType<typeof client>; agentId: string }[] = [];
  for (let i = 0; i < 5; i += 1) {
    const as = i % 2 === 0 ? callB : call;
    others.push({ as, agentId: await scheduledAgent(as, `Tenant ${i}`, cron, [`/d/other${i}`]) });
  }
  const held = hold('/d/held');
  const before = await tickWhere(() => true);
  const now = new Date(at.getTime() + 10_000).toISOString();
  setClock(new Date(now));

  // The tick that sent the six fires returned while the held one is still in its tool.
  await held.reached;
  const tick = await tickWhere((t) => t.now === now && t.sentTotal - before.sentTotal === 6);
  expect(tick.failed).toBe(0);
  for (const { as, agentId } of others) {
    await expect(ended(as, agentId, at)).resolves.toMatchObject({ status: 'completed' });
  }
  expect((await call<Session>('GET', sessionPath(slow, at))).body.status).toBe('running');

  held.release();
  await expect(ended(call, slow, at)).resolves.toMatchObject({ status: 'completed', run: { takeovers: 1 } });
  expect(calls.get('/d/held')).toBe(1);
});
