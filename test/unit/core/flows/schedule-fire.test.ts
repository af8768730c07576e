/**
 * The flow runner's side of a schedule fire (core/flows/schedule-fire.ts) against dynalite, with the real session,
 * definition and analytics stores and real outbound HTTP to a loopback tool server. The clock is moved by hand, so
 * leases run out without waiting. The flow runner's queue is a list the test reads (the real queue, tick and runner:
 * test/integration/schedule-fires.test.ts).
 *
 * Proves: a fire runs in the runner as a session derived from the fire, with the payload `{ scheduledAt }`, its start
 * (invocation_start, default retrieval) once and each node once; a fire delivered again, or sent by two ticks, runs
 * nothing more; two deliveries at once run it once (the second is given back while the first holds the run); a
 * runner that dies in a node is taken over by the fire's redelivery from its last stored node; a run whose first
 * write failed (the store unreachable) is given back and runs from its start again, its start stored once; a fire
 * whose trigger is gone since the tick runs nothing; a runner at its deadline hands the fire over.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GuardedOutboundHttp } from '#adapters/network/outbound-http';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import { DynamoDefinitionStore, DynamoSessionStore } from '#adapters/store/dynamodb/flow-stores';
import { AnalyticsRecorder } from '#core/analytics/track';
import { RunHeldError } from '#core/flows/continue-run';
import { validateDefinition } from '#core/flows/definition';
import { OfflineFlowModel } from '#core/flows/offline-model';
import { type FlowRuntimeDeps, SESSION_LEASE_MS } from '#core/flows/run-context';
import { runScheduleFire } from '#core/flows/schedule-fire';
import { fireInvocationId, fireSessionId } from '#core/flows/scheduler';
import type { FlowSession } from '#core/flows/session';
import type { FlowRunMessage, ScheduleFireMessage } from '#ports/flows';
import { NO_METRICS } from '#ports/metrics';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';
import { InMemoryAgentStore } from '../../../helpers/in-memory-ports';

let dynamo: LocalDynamo;
let toolServer: Server;
let toolUrl: string;
let sessions: DynamoSessionStore;
let definitions: DynamoDefinitionStore;
let analytics: DynamoAnalyticsStore;

let nowMs = Date.parse('2026-03-01T10:00:20.000Z');
const clock = { now: () => new Date(nowMs) };
/** Calls received per tool path. */
const calls = new Map<string, number>();
/** Requests to `/hang` held open (a runner is in flight there): answered when the test says so. */
const held: ServerResponse[] = [];

beforeAll(async () => {
  dynamo = await startDynalite();
  sessions = new DynamoSessionStore(dynamo.client, await dynamo.createTable('sessions', TABLES.sessions));
  definitions = new DynamoDefinitionStore(
    dynamo.client,
    await dynamo.createTable('agentDefinitions', TABLES.agentDefinitions),
  );
  analytics = new DynamoAnalyticsStore(dynamo.client, await dynamo.createTable('analytics', TABLES.analytics), {
    clock: { now: () => new Date() },
    retentionDays: 30,
  });
  toolServer = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('end', () => {
      const path = request.url ?? '/';
      const count = (calls.get(path) ?? 0) + 1;
      calls.set(path, count);
      if (path === '/hang' && count === 1) {
        held.push(response);
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path, count }));
    });
  });
  await new Promise<void>((done) => toolServer.listen(0, '127.0.0.1', done));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const response of held) response.destroy();
  toolServer?.closeAllConnections();
  await new Promise<void>((done) => toolServer?.close(() => done()));
  await dynamo?.stop();
});

beforeEach(() => {
  calls.clear();
  nowMs += 3_600_000;
});

function runtime(overrides: Partial<FlowRuntimeDeps> = {}) {
  const sent: FlowRunMessage[] = [];
  const deps: FlowRuntimeDeps = {
    definitions,
    sessions,
    models: () => new OfflineFlowModel(),
    http: new GuardedOutboundHttp({ allowPrivateNetwork: true }),
    agents: new InMemoryAgentStore(),
    browser: { name: 'none', run: async () => Promise.reject(new Error('no browser here')), close: async () => {} },
    recorder: new AnalyticsRecorder(analytics, { uuid: randomUUID }, { maxDelayMs: 600_000 }),
    defaultRetrieval: async () => null,
    knowledge: {
      agents: { get: async () => undefined } as never,
      knowledgeBases: {} as never,
      index: {} as never,
      embedder: null,
      metrics: NO_METRICS,
    },
    generateModel: null,
    clock,
    ids: { uuid: randomUUID },
    runs: {
      send: async (message) => {
        sent.push(message);
      },
    },
    ...overrides,
  };
  return { deps, sent };
}

