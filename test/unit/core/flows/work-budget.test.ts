/**
 * The flow work budget (core/flows/work-budget.ts; docs/rate-limits.md, "Flow work") with in-memory counters and the
 * real session, definition and analytics stores on dynalite. The clock is moved by hand (a browser task moves it as
 * long as it "runs"), so windows pass without waiting. Budget: 30 units every 3 s.
 *
 * Proves: a run of 50 nodes chained by jumps is stopped where the budget runs out, handed over with the message
 * delayed until the window ends, handed over again by a runner that comes too early, and finished by the runners of
 * the next windows, each node run and counted once; an exhausted organization's new invocation is refused (429
 * RATE_LIMITED) leaving no session, while another organization's runs; a browser task's seconds are charged when it
 * ends, however it ended, and the next node pays; without a run queue the run fails WORK_BUDGET_EXCEEDED; a schedule
 * fire of an exhausted organization waits in the queue, its message delayed until the window ends, and then runs.
 */
import { randomUUID } from 'node:crypto';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import { DynamoDefinitionStore, DynamoSessionStore } from '#adapters/store/dynamodb/flow-stores';
import { AnalyticsRecorder } from '#core/analytics/track';
import { continueRun } from '#core/flows/continue-run';
import { validateDefinition } from '#core/flows/definition';
import { OfflineFlowModel } from '#core/flows/offline-model';
import { type FlowRuntimeDeps, MAX_STEPS_PER_INVOCATION } from '#core/flows/run-context';
import { invoke } from '#core/flows/runtime';
import { runScheduleFire } from '#core/flows/schedule-fire';
import { fireInvocationId, fireSessionId } from '#core/flows/scheduler';
import type { FlowSession } from '#core/flows/session';
import { FlowWorkExhaustedError, type FlowWorkSettings } from '#core/flows/work-budget';
import { type BrowserDriver, type ContinueRunMessage, OutboundError } from '#ports/flows';
import { NO_METRICS } from '#ports/metrics';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';
import { InMemoryAgentStore, InMemoryRateLimitCounters } from '../../../helpers/in-memory-ports';

const SETTINGS: FlowWorkSettings = { perSecond: 10, burst: 30, browserSecondUnits: 10 };
const WINDOW_MS = 3_000;

let dynamo: LocalDynamo;
let sessions: DynamoSessionStore;
let definitions: DynamoDefinitionStore;
let analytics: DynamoAnalyticsStore;

/** The runtime's clock, at the start of a window: moved by the tests and by the fake browser. */
let nowMs = Date.parse('2026-03-01T10:00:00.000Z');
const clock = { now: () => new Date(nowMs) };
let counters: InMemoryRateLimitCounters;

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
});

afterAll(() => dynamo?.stop());

beforeEach(() => {
  counters = new InMemoryRateLimitCounters();
  // Each test starts at the start of a window of its own.
  nowMs = (Math.floor(nowMs / WINDOW_MS) + 10) * WINDOW_MS;
});

interface Sent {
  /** What a run's hand-over sends (the tick, which sends schedule fires, is not part of these tests). */
  readonly message: ContinueRunMessage;
  readonly delaySeconds: number | undefined;
}

/** A browser that "runs" for `ms` (the clock moves on), then answers or fails. */
function browserTaking(ms: number, failWith?: Error): BrowserDriver {
  return {
    name: 'fake',
    run: async () => {
      nowMs += ms;
      if (failWith) throw failWith;
      return { answer: 'done', url: 'https://shop.example/', status: 200, title: 'Shop', text: 'Shop', steps: [] };
    },
    close: async () => undefined,
  };
}

function runtime(overrides: Partial<FlowRuntimeDeps> = {}) {
  const sent: Sent[] = [];
  const deps: FlowRuntimeDeps = {
    definitions,
    sessions,
    models: () => new OfflineFlowModel(),
    http: { request: async () => ({ status: 200, body: {} }) } as never,
    agents: new InMemoryAgentStore(),
    browser: browserTaking(0),
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
      send: async (message, options) => {
        sent.push({ message: message as ContinueRunMessage, delaySeconds: options?.delaySeconds });
      },
    },
    work: { counters, settings: SETTINGS },
    ...overrides,
  };
  return { deps, sent };
}

/** Stores a definition for a new agent of `organizationId`. */
async function agentOf(
  organizationId: string,
  flow: { nodes: Record<string, unknown>[]; edges: Record<string, unknown>[] },
  updatedAt = new Date(nowMs).toISOString(),
): Promise<string> {
  const agentId = randomUUID();
  const outcome = validateDefinition({ flows: [{ name: 'main', ...flow }] });
  if (!outcome.valid) throw new Error(JSON.stringify(outcome.problems));
  await definitions.put({
    agentId,
    environment: 'production',
    organizationId,
    definition: outcome.definition,
    version: 1,
    updatedAt,
    hasSchedule: flow.nodes.some((n) => n.triggerType === 'schedule'),
  });
  return agentId;
}

const start = { name: 'Start', type: 'trigger', triggerType: 'webhook' };

