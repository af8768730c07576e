/**
 * Runs longer than a request (docs/flows.md, "Long runs"), against dynalite with the real session, definition and
 * analytics stores and real outbound HTTP to a loopback tool server. The clock is moved by hand (a slow tool moves it
 * past the budget), so nothing here waits for time to pass. The flow runner's queue is a list the test reads: the
 * real SQS queue and worker are exercised by test/integration/flow-runs.test.ts.
 *
 * Proves: past the budget no further node starts, the session is stored with where the run goes on and one
 * continue-run message is sent; the runner goes on from there and never runs a completed node again; a runner whose
 * lease ran out (it died) is taken over from its last stored node, and what the dead one still does later is not
 * stored; a live runner's run is not taken; a runner past its own deadline hands over again; a message that comes
 * late does nothing; a checkpoint that cannot be written gives the message back; a hand-over that cannot be sent ends
 * the run failed.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PlaywrightBrowserDriver } from '#adapters/browser/playwright-driver';
import { GuardedOutboundHttp } from '#adapters/network/outbound-http';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import { DynamoDefinitionStore, DynamoSessionStore } from '#adapters/store/dynamodb/flow-stores';
import { AnalyticsRecorder } from '#core/analytics/track';
import { continueRun, RunHeldError } from '#core/flows/continue-run';
import { validateDefinition } from '#core/flows/definition';
import { OfflineFlowModel } from '#core/flows/offline-model';
import { type FlowRuntimeDeps, SESSION_LEASE_MS } from '#core/flows/run-context';
import { invoke } from '#core/flows/runtime';
import type { FlowSession } from '#core/flows/session';
import type { ContinueRunMessage } from '#ports/flows';
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

/** The runtime's clock: a tool call to `/slow` moves it on by 2 s, as a slow tool would. */
let nowMs = Date.parse('2026-03-01T10:00:00.000Z');
const clock = { now: () => new Date(nowMs) };
/** Calls received per tool path. */
const calls = new Map<string, number>();
/** Requests to `/hang` held open (a runner "dies" in that node): answered when the test says so. */
const held: ServerResponse[] = [];
let hangFirstOnly = true;

const BUDGET_MS = 1_000;

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
      if (path === '/slow') nowMs += 2_000;
      if (path === '/hang' && (count === 1 || !hangFirstOnly)) {
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
  hangFirstOnly = true;
});

/** The runtime's dependencies with a queue the test reads; the recorder writes only when flushed. */
function runtime(overrides: Partial<FlowRuntimeDeps> = {}) {
  const sent: ContinueRunMessage[] = [];
  const deps: FlowRuntimeDeps = {
    definitions,
    sessions,
    models: () => new OfflineFlowModel(),
    http: new GuardedOutboundHttp({ allowPrivateNetwork: true }),
    // No definition of this file has a callbackUrl: the agents' callback secrets are never read.
    agents: new InMemoryAgentStore(),
    browser: new PlaywrightBrowserDriver({ allowPrivateNetwork: false }),
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
      // Only hand-overs send here (the tick's schedule fires: test/unit/core/flows/schedule-fire.test.ts).
      send: async (message) => {
        sent.push(message as ContinueRunMessage);
      },
    },
    ...overrides,
  };
  return { deps, sent };
}

