/**
 * The flow runtime when what a run produces is too large, against dynalite with the real session, definition and
 * analytics stores, real outbound HTTP to a loopback tool server and the real browser driver's target check: node
 * outputs are stored as bounded previews, a state that still does not fit ends the invocation `failed` with
 * SESSION_TOO_LARGE (never 413, never a session left `running`), failure messages are cut and recorded without a
 * stack, and what was recorded is written whatever throws.
 */

import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PlaywrightBrowserDriver } from '#adapters/browser/playwright-driver';
import { GuardedOutboundHttp } from '#adapters/network/outbound-http';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import {
  DynamoDefinitionStore,
  DynamoSessionStore,
  MAX_SESSION_STATE_BYTES,
} from '#adapters/store/dynamodb/flow-stores';
import { PAYLOAD_MAX_BYTES } from '#core/analytics/event';
import { AnalyticsRecorder, type TruncatedPreview } from '#core/analytics/track';
import { validateDefinition } from '#core/flows/definition';
import { OfflineFlowModel } from '#core/flows/offline-model';
import {
  FAILURE_MESSAGE_MAX_CHARS,
  type FlowRuntimeDeps,
  type InvocationFailure,
  NODE_OUTPUT_MAX_BYTES,
} from '#core/flows/run-context';
import { invoke } from '#core/flows/runtime';
import type { FlowSession } from '#core/flows/session';
import { NO_METRICS } from '#ports/metrics';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';
import { InMemoryAgentStore } from '../../../helpers/in-memory-ports';
import { recordingMetrics } from '../../../helpers/metrics';

const ONE_MB_TOOL_ANSWER = { status: 'large', blob: 'x'.repeat(1_000_000) };
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

let dynamo: LocalDynamo;
let toolServer: Server;
let toolUrl: string;
let sessions: DynamoSessionStore;
let definitions: DynamoDefinitionStore;
let analytics: DynamoAnalyticsStore;
const clock = { now: () => new Date() };

beforeAll(async () => {
  dynamo = await startDynalite();
  sessions = new DynamoSessionStore(dynamo.client, await dynamo.createTable('sessions', TABLES.sessions));
  definitions = new DynamoDefinitionStore(
    dynamo.client,
    await dynamo.createTable('agentDefinitions', TABLES.agentDefinitions),
  );
  analytics = new DynamoAnalyticsStore(dynamo.client, await dynamo.createTable('analytics', TABLES.analytics), {
    clock,
    retentionDays: 30,
  });
  toolServer = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const body = request.url === '/big' ? ONE_MB_TOOL_ANSWER : { status: 'shipped' };
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((done) => toolServer.listen(0, '127.0.0.1', done));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((done) => toolServer?.close(() => done()));
  await dynamo?.stop();
});

/** The runtime's dependencies; the recorder never writes in the background, so only a flush stores events. */
function runtime(overrides: Partial<FlowRuntimeDeps> = {}) {
  const failures: { failure: InvocationFailure; error: unknown }[] = [];
  const deps: FlowRuntimeDeps = {
    definitions,
    sessions,
    models: () => new OfflineFlowModel(),
    // Loopback tool server: private targets allowed for HTTP tools; the browser keeps the guard's default.
    http: new GuardedOutboundHttp({ allowPrivateNetwork: true }),
    // No definition of this file has a callbackUrl: the agents' callback secrets are never read.
    agents: new InMemoryAgentStore(),
    browser: new PlaywrightBrowserDriver({ allowPrivateNetwork: false }),
    recorder: new AnalyticsRecorder(analytics, { uuid: randomUUID }, { maxDelayMs: 600_000 }),
    defaultRetrieval: async () => null,
    // No flow of this file retrieves; a retrieval tool would fail on these stores.
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
    onFailure: (failure, error) => failures.push({ failure, error }),
    ...overrides,
  };
  return { deps, failures };
}