/** Start → J1 ⤳ J2 ⤳ … ⤳ J48 ⤳ End: 50 nodes, each reached by a jump. */
function jumpChain() {
  const jumps = Array.from({ length: MAX_STEPS_PER_INVOCATION - 2 }, (_, i) => `J${i + 1}`);
  return {
    nodes: [
      start,
      ...jumps.map((name, i) => ({ name, type: 'jumpToNode', targetNodeId: jumps[i + 1] ?? 'End' })),
      { name: 'End', type: 'junction' },
    ],
    edges: [{ from: 'Start', to: 'J1', type: 'stepForward' }],
  };
}

/** Start → each node in order. */
function chain(nodes: Record<string, unknown>[]) {
  const names = ['Start', ...nodes.map((n) => n.name as string)];
  return {
    nodes: [start, ...nodes],
    edges: names.slice(1).map((to, i) => ({ from: names[i], to, type: 'stepForward' })),
  };
}

const webhook = (deps: FlowRuntimeDeps, agentId: string, organizationId: string, sessionId?: string) =>
  invoke(
    deps,
    {
      agentId,
      environment: 'production',
      organizationId,
      trigger: { type: 'webhook', name: 'Start' },
      sessionId,
      body: {},
      invocationId: randomUUID(),
    },
    { budgetMs: 600_000 },
  );

const stored = async (agentId: string, sessionId: string) =>
  (await sessions.get(agentId, 'production', sessionId)) as FlowSession;

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

const farDeadline = () => nowMs + 600_000;

it('hands a run of 50 jumps over where the budget runs out, delayed to the window end, and runners finish it', async () => {
  const agentId = await agentOf('org-loop', jumpChain());
  const { deps, sent } = runtime();

  const result = await webhook(deps, agentId, 'org-loop');
  // The window's 30 units paid for 30 nodes (the first at admission); the 31st is handed over, delayed 3 s.
  expect(result).toMatchObject({ status: 'running', error: null });
  expect(sent).toEqual([
    {
      message: {
        kind: 'continue-run',
        agentId,
        environment: 'production',
        sessionId: result.sessionId,
        invocationId: expect.any(String),
      },
      delaySeconds: 3,
    },
  ]);
  const handedOver = await stored(agentId, result.sessionId);
  expect(handedOver.run).toMatchObject({ next: { node: 'J30', phase: 'run' }, step: 30, runner: null });
  // Held for the wait and a lease, so no other message on the session starts over meanwhile.
  expect(Date.parse(handedOver.leaseUntil as string)).toBe(nowMs + 3_000 + 60_000);

  // A runner that gets the message early (SQS delays are a floor, a redelivery none) pays again, is refused, and
  // hands the run over again with the rest of the window as its delay.
  nowMs += 1_000;
  await expect(continueRun(deps, sent[0].message, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'handed-over',
    takeovers: 1,
  });
  expect(sent[1]).toEqual({ message: sent[0].message, delaySeconds: 2 });
  expect((await stored(agentId, result.sessionId)).run).toMatchObject({ next: { node: 'J30' }, step: 30 });

  // The next window: 20 nodes are left, the runner ends the run.
  nowMs += 2_000;
  await expect(continueRun(deps, sent[1].message, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'ended',
    status: 'completed',
    takeovers: 2,
  });
  const ended = await stored(agentId, result.sessionId);
  expect(ended.run).toMatchObject({ next: null, step: 50 });
  expect(ended.run?.steps.map((s) => s.node)).toEqual(jumpChain().nodes.map((n) => n.name));
  expect(counters.counted('work#org-loop')).toBe(20);
  const executed = (await eventsOf(agentId, result.sessionId)).filter((e) => e.eventName === 'node_execution');
  expect(executed).toHaveLength(50);
});

it("refuses an exhausted organization's invocation with 429 before writing anything; another organization runs", async () => {
  const { deps } = runtime();
  const exhausted = await agentOf('org-spent', chain([{ name: 'Step', type: 'junction' }]));
  const other = await agentOf('org-other', chain([{ name: 'Step', type: 'junction' }]));
  await counters.hit('work#org-spent', Math.floor(nowMs / WINDOW_MS), 0, SETTINGS.burst);
  nowMs += 500;

  const sessionId = randomUUID();
  const refused = await webhook(deps, exhausted, 'org-spent', sessionId).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(FlowWorkExhaustedError);
  expect(refused).toMatchObject({
    status: 429,
    code: 'RATE_LIMITED',
    message: expect.stringContaining('flow work budget of this organization is used up: at most 30 units every 3 s'),
    verdict: { allowed: false, resetSeconds: 3 },
  });
  expect(await sessions.get(exhausted, 'production', sessionId)).toBeUndefined();
  expect(await eventsOf(exhausted, sessionId)).toEqual([]);

  await expect(webhook(deps, other, 'org-other')).resolves.toMatchObject({ status: 'completed' });
  // Start (paid at admission) and Step.
  expect(counters.counted('work#org-other')).toBe(2);
});