/** Stores a definition of one schedule flow `Tick → tools…` (in order) for a new agent; each tool is its path. */
async function scheduledAgent(tools: string[]): Promise<string> {
  const agentId = randomUUID();
  const names = ['Tick', ...tools.map((t) => t[0].toUpperCase() + t.slice(1))];
  const outcome = validateDefinition({
    tools: ['fast', 'hang', 'after'].map((name) => ({ name, url: `${toolUrl}/${name}` })),
    flows: [
      {
        name: 'nightly',
        nodes: [
          { name: 'Tick', type: 'trigger', triggerType: 'schedule', cronExpression: '0 * * * *' },
          ...tools.map((toolName, i) => ({ name: names[i + 1], type: 'tool', toolName })),
        ],
        edges: names.slice(1).map((to, i) => ({ from: names[i], to, type: 'stepForward' })),
      },
    ],
  });
  if (!outcome.valid) throw new Error(JSON.stringify(outcome.problems));
  await definitions.put({
    agentId,
    environment: 'production',
    organizationId: 'org-1',
    definition: outcome.definition,
    version: 1,
    updatedAt: new Date(nowMs - 3_600_000).toISOString(),
    hasSchedule: true,
  });
  return agentId;
}

/** The fire of the hour the clock is in, as the tick sends it. */
function fireOf(agentId: string): ScheduleFireMessage {
  const scheduledAt = new Date(Math.floor(nowMs / 3_600_000) * 3_600_000).toISOString();
  return { kind: 'schedule-fire', agentId, environment: 'production', trigger: 'Tick', scheduledAt };
}

const sessionOf = (fire: ScheduleFireMessage) =>
  fireSessionId(fire.agentId, fire.environment, fire.trigger, new Date(fire.scheduledAt));

const stored = async (fire: ScheduleFireMessage) =>
  (await sessions.get(fire.agentId, 'production', sessionOf(fire))) as FlowSession;

const farDeadline = () => nowMs + 600_000;

async function eventsOf(fire: ScheduleFireMessage) {
  const page = await analytics.query({
    agentId: fire.agentId,
    environment: 'production',
    sessionId: sessionOf(fire),
    offset: 0,
    limit: 1000,
    now: new Date(),
  });
  // The starts and node runs (each node_execution has its node_result beside it).
  return [...page.events]
    .reverse()
    .filter((e) => e.eventName !== 'node_result')
    .map((e) => [e.eventName, e.payload.nodeName ?? e.payload.triggerName]);
}

it('runs a fire as its own session, with { scheduledAt }, its start once and each node once', async () => {
  const fire = fireOf(await scheduledAgent(['fast', 'after']));
  const { deps, sent } = runtime({ defaultRetrieval: async () => 'Relevant knowledge: the backup runs at night.' });

  await expect(runScheduleFire(deps, fire, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'ended',
    status: 'completed',
    takeovers: 1,
  });
  const session = await stored(fire);
  expect(session).toMatchObject({
    sessionId: sessionOf(fire),
    status: 'completed',
    trigger: { name: 'Tick', type: 'schedule' },
    memory: { scheduledAt: fire.scheduledAt },
    invocations: 1,
    leaseUntil: null,
    run: { invocationId: fireInvocationId(sessionOf(fire)), next: null, step: 3, runner: null, takeovers: 1 },
  });
  expect(session.run).not.toHaveProperty('start');
  // Default retrieval's message first, then each tool node's call (what a prompt node would see).
  expect(session.messages.map((m) => [m.role, m.node ?? null])).toEqual([
    ['system', null],
    ['tool', 'Fast'],
    ['tool', 'After'],
  ]);
  expect(session.messages[0].content).toBe('Relevant knowledge: the backup runs at night.');
  expect(Object.fromEntries(calls)).toEqual({ '/fast': 1, '/after': 1 });
  expect(sent).toEqual([]);
  const events = await eventsOf(fire);
  expect(events).toEqual([
    ['invocation_start', 'Tick'],
    ['node_execution', 'Tick'],
    ['node_execution', 'Fast'],
    ['node_execution', 'After'],
  ]);
  const [start] = (
    await analytics.query({
      agentId: fire.agentId,
      environment: 'production',
      sessionId: sessionOf(fire),
      offset: 0,
      limit: 1000,
      now: new Date(),
    })
  ).events.filter((e) => e.eventName === 'invocation_start');
  expect(start.payload).toMatchObject({ triggerType: 'schedule', body: { scheduledAt: fire.scheduledAt } });
});

it('runs nothing more for a fire delivered again, or sent by a second tick', async () => {
  const fire = fireOf(await scheduledAgent(['fast']));
  const { deps } = runtime();
  await runScheduleFire(deps, fire, { deadline: farDeadline() });
  const ended = await stored(fire);

  await expect(runScheduleFire(deps, fire, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'nothing-to-run',
  });
  await expect(runScheduleFire(deps, { ...fire }, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'nothing-to-run',
  });
  expect(Object.fromEntries(calls)).toEqual({ '/fast': 1 });
  expect(await stored(fire)).toEqual(ended);
  expect((await eventsOf(fire)).filter(([name]) => name === 'invocation_start')).toHaveLength(1);
});