/** Stores a definition of one webhook flow `Start → nodes…` (in order) for a new agent. */
async function agentWith(nodes: Record<string, unknown>[]): Promise<string> {
  const agentId = randomUUID();
  const names = ['Start', ...nodes.map((n) => n.name as string)];
  const outcome = validateDefinition({
    tools: [
      { name: 'bigAnswer', url: `${toolUrl}/big` },
      { name: 'orderStatus', url: `${toolUrl}/small` },
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

const call = (deps: FlowRuntimeDeps, agentId: string, body: Record<string, unknown> = {}, sessionId?: string) =>
  invoke(deps, {
    agentId,
    environment: 'production',
    organizationId: 'org-1',
    trigger: { type: 'webhook', name: 'Start' },
    sessionId,
    body,
    invocationId: randomUUID(),
  });

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

const stored = async (agentId: string, sessionId: string) =>
  (await sessions.get(agentId, 'production', sessionId)) as FlowSession;

it('stores a 1 MB tool answer as a bounded preview, and the next node still reads a small output', async () => {
  const agentId = await agentWith([
    { name: 'Big', type: 'tool', toolName: 'bigAnswer' },
    { name: 'Small', type: 'tool', toolName: 'orderStatus' },
    { name: 'Report', type: 'promptNode', displayName: 'Report', prompt: 'Order {tools.Small.status}.' },
  ]);
  const { deps } = runtime();
  const result = await call(deps, agentId);

  expect(result).toMatchObject({ status: 'completed', error: null });
  const big = result.outputs.Big as TruncatedPreview;
  expect(big).toMatchObject({ truncated: true, bytes: jsonBytes(ONE_MB_TOOL_ANSWER) });
  expect(big.preview.startsWith('{"status":"large","blob":"xxx')).toBe(true);
  expect(jsonBytes(big)).toBeLessThanOrEqual(NODE_OUTPUT_MAX_BYTES);
  expect(result.outputs.Small).toEqual({ status: 'shipped' });
  expect(result.aiMessages.map((m) => m.content)).toEqual(['Order shipped.']);
  const session = await stored(agentId, result.sessionId);
  expect(session).toMatchObject({ status: 'completed', leaseUntil: null, outputs: result.outputs });
});

it('reports its run to the metrics: Runs by status, ToolCalls, ModelCalls, and NodeFailures by code', async () => {
  const agentId = await agentWith([
    { name: 'Small', type: 'tool', toolName: 'orderStatus' },
    { name: 'Report', type: 'promptNode', displayName: 'Report', prompt: 'Order {tools.Small.status}.' },
  ]);
  const metrics = recordingMetrics();
  const { deps } = runtime({ metrics });
  expect((await call(deps, agentId)).status).toBe('completed');
  expect(metrics.recorded.filter((m) => m.name === 'Runs')).toEqual([
    { name: 'Runs', value: 1, unit: 'count', dimensions: { status: 'completed' } },
  ]);
  expect(metrics.sum('ToolCalls')).toBe(1);
  expect(metrics.sum('ModelCalls')).toBe(1); // the prompt node's answer; the tool needs no inferred parameter
  expect(metrics.sum('NodeFailures')).toBe(0);

  metrics.clear();
  // Twelve bounded 1 MB answers overflow the stored state (the test below): the run ends failed.
  const overflowing = await agentWith(
    Array.from({ length: 12 }, (_, i) => ({ name: `Big${i + 1}`, type: 'tool', toolName: 'bigAnswer' })),
  );
  expect((await call(deps, overflowing)).status).toBe('failed');
  expect(metrics.recorded.filter((m) => m.name === 'NodeFailures')).toEqual([
    { name: 'NodeFailures', value: 1, unit: 'count', dimensions: { errorCode: 'SESSION_TOO_LARGE' } },
  ]);
  expect(metrics.recorded.filter((m) => m.name === 'Runs').map((m) => m.dimensions.status)).toEqual(['failed']);
  expect(metrics.sum('ToolCalls')).toBe(12);
});

it('ends the invocation failed with SESSION_TOO_LARGE when bounded outputs still overflow the state, and frees the session', async () => {
  // Twelve bounded 1 MB answers: 12 × 32 KiB is over the 350 KiB the session store keeps.
  expect(12 * NODE_OUTPUT_MAX_BYTES).toBeGreaterThan(MAX_SESSION_STATE_BYTES);
  const agentId = await agentWith(
    Array.from({ length: 12 }, (_, i) => ({ name: `Big${i + 1}`, type: 'tool', toolName: 'bigAnswer' })),
  );
  const { deps, failures } = runtime();
  const first = await call(deps, agentId, { customer: 'Ada' });

  // The run itself completed; what failed is storing its state, which no node stands for.
  expect(first).toMatchObject({ status: 'failed', error: { code: 'SESSION_TOO_LARGE', node: null } });
  // The invocation's changes are dropped: the state is what the claim stored (the trigger's payload).
  expect(first.outputs).toEqual({});
  expect(first.memory).toEqual({ customer: 'Ada' });
  const session = await stored(agentId, first.sessionId);
  expect(session).toMatchObject({ status: 'failed', leaseUntil: null, error: first.error });
  expect(failures.map((f) => f.failure.code)).toEqual(['SESSION_TOO_LARGE']);

  const recorded = await eventsOf(agentId, first.sessionId);
  expect(recorded.map((e) => e.eventName)).toEqual([
    'invocation_start',
    ...Array.from({ length: 13 }).flatMap(() => ['node_execution', 'node_result']),
    'invocation_error',
  ]);
  expect(recorded.at(-1)?.payload).toEqual({
    code: 'SESSION_TOO_LARGE',
    message: first.error?.message,
    nodeName: null,
  });

  // Not stuck: the next invocation of the same session runs (and fails the same way) instead of 409 SESSION_BUSY.
  const second = await call(deps, agentId, {}, first.sessionId);
  expect(second).toMatchObject({ sessionId: first.sessionId, status: 'failed', error: { code: 'SESSION_TOO_LARGE' } });
  expect((await stored(agentId, first.sessionId)).invocations).toBe(2);
});

it('fails with SESSION_TOO_LARGE when a payload makes memory too large, keeping the memory that fit', async () => {
  const agentId = await agentWith([{ name: 'Small', type: 'tool', toolName: 'orderStatus' }]);
  const { deps } = runtime();
  const chunk = 'm'.repeat(60 * 1024);
  const first = await call(deps, agentId, { part0: chunk });
  let last = first;
  let parts = 1;
  while (last.status === 'completed' && parts < 10) {
    last = await call(deps, agentId, { [`part${parts}`]: chunk }, first.sessionId);
    parts += 1;
  }

  expect(last).toMatchObject({ status: 'failed', error: { code: 'SESSION_TOO_LARGE', node: null } });
  expect(Object.keys(last.memory)).toHaveLength(parts - 1);
  const session = await stored(agentId, first.sessionId);
  expect(session).toMatchObject({ status: 'failed', leaseUntil: null });
  expect(jsonBytes(session.memory)).toBeLessThanOrEqual(MAX_SESSION_STATE_BYTES);
  const errors = (await eventsOf(agentId, first.sessionId)).filter((e) => e.eventName === 'invocation_error');
  expect(errors.map((e) => e.payload.code)).toEqual(['SESSION_TOO_LARGE']);

  const small = await call(deps, agentId, { note: 'hi' }, first.sessionId);
  expect(small).toMatchObject({ status: 'completed', error: null, outputs: { Small: { status: 'shipped' } } });
});

it('cuts a failure message that embeds a 40 KB host, records it without a stack, and logs the stack', async () => {
  const agentId = await agentWith([{ name: 'Read', type: 'browserTask', prompt: 'Read it', url: '{memory.page}' }]);
  const { deps, failures } = runtime();
  const host = `${'a'.repeat(40_000)}.invalid`;
  const result = await call(deps, agentId, { page: `http://${host}/` });

  expect(result).toMatchObject({ status: 'failed', error: { code: 'BROWSER_FAILED', node: 'Read' } });
  const message = result.error?.message ?? '';
  expect(message).toHaveLength(FAILURE_MESSAGE_MAX_CHARS);
  expect(message.startsWith('The host aaaa')).toBe(true);
  expect(message.endsWith('…')).toBe(true);
  expect((await stored(agentId, result.sessionId)).error?.message).toBe(message);

  const error = (await eventsOf(agentId, result.sessionId)).find((e) => e.eventName === 'invocation_error');
  expect(error?.payload).toEqual({ code: 'BROWSER_FAILED', message, nodeName: 'Read' });
  expect(jsonBytes(error?.payload)).toBeLessThan(PAYLOAD_MAX_BYTES);
  expect(failures).toHaveLength(1);
  expect(String((failures[0].error as Error).stack)).toMatch(/\n\s+at /);
});

it('fails the node with TOOL_FAILED, not VALIDATION_ERROR, when the flow tracks an event over 32 KiB', async () => {
  const agentId = await agentWith([
    {
      name: 'Track',
      type: 'tool',
      toolName: 'trackAnalyticsEvent',
      parameters: { eventName: 'big', payload: { text: '{memory.text}' } },
    },
  ]);
  const { deps } = runtime();
  const result = await call(deps, agentId, { text: 'y'.repeat(40 * 1024) });
  expect(result).toMatchObject({ status: 'failed', error: { code: 'TOOL_FAILED', node: 'Track' } });
  expect(result.error?.message).toMatch(/^trackAnalyticsEvent: payload must be at most 32768 bytes/);
});

it('writes what the invocation recorded even when storing the session throws', async () => {
  const agentId = await agentWith([{ name: 'Small', type: 'tool', toolName: 'orderStatus' }]);
  let saves = 0;
  const failingStore = {
    get: sessions.get.bind(sessions),
    create: sessions.create.bind(sessions),
    list: sessions.list.bind(sessions),
    deleteSome: sessions.deleteSome.bind(sessions),
    save: async () => {
      saves += 1;
      throw new Error('DynamoDB is unavailable');
    },
  };
  const { deps } = runtime({ sessions: failingStore });
  const sessionId = randomUUID();

  await expect(call(deps, agentId, {}, sessionId)).rejects.toThrow('DynamoDB is unavailable');
  expect(saves).toBe(1);
  expect(deps.recorder.pending).toBe(0);
  const recorded = await eventsOf(agentId, sessionId);
  expect(recorded.map((e) => [e.eventName, e.payload.nodeName])).toEqual([
    ['invocation_start', undefined],
    ['node_execution', 'Start'],
    ['node_result', 'Start'],
    ['node_execution', 'Small'],
    ['node_result', 'Small'],
  ]);
});