it("charges a browser task's started seconds when it ends; the node after it pays and waits for the next window", async () => {
  const agentId = await agentOf(
    'org-browser',
    chain([
      { name: 'Browse', type: 'browserTask', prompt: 'Look', url: 'https://shop.example/' },
      { name: 'After', type: 'junction' },
    ]),
  );
  const { deps, sent } = runtime({ browser: browserTaking(2_400) });
  const result = await webhook(deps, agentId, 'org-browser');
  // Start 1, Browse 1, then 3 started seconds × 10 when it ended: 32 > 30, so After is handed over.
  expect(counters.counted('work#org-browser')).toBe(1 + 1 + 30 + 1);
  expect(result.status).toBe('running');
  expect(result.outputs).toMatchObject({ Browse: { answer: 'done' } });
  expect((await stored(agentId, result.sessionId)).run?.next).toEqual({ node: 'After', phase: 'run' });
  expect(sent.map((s) => s.delaySeconds)).toEqual([1]);

  nowMs += 1_000;
  await expect(continueRun(deps, sent[0].message, { deadline: farDeadline() })).resolves.toMatchObject({
    status: 'completed',
  });
});

it('charges the seconds of a browser task that failed, and the node fails with its own error', async () => {
  const agentId = await agentOf(
    'org-browser-failed',
    chain([{ name: 'Browse', type: 'browserTask', prompt: 'Look', url: 'https://shop.example/' }]),
  );
  const { deps } = runtime({ browser: browserTaking(1_200, new OutboundError('BROWSER_FAILED', 'crashed')) });
  const result = await webhook(deps, agentId, 'org-browser-failed');
  expect(result).toMatchObject({ status: 'failed', error: { code: 'BROWSER_FAILED', node: 'Browse' } });
  expect(counters.counted('work#org-browser-failed')).toBe(1 + 1 + 20);
});

it('fails the run with WORK_BUDGET_EXCEEDED where it cannot be handed over (no run queue)', async () => {
  const agentId = await agentOf('org-no-queue', jumpChain());
  const { deps } = runtime({ runs: undefined });
  const result = await webhook(deps, agentId, 'org-no-queue');
  expect(result).toMatchObject({ status: 'failed', error: { code: 'WORK_BUDGET_EXCEEDED', node: 'J30' } });
  expect(result.error?.message).toContain('the run stopped before node J30');
  expect((await stored(agentId, result.sessionId)).leaseUntil).toBeNull();
});

it('holds a schedule fire of an exhausted organization in the queue until its window ends, then runs it once', async () => {
  const agentId = await agentOf('org-scheduled', {
    nodes: [
      { name: 'Tick', type: 'trigger', triggerType: 'schedule', cronExpression: '* * * * *' },
      { name: 'Step', type: 'junction' },
    ],
    edges: [{ from: 'Tick', to: 'Step', type: 'stepForward' }],
  });
  const fireAt = Math.ceil((nowMs + 1) / 60_000) * 60_000;
  const { deps, sent } = runtime();
  nowMs = fireAt + 100;
  await counters.hit('work#org-scheduled', Math.floor(nowMs / WINDOW_MS), 0, SETTINGS.burst);
  const scheduledAt = new Date(fireAt).toISOString();
  const fire = { kind: 'schedule-fire', agentId, environment: 'production', trigger: 'Tick', scheduledAt } as const;

  // The runner stores the fire and starts it; its trigger node is refused: the run is handed over, its message
  // delayed until the window ends (2.9 s left: 3 s), not dropped.
  await expect(runScheduleFire(deps, fire, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'handed-over',
    takeovers: 1,
  });
  const sessionId = fireSessionId(agentId, 'production', 'Tick', new Date(fireAt));
  const invocationId = fireInvocationId(sessionId);
  expect(sent).toEqual([
    {
      message: { kind: 'continue-run', agentId, environment: 'production', sessionId, invocationId },
      delaySeconds: 3,
    },
  ]);
  const waiting = await stored(agentId, sessionId);
  expect(waiting).toMatchObject({ status: 'running', run: { next: { node: 'Tick', phase: 'run' }, runner: null } });
  // Its start ran and was stored with the hand-over: it does not run again.
  expect(waiting.run).not.toHaveProperty('start');

  // The next window: the delayed message runs the fire to its end, each node paid once.
  nowMs += WINDOW_MS;
  await expect(continueRun(deps, sent[0].message, { deadline: farDeadline() })).resolves.toEqual({
    outcome: 'ended',
    status: 'completed',
    takeovers: 2,
  });
  expect(await stored(agentId, sessionId)).toMatchObject({ status: 'completed', memory: { scheduledAt } });
  expect(counters.counted('work#org-scheduled')).toBe(2);
  const recorded = (await eventsOf(agentId, sessionId)).filter((e) => e.eventName !== 'node_result');
  expect(recorded.map((e) => [e.eventName, e.payload.nodeName ?? e.payload.triggerName])).toEqual([
    ['invocation_start', 'Tick'],
    ['node_execution', 'Tick'],
    ['node_execution', 'Step'],
  ]);
});