it('runs a fire once when two deliveries come at once: the second is given back while the first holds it', async () => {
  const fire = fireOf(await scheduledAgent(['hang', 'after']));
  const { deps } = runtime();
  const first = runScheduleFire(deps, fire, { deadline: farDeadline() });
  await waitFor(() => held.length === 1);
  // The first holds the run and renews its lease: the second waits for it no longer than it may, then fails, so the
  // message comes back later.
  await expect(runScheduleFire(deps, fire, { deadline: farDeadline(), maxWaitMs: 0 })).rejects.toBeInstanceOf(
    RunHeldError,
  );
  held.shift()?.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  await expect(first).resolves.toMatchObject({ outcome: 'ended', status: 'completed' });
  // Back from the queue: the run ended, nothing to run.
  await expect(runScheduleFire(deps, fire, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'nothing-to-run',
  });
  expect(Object.fromEntries(calls)).toEqual({ '/hang': 1, '/after': 1 });
});

it('takes a fire cut off in a node over at its redelivery, from the last stored node', async () => {
  const fire = fireOf(await scheduledAgent(['fast', 'hang', 'after']));
  const { deps } = runtime();
  // Runner 1 stores Fast, then "dies" in Hang (no answer, no lease renewal in this test's time).
  const first = runScheduleFire(deps, fire, { deadline: farDeadline() });
  await waitFor(() => held.length === 1);
  expect((await stored(fire)).run).toMatchObject({ next: { node: 'Hang', phase: 'run' }, takeovers: 1 });

  // The message comes back once its visibility timeout passed; by then the lease ran out: runner 2 goes on.
  nowMs += SESSION_LEASE_MS + 1;
  await expect(runScheduleFire(deps, fire, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'ended',
    status: 'completed',
    takeovers: 2,
  });
  expect(Object.fromEntries(calls)).toEqual({ '/fast': 1, '/hang': 2, '/after': 1 });
  held.shift()?.writeHead(200, { 'content-type': 'application/json' }).end('{"late":true}');
  await expect(first).resolves.toEqual({ outcome: 'lost' });
  expect((await eventsOf(fire)).filter(([name]) => name === 'invocation_start')).toHaveLength(1);
});

it('gives a fire back when its first write fails, and runs it from its start again, the start stored once', async () => {
  const fire = fireOf(await scheduledAgent(['fast']));
  let failNextSave = true;
  const flaky = {
    get: sessions.get.bind(sessions),
    create: sessions.create.bind(sessions),
    list: sessions.list.bind(sessions),
    deleteSome: sessions.deleteSome.bind(sessions),
    save: async (session: FlowSession, expectedVersion: number) => {
      // The checkpoint after the trigger: the runner's first write after taking the run.
      if (failNextSave && session.run?.next?.node === 'Fast') {
        failNextSave = false;
        throw new Error('store unreachable');
      }
      return sessions.save(session, expectedVersion);
    },
  };
  const { deps } = runtime({ sessions: flaky, defaultRetrieval: async () => 'Relevant knowledge: backups.' });
  await expect(runScheduleFire(deps, fire, { deadline: farDeadline() })).rejects.toThrow('store unreachable');
  // Taken, its start not stored yet.
  expect(await stored(fire)).toMatchObject({ status: 'running', messages: [], run: { start: expect.any(Object) } });

  nowMs += SESSION_LEASE_MS + 1;
  await expect(runScheduleFire(deps, fire, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'ended',
    status: 'completed',
    takeovers: 2,
  });
  const ended = await stored(fire);
  expect(ended.messages.map((m) => m.role)).toEqual(['system', 'tool']);
  expect(Object.fromEntries(calls)).toEqual({ '/fast': 1 });
  // The start's event was written with the failed checkpoint and again by the second runner: stored once.
  expect(await eventsOf(fire)).toEqual([
    ['invocation_start', 'Tick'],
    ['node_execution', 'Tick'],
    ['node_execution', 'Fast'],
  ]);
});

it('runs nothing for a fire whose trigger is gone since the tick sent it', async () => {
  const agentId = await scheduledAgent(['fast']);
  const fire = fireOf(agentId);
  await definitions.delete(agentId, 'production');
  const { deps } = runtime();
  await expect(runScheduleFire(deps, fire, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'not-scheduled',
  });
  await expect(runScheduleFire(deps, { ...fire, trigger: 'Other' }, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'not-scheduled',
  });
  expect(await sessions.get(agentId, 'production', sessionOf(fire))).toBeUndefined();
  expect(calls.size).toBe(0);
});

it('hands a fire over at the runner’s deadline, its start stored, and the next runner ends it', async () => {
  const fire = fireOf(await scheduledAgent(['fast']));
  const { deps, sent } = runtime();
  await expect(runScheduleFire(deps, fire, { deadline: nowMs })).resolves.toEqual({
    outcome: 'handed-over',
    takeovers: 1,
  });
  const sessionId = sessionOf(fire);
  expect(sent).toEqual([
    {
      kind: 'continue-run',
      agentId: fire.agentId,
      environment: 'production',
      sessionId,
      invocationId: fireInvocationId(sessionId),
    },
  ]);
  expect((await stored(fire)).run).not.toHaveProperty('start');
  await expect(runScheduleFire(deps, fire, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'ended',
    status: 'completed',
    takeovers: 2,
  });
  expect(Object.fromEntries(calls)).toEqual({ '/fast': 1 });
  expect((await eventsOf(fire)).filter(([name]) => name === 'invocation_start')).toHaveLength(1);
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