/** Stores a definition of one webhook flow `Start → nodes…` (in order) for a new agent; each tool is its path. */
async function agentWith(nodes: Record<string, unknown>[]): Promise<string> {
  const agentId = randomUUID();
  const names = ['Start', ...nodes.map((n) => n.name as string)];
  const outcome = validateDefinition({
    tools: [
      ...['slow', 'fast', 'hang', 'after'].map((name) => ({ name, url: `${toolUrl}/${name}` })),
      // Tools that may take a minute: no node calling one starts in a request (FLOW_REQUEST_LIMIT_MS).
      ...['report', 'digest'].map((name) => ({ name, url: `${toolUrl}/${name}`, timeoutSeconds: 60 })),
    ],
    flows: [
      {
        name: 'main',
        nodes: [{ name: 'Start', type: 'trigger', triggerType: 'webhook' }, ...nodes],
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
    updatedAt: new Date().toISOString(),
    hasSchedule: false,
  });
  return agentId;
}

const tool = (name: string, toolName = name.toLowerCase()) => ({ name, type: 'tool', toolName });

const call = (deps: FlowRuntimeDeps, agentId: string, sessionId?: string) =>
  invoke(
    deps,
    {
      agentId,
      environment: 'production',
      organizationId: 'org-1',
      trigger: { type: 'webhook', name: 'Start' },
      sessionId,
      body: { customer: 'Ada' },
      invocationId: randomUUID(),
    },
    { budgetMs: BUDGET_MS },
  );

const stored = async (agentId: string, sessionId: string) =>
  (await sessions.get(agentId, 'production', sessionId)) as FlowSession;

const farDeadline = () => nowMs + 600_000;

async function eventsOf(agentId: string, sessionId: string) {
  const page = await analytics.query({
    agentId,
    environment: 'production',
    sessionId,
    offset: 0,
    limit: 1000,
    now: new Date(),
  });
  return [...page.events].reverse();
}

it('starts no node whose tool may outlast the request: hands it to the runner, which calls the tool once', async () => {
  const agentId = await agentWith([tool('Fast'), tool('Report'), tool('After')]);
  const { deps, sent } = runtime();
  const result = await call(deps, agentId);

  // Fast (10 s) fits in the request's 28 s; Report (60 s) does not, so it waits for the runner, not called here.
  expect(result).toMatchObject({ status: 'running', error: null });
  expect(Object.fromEntries(calls)).toEqual({ '/fast': 1 });
  expect((await stored(agentId, result.sessionId)).run).toMatchObject({ next: { node: 'Report', phase: 'run' } });
  expect(sent).toHaveLength(1);

  // The runner runs it, though it may take longer than what is left of the runner: it is its first node.
  const outcome = await continueRun(deps, sent[0], { deadline: nowMs + 30_000 });
  expect(outcome).toEqual({ outcome: 'ended', status: 'completed', takeovers: 1 });
  expect(Object.fromEntries(calls)).toEqual({ '/fast': 1, '/report': 1, '/after': 1 });
});

it('a runner hands a slow tool over again once it has run a node of its own, and the next runner calls it once', async () => {
  const agentId = await agentWith([tool('Report'), tool('Digest')]);
  const { deps, sent } = runtime();
  const result = await call(deps, agentId);
  expect(Object.fromEntries(calls)).toEqual({});

  // Report runs first in this runner; Digest (60 s) does not fit in its last 30 s: handed over again.
  const first = await continueRun(deps, sent[0], { deadline: nowMs + 30_000 });
  expect(first).toMatchObject({ outcome: 'handed-over' });
  expect(Object.fromEntries(calls)).toEqual({ '/report': 1 });
  expect(sent).toHaveLength(2);
  expect((await stored(agentId, result.sessionId)).run).toMatchObject({ next: { node: 'Digest', phase: 'run' } });

  await expect(continueRun(deps, sent[1], { deadline: farDeadline() })).resolves.toMatchObject({
    outcome: 'ended',
    status: 'completed',
  });
  expect(Object.fromEntries(calls)).toEqual({ '/report': 1, '/digest': 1 });
});

it('starts no node past the budget: stores where the run goes on, sends one continue-run and answers running', async () => {
  const agentId = await agentWith([
    tool('Slow'),
    tool('Fast'),
    { name: 'Done', type: 'promptNode', displayName: 'Done', prompt: 'Done for {memory.customer}.' },
  ]);
  const { deps, sent } = runtime();
  const result = await call(deps, agentId);

  expect(result).toMatchObject({ status: 'running', aiMessages: [], error: null });
  expect(Object.fromEntries(calls)).toEqual({ '/slow': 1 });
  const session = await stored(agentId, result.sessionId);
  expect(session.status).toBe('running');
  expect(session.outputs).toEqual({ Slow: { path: '/slow', count: 1 } });
  expect(session.run).toMatchObject({
    next: { node: 'Fast', phase: 'run' },
    step: 2,
    steps: [
      { step: 1, node: 'Start' },
      { step: 2, node: 'Slow' },
    ],
    runner: null,
    takeovers: 0,
  });
  // Held for the runner: another message on the session is refused meanwhile.
  expect(Date.parse(session.leaseUntil as string)).toBe(nowMs + SESSION_LEASE_MS);
  await expect(call(deps, agentId, result.sessionId)).rejects.toMatchObject({ code: 'SESSION_BUSY' });
  expect(sent).toEqual([
    {
      kind: 'continue-run',
      agentId,
      environment: 'production',
      sessionId: result.sessionId,
      invocationId: session.run?.invocationId,
    },
  ]);

  const outcome = await continueRun(deps, sent[0], { deadline: farDeadline() });
  expect(outcome).toEqual({ outcome: 'ended', status: 'completed', takeovers: 1 });
  expect(Object.fromEntries(calls)).toEqual({ '/slow': 1, '/fast': 1 });
  const ended = await stored(agentId, result.sessionId);
  expect(ended).toMatchObject({ status: 'completed', leaseUntil: null, currentNode: null, error: null });
  expect(ended.outputs).toMatchObject({ Slow: { count: 1 }, Fast: { count: 1 }, Done: { response: 'Done for Ada.' } });
  expect(ended.aiMessages.map((m) => [m.node, m.invocationId])).toEqual([['Done', sent[0].invocationId]]);
  expect(ended.run).toMatchObject({ next: null, runner: null, takeovers: 1, step: 4 });
  expect(ended.run?.steps.map((s) => s.node)).toEqual(['Start', 'Slow', 'Fast', 'Done']);
  // One invocation in analytics, each node once, whoever ran it.
  const recorded = await eventsOf(agentId, result.sessionId);
  expect(recorded.map((e) => [e.eventName, e.payload.nodeName ?? null])).toEqual([
    ['invocation_start', null],
    ...['Start', 'Slow', 'Fast', 'Done'].flatMap((node) => [
      ['node_execution', node],
      ['node_result', node],
    ]),
  ]);
  // Each node_result says how its node ended and where the run went, in the request as in the runner.
  expect(recorded.filter((e) => e.eventName === 'node_result').map((e) => [e.payload.status, e.payload.edge])).toEqual([
    ['succeeded', { to: 'Slow', reason: 'stepForward' }],
    ['succeeded', { to: 'Fast', reason: 'stepForward' }],
    ['succeeded', { to: 'Done', reason: 'stepForward' }],
    ['succeeded', { to: null, reason: 'no edge leaves this node: the flow ends' }],
  ]);

  // The message delivered again (SQS delivers at least once): nothing runs.
  await expect(continueRun(deps, sent[0], { deadline: farDeadline() })).resolves.toEqual({ outcome: 'nothing-to-run' });
  expect(Object.fromEntries(calls)).toEqual({ '/slow': 1, '/fast': 1 });
  // And the session takes the next message at once.
  await expect(call(deps, agentId, result.sessionId)).resolves.toMatchObject({ status: 'running' });
});

it('takes over the run of a runner that died from its last stored node; the dead one stores nothing after', async () => {
  const agentId = await agentWith([tool('Slow'), tool('Fast'), tool('Hang'), tool('After')]);
  const { deps, sent } = runtime();
  const result = await call(deps, agentId);
  expect(result.status).toBe('running');

  // Runner 1 stores Fast, then hangs in Hang: it has "died" there (no answer, and no lease renewal in this test's
  // time, the heartbeat being a third of a 60 s lease).
  const first = continueRun(deps, sent[0], { deadline: farDeadline() });
  await waitFor(() => held.length === 1);
  const during = await stored(agentId, result.sessionId);
  expect(during.run).toMatchObject({ next: { node: 'Hang', phase: 'run' }, takeovers: 1 });
  expect(during.outputs).toHaveProperty('Fast');

  // While its lease lasts, another delivery of the message leaves the run to it.
  await expect(continueRun(deps, sent[0], { deadline: farDeadline(), maxWaitMs: 0 })).rejects.toBeInstanceOf(
    RunHeldError,
  );

  // The lease runs out: runner 2 takes the run over from Hang.
  nowMs += SESSION_LEASE_MS + 1;
  const second = await continueRun(deps, sent[0], { deadline: farDeadline() });
  expect(second).toEqual({ outcome: 'ended', status: 'completed', takeovers: 2 });
  // Completed nodes ran once; the node in flight when runner 1 died ran again (at least once).
  expect(Object.fromEntries(calls)).toEqual({ '/slow': 1, '/fast': 1, '/hang': 2, '/after': 1 });
  const ended = await stored(agentId, result.sessionId);
  expect(ended.outputs).toMatchObject({ Hang: { count: 2 }, After: { count: 1 } });

  // Runner 1 comes back to life: its next write finds the session taken and stores nothing; After is not called.
  held.shift()?.writeHead(200, { 'content-type': 'application/json' }).end('{"late":true}');
  await expect(first).resolves.toEqual({ outcome: 'lost' });
  expect(Object.fromEntries(calls)).toEqual({ '/slow': 1, '/fast': 1, '/hang': 2, '/after': 1 });
  expect(await stored(agentId, result.sessionId)).toEqual(ended);
});

it('hands the run over again when a runner reaches its own deadline, and the next runner ends it', async () => {
  const agentId = await agentWith([tool('Slow'), tool('Fast'), tool('After')]);
  const { deps, sent } = runtime();
  const result = await call(deps, agentId);

  // A deadline already past: the runner starts no node and hands over.
  await expect(continueRun(deps, sent[0], { deadline: nowMs })).resolves.toEqual({
    outcome: 'handed-over',
    takeovers: 1,
  });
  expect(sent).toHaveLength(2);
  expect(sent[1]).toEqual(sent[0]);
  expect((await stored(agentId, result.sessionId)).run).toMatchObject({ runner: null, takeovers: 1 });
  await expect(continueRun(deps, sent[1], { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'ended',
    status: 'completed',
    takeovers: 2,
  });
  expect(Object.fromEntries(calls)).toEqual({ '/slow': 1, '/fast': 1, '/after': 1 });
});

it('gives the message back when a checkpoint cannot be written, and the run goes on from the last one', async () => {
  const agentId = await agentWith([tool('Slow'), tool('Fast'), tool('After')]);
  let failNextSave = false;
  const flaky = {
    get: sessions.get.bind(sessions),
    create: sessions.create.bind(sessions),
    list: sessions.list.bind(sessions),
    deleteSome: sessions.deleteSome.bind(sessions),
    save: async (session: FlowSession, expectedVersion: number) => {
      if (failNextSave && session.run?.next?.node === 'After') {
        failNextSave = false;
        throw new Error('store unreachable');
      }
      return sessions.save(session, expectedVersion);
    },
  };
  const { deps, sent } = runtime({ sessions: flaky });
  const result = await call(deps, agentId);
  failNextSave = true;
  // Fast ran, its checkpoint failed: the runner fails the message (it comes back), the run is not failed.
  await expect(continueRun(deps, sent[0], { deadline: farDeadline() })).rejects.toThrow('store unreachable');
  expect(await stored(agentId, result.sessionId)).toMatchObject({ status: 'running', run: { next: { node: 'Fast' } } });
  nowMs += SESSION_LEASE_MS + 1;
  await expect(continueRun(deps, sent[0], { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'ended',
    status: 'completed',
    takeovers: 2,
  });
  // Fast was not stored as done, so it ran again.
  expect(Object.fromEntries(calls)).toEqual({ '/slow': 1, '/fast': 2, '/after': 1 });
});

it('ends a run paused at a human-in-the-loop node in the runner; the human resumes it by a webhook', async () => {
  const agentId = await agentWith([
    tool('Slow'),
    { name: 'Ask', type: 'promptNode', displayName: 'Ask', prompt: 'Why?', humanInTheLoop: true },
    tool('After'),
  ]);
  const { deps, sent } = runtime();
  const result = await call(deps, agentId);
  await expect(continueRun(deps, sent[0], { deadline: farDeadline() })).resolves.toMatchObject({ status: 'paused' });
  expect(await stored(agentId, result.sessionId)).toMatchObject({ status: 'paused', currentNode: 'Ask' });
  const resumed = await call(deps, agentId, result.sessionId);
  expect(resumed).toMatchObject({ status: 'completed', outputs: { After: { count: 1 } } });
  expect((await stored(agentId, result.sessionId)).run).toBeUndefined();
});

it('ends the run failed when the hand-over cannot be sent, releasing the session', async () => {
  const agentId = await agentWith([tool('Slow'), tool('Fast')]);
  const failures: string[] = [];
  const { deps } = runtime({
    runs: {
      send: async () => {
        throw new Error('queue unreachable');
      },
    },
    onFailure: (failure) => failures.push(failure.code),
  });
  const result = await call(deps, agentId);
  expect(result).toMatchObject({ status: 'failed', error: { code: 'RUN_HANDOFF_FAILED' } });
  expect(failures).toEqual(['RUN_HANDOFF_FAILED']);
  expect(await stored(agentId, result.sessionId)).toMatchObject({ status: 'failed', leaseUntil: null });
  expect(Object.fromEntries(calls)).toEqual({ '/slow': 1 });
});

it('runs to the end in the request without a flow run queue, whatever the budget', async () => {
  const agentId = await agentWith([tool('Slow'), tool('Fast')]);
  const { deps } = runtime({ runs: undefined });
  await expect(call(deps, agentId)).resolves.toMatchObject({ status: 'completed' });
});

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  if (!check()) throw new Error('the condition did not come true');
}
