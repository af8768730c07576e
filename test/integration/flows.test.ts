/**
 * Agent flows end to end on the local runtime (`bin/local.ts` as a child process; its scheduler reads "now" from a
 * file this test writes, so the clock of schedule triggers moves by hand) with the offline model: definitions validated and stored through the API, webhooks and app events that run
 * real flows (an HTTP tool on a loopback server, a junction, a jump across flows, a human-in-the-loop pause and its
 * resume), default retrieval injected after the trigger, a missing jump target, a schedule trigger fired by the
 * clock, and the analytics events each of these records. Then what bounds a run's state and its failures: a 1 MB
 * tool answer kept as a preview, a state still too large ending `failed` without holding the session, and (on a
 * second runtime that refuses private targets, as a deployment does) a failure message embedding a 40 KB host.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDefinitionStore } from '#adapters/store/dynamodb/flow-stores';
import { nextFire } from '#core/flows/schedule';
import { fireSessionId } from '#core/flows/scheduler';
import { LOCAL_REGION } from '../../lib/local/engine-credentials';
import { createDataset, uploadDocument } from '../helpers/fixtures';
import { crmFlow, refundFlow, scheduleFlow, supportDefinition, triageFlow } from '../helpers/flow-definitions';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let clockFile: string;
let clockDir: string;
let call: ReturnType<typeof client>;
let toolServer: Server;
let toolUrl: string;
const toolCalls: unknown[] = [];
const ONE_MB_TOOL_ANSWER = { status: 'large', blob: 'x'.repeat(1_000_000) };
const callbacks: Record<string, unknown>[] = [];
let agentId: string;

interface Result {
  sessionId: string;
  status: string;
  currentNode: string | null;
  flowName: string | null;
  aiMessages: { node: string; content: string; callback?: { delivered: boolean } }[];
  memory: Record<string, unknown>;
  outputs: Record<string, Record<string, unknown>>;
  error: { code: string; message: string; node: string | null } | null;
}

interface EventsPage {
  data: { eventName: string; sessionId: string; payload: Record<string, unknown> }[];
}

beforeAll(async () => {
  toolServer = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    request.on('end', () => {
      const body = text ? JSON.parse(text) : {};
      if (request.url === '/status.html') {
        response.writeHead(200, { 'content-type': 'text/html' });
        response.end('<html><head><title>Router status</title></head><body><h1>All systems normal</h1></body></html>');
        return;
      }
      if (request.url === '/big') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(ONE_MB_TOOL_ANSWER));
        return;
      }
      if (request.url === '/orders') {
        toolCalls.push(body);
        const shipped = body.orderId === 'A-1';
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(shipped ? { status: 'shipped', shippedAt: '2026-11-20' } : { status: 'delayed' }));
        return;
      }
      callbacks.push(body);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((done) => toolServer.listen(0, '127.0.0.1', done));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;

  clockDir = mkdtempSync(join(tmpdir(), 'aps-clock-'));
  clockFile = join(clockDir, 'now');
  service = await startService({
    env: {
      // The tool and callback servers of this test are on loopback, which the runtime refuses unless told so.
      OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true',
      SCHEDULER_CLOCK_FILE: clockFile,
      SCHEDULER_INTERVAL_MS: '200',
    },
  });
  call = client(service);
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Flows' } });
  agentId = agent.body.agentId;
});

afterAll(async () => {
  await service?.stop();
  await new Promise<void>((done) => toolServer?.close(() => done()));
  if (clockDir) rmSync(clockDir, { recursive: true, force: true });
});

const setClock = (at: Date) => writeFileSync(clockFile, at.toISOString());

interface LastTick {
  sequence: number;
  now: string;
  sent: number;
  alreadySent: number;
}

/** The runtime writes each schedule tick's outcome beside the clock file (bin/local.ts); waits for one that holds. */
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

const definitionPath = () => `/dashboard/agents/${agentId}/definition/production`;
const webhook = (trigger: string, body: Record<string, unknown>) =>
  call<Result>('POST', `/api/v1/webhooks/${agentId}/production/${trigger}`, { body });

/**
 * A run handed over before its browser task (whose bound does not fit in a request: 202 `running`), as the session
 * holds it once the flow runner has run it.
 */
async function handedOver(
  post: () => Promise<{ status: number; body: Result }>,
  get: (path: string) => Promise<{ status: number; body: Result }>,
  agent: string,
) {
  const answered = await post();
  expect([answered.status, answered.body.status]).toEqual([202, 'running']);
  return pollUntil(
    () => get(`/dashboard/agents/${agent}/sessions/production/${answered.body.sessionId}`),
    (r) => r.body.status !== 'running',
    60_000,
  );
}

function fullDefinition() {
  const support = supportDefinition(toolUrl, `${toolUrl}/ai-messages`);
  const web = {
    name: 'web',
    nodes: [
      { name: 'Browse', type: 'trigger', triggerType: 'webhook' },
      { name: 'ReadPage', type: 'browserTask', prompt: 'Read the router status page', url: '{memory.page}' },
      {
        name: 'PageReport',
        type: 'promptNode',
        displayName: 'Report',
        prompt: '{tools.ReadPage.title}: {tools.ReadPage.text}',
      },
    ],
    edges: [
      { from: 'Browse', to: 'ReadPage', type: 'stepForward' },
      { from: 'ReadPage', to: 'PageReport', type: 'stepForward' },
    ],
  };
  return { ...support, flows: [...support.flows, refundFlow, triageFlow, crmFlow, web] };
}

async function events(sessionId: string): Promise<EventsPage['data']> {
  return eventsOfAgent(agentId, sessionId);
}

/** The session's events, oldest first. */
async function eventsOfAgent(agent: string, sessionId: string): Promise<EventsPage['data']> {
  const page = await call<EventsPage>('POST', '/api/v1/events/agent', {
    body: { agentId: agent, filters: { environment: 'production', sessionId }, limit: 1000 },
  });
  expect(page.status).toBe(200);
  return [...page.body.data].reverse();
}

describe('definitions', () => {
  it('validate answers every problem at once with node, field and rule; PUT refuses the same definition', async () => {
    const bad = structuredClone(fullDefinition());
    const support = bad.flows[0];
    const nodes = support.nodes as Record<string, unknown>[];
    nodes[1] = { ...nodes[1], toolName: 'lookupInvoice' };
    const triage = bad.flows[2];
    (triage.nodes as Record<string, unknown>[])[2] = { ...triage.nodes[2], targetNodeId: 'Nowhere' };

    const validation = await call<{ valid: boolean; problems: { node: string; field: string; rule: string }[] }>(
      'POST',
      `${definitionPath()}/validate`,
      { body: bad },
    );
    expect(validation.status).toBe(200);
    expect(validation.body.valid).toBe(false);
    expect(validation.body.problems.map((p) => [p.node, p.field, p.rule])).toEqual([
      ['Lookup', 'flows.0.nodes.1.toolName', 'tool.unknown'],
      ['ToRefund', 'flows.2.nodes.2.targetNodeId', 'jump.unknownTarget'],
    ]);

    const put = await call<{ error: { code: string; details: unknown[] } }>('PUT', definitionPath(), { body: bad });
    expect(put.status).toBe(400);
    expect(put.body.error.code).toBe('VALIDATION_ERROR');
    expect(put.body.error.details).toHaveLength(2);
    expect((await call('GET', definitionPath())).status).toBe(404);
  });

  it('stores a valid definition as the next version and answers it back; the same again stores nothing', async () => {
    const first = await call<{ version: number; updatedAt: string }>('PUT', definitionPath(), {
      body: fullDefinition(),
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ version: 1, unchanged: false });
    const again = await call<{ version: number }>('PUT', definitionPath(), { body: fullDefinition() });
    expect(again.body).toMatchObject({ version: 1, unchanged: true, updatedAt: first.body.updatedAt });
    const changed = await call('PUT', definitionPath(), { body: { ...fullDefinition(), instructions: 'Be brief.' } });
    expect(changed.body).toMatchObject({ version: 2, unchanged: false });
    const back = await call('PUT', definitionPath(), { body: fullDefinition() });
    expect(back.body).toMatchObject({ version: 3, unchanged: false });
    const got = await call<{ version: number; definition: { flows: { name: string }[] } }>('GET', definitionPath());
    expect(got.body.version).toBe(3);
    expect(got.body.definition.flows.map((f) => f.name)).toEqual(['support', 'refund', 'triage', 'crm', 'web']);
  });
});

describe('runs', () => {
  it('runs a webhook flow through an HTTP tool and a junction, and posts the AI message to the callback', async () => {
    const shipped = await webhook('Start', { orderId: 'A-1' });
    expect(shipped.status).toBe(200);
    expect(shipped.body).toMatchObject({ status: 'completed', currentNode: null, flowName: 'support' });
    expect(shipped.body.outputs.Lookup).toEqual({ status: 'shipped', shippedAt: '2026-11-20' });
    expect(shipped.body.aiMessages.map((m) => [m.node, m.content])).toEqual([
      ['Shipped', 'Tell the customer that order A-1 shipped on 2026-11-20.'],
    ]);
    expect(shipped.body.aiMessages[0].callback).toEqual({ delivered: true, status: 204 });
    expect(toolCalls.at(-1)).toEqual({ orderId: 'A-1' });
    expect(callbacks.at(-1)).toMatchObject({
      event: 'AgentEvents.AI_MESSAGE',
      sessionId: shipped.body.sessionId,
      node: 'Shipped',
      content: 'Tell the customer that order A-1 shipped on 2026-11-20.',
    });

    const delayed = await webhook('Start', { orderId: 'B-2' });
    expect(delayed.body.aiMessages.map((m) => m.content)).toEqual([
      'Apologise: order B-2 is delayed. Write to help@acme.test for help.',
    ]);

    const all = await events(shipped.body.sessionId);
    // Each node's start, and its end (node_result: how it ended and the edge it took: docs/flows.md, "The trace").
    expect(all.map((e) => e.eventName)).toEqual([
      'invocation_start',
      ...Array.from({ length: 4 }).flatMap(() => ['node_execution', 'node_result']),
    ]);
    expect(all.filter((e) => e.eventName === 'node_result').map((e) => e.payload.edge)).toEqual([
      { to: 'Lookup', reason: 'stepForward' },
      { to: 'Route', reason: 'stepForward' },
      { to: 'Shipped', reason: 'when tools.Lookup.status equals "shipped"' },
      { to: null, reason: 'no edge leaves this node: the flow ends' },
    ]);
    const recorded = all.filter((e) => e.eventName !== 'node_result');
    expect(recorded[0].payload).toMatchObject({
      triggerName: 'Start',
      triggerType: 'webhook',
      body: { orderId: 'A-1' },
    });
    expect(recorded.slice(1).map((e) => [e.payload.nodeName, e.payload.nodeType])).toEqual([
      ['Start', 'trigger'],
      ['Lookup', 'tool'],
      ['Route', 'junction'],
      ['Shipped', 'promptNode'],
    ]);
    expect(recorded[2].payload).toMatchObject({ displayName: null, parameters: { parameters: { orderId: 'A-1' } } });
    expect(recorded[4].payload).toMatchObject({ displayName: 'Shipped answer' });
  });

  it('pauses at a human-in-the-loop node, stays on it for an unrelated answer, and resumes on the next message', async () => {
    const started = await webhook('RefundStart', { customer: { name: 'Ada' } });
    expect(started.body).toMatchObject({ status: 'paused', currentNode: 'AskReason', flowName: 'refund' });
    expect(started.body.aiMessages.map((m) => m.content)).toEqual(['Ask Ada why they want a refund.']);
    const { sessionId } = started.body;

    const unrelated = await webhook('RefundStart', { sessionId, message: 'hello?' });
    expect(unrelated.body).toMatchObject({ sessionId, status: 'paused', currentNode: 'AskReason' });
    expect(unrelated.body.aiMessages.map((m) => m.node)).toEqual(['AskReason']);

    const answered = await webhook('RefundStart', { sessionId, message: 'The router arrived broken' });
    expect(answered.body).toMatchObject({ sessionId, status: 'completed', currentNode: null });
    expect(answered.body.aiMessages.map((m) => m.content)).toEqual([
      'Confirm the refund of the damaged router to Ada.',
    ]);

    const session = await call<{
      status: string;
      messages: { role: string; content: string }[];
      aiMessages: unknown[];
    }>('GET', `/dashboard/agents/${agentId}/sessions/production/${sessionId}`);
    expect(session.body.status).toBe('completed');
    expect(session.body.aiMessages).toHaveLength(3);
    expect(session.body.messages.map((m) => m.role)).toEqual(['assistant', 'user', 'assistant', 'user', 'assistant']);

    const recorded = await events(sessionId);
    expect(recorded.filter((e) => e.eventName === 'invocation_start')).toHaveLength(3);
    expect(recorded.filter((e) => e.eventName === 'invocation_start').map((e) => e.payload.resumedNode)).toEqual([
      null,
      'AskReason',
      'AskReason',
    ]);
    expect(recorded.filter((e) => e.eventName === 'node_execution').map((e) => e.payload.nodeName)).toEqual([
      'RefundStart',
      'AskReason',
      'AskReason',
      'Approve',
    ]);
  });

  it('answers 404 TRIGGER_NOT_FOUND for an unknown trigger and 400 for a session id that is not a UUID', async () => {
    const missing = await webhook('NoSuchTrigger', {});
    expect(missing.status).toBe(404);
    expect((missing.body as unknown as { error: { code: string } }).error.code).toBe('TRIGGER_NOT_FOUND');
    const bad = await webhook('Start', { sessionId: 'not-a-uuid' });
    expect(bad.status).toBe(400);
  });

  it('jumps across flows keeping memory, and pauses in the target flow', async () => {
    const result = await webhook('Triage', { customer: { name: 'Bo' } });
    expect(result.body).toMatchObject({ status: 'paused', currentNode: 'AskReason', flowName: 'refund' });
    expect(result.body.memory).toMatchObject({ customer: { name: 'Bo' }, channel: 'triage' });
    expect(result.body.aiMessages.map((m) => m.content)).toEqual(['Ask Bo why they want a refund.']);
    const nodes = (await events(result.body.sessionId))
      .filter((e) => e.eventName === 'node_execution')
      .map((e) => e.payload.nodeName);
    expect(nodes).toEqual(['Triage', 'Remember', 'ToRefund', 'AskReason']);
  });

  it('runs the app trigger of an external event and records a custom analytics event from the flow', async () => {
    const result = await call<Result>('POST', `/api/v1/app-events/${agentId}/production`, {
      body: { appName: 'crm', eventName: 'ticket.created', payload: { ticketId: 'T-7' } },
    });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ status: 'completed', aiMessages: [] });
    expect(result.body.outputs.Acknowledge).toEqual({ response: 'Acknowledge ticket T-7 of crm.' });
    const recorded = await events(result.body.sessionId);
    expect(recorded.find((e) => e.eventName === 'ticket_acknowledged')?.payload).toEqual({ ticketId: 'T-7' });

    const unknown = await call('POST', `/api/v1/app-events/${agentId}/production`, {
      body: { appName: 'crm', eventName: 'ticket.closed' },
    });
    expect(unknown.status).toBe(404);
  });

  it('runs a browser task in Chromium and hands the page to the next node', async () => {
    const result = await handedOver(
      () => webhook('Browse', { page: `${toolUrl}/status.html` }),
      (path) => call<Result>('GET', path),
      agentId,
    );
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    expect(result.body.outputs.ReadPage).toMatchObject({
      url: `${toolUrl}/status.html`,
      status: 200,
      title: 'Router status',
      text: 'All systems normal',
    });
    expect(result.body.aiMessages.map((m) => m.content)).toEqual(['Router status: All systems normal']);
    const browse = (await events(result.body.sessionId)).find((e) => e.payload.nodeName === 'ReadPage');
    expect(browse?.payload).toMatchObject({
      nodeType: 'browserTask',
      parameters: { prompt: 'Read the router status page', url: `${toolUrl}/status.html` },
    });
  });

  it('fails the session with JUMP_TARGET_NOT_FOUND when a stored definition jumps to a node no flow has', async () => {
    // The API refuses such a definition (see above); a definition stored by other means (an older version of the
    // service, a direct write) is still checked when the jump runs.
    if (!service.dynamodbEndpoint) throw new Error('the local runtime did not print its DynamoDB endpoint');
    const dynamo = new DynamoDBClient({
      endpoint: service.dynamodbEndpoint,
      region: LOCAL_REGION,
      credentials: service.engineCredentials ?? undefined,
    });
    const definitions = new DynamoDefinitionStore(DynamoDBDocumentClient.from(dynamo), 'agentDefinitions');
    const stored = await definitions.get(agentId, 'production');
    if (!stored) throw new Error('no stored definition');
    const broken = structuredClone(stored);
    const triage = broken.definition.flows.find((f) => f.name === 'triage');
    const jump = triage?.nodes.find((n) => n.name === 'ToRefund');
    if (jump?.type !== 'jumpToNode') throw new Error('no jump node');
    jump.targetNodeId = 'Vanished';
    await definitions.put({ ...broken, version: stored.version + 1 });
    dynamo.destroy();

    const result = await webhook('Triage', { customer: { name: 'Cy' } });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({
      status: 'failed',
      error: { code: 'JUMP_TARGET_NOT_FOUND', node: 'ToRefund' },
    });
    expect(result.body.error?.message).toContain('Vanished');
    const error = (await events(result.body.sessionId)).find((e) => e.eventName === 'invocation_error');
    expect(error?.payload).toEqual({
      code: 'JUMP_TARGET_NOT_FOUND',
      message: result.body.error?.message,
      nodeName: 'ToRefund',
    });
    // The stack (server file paths) is in the service log only.
    expect(service.output()).toMatch(/flow invocation failed.*JUMP_TARGET_NOT_FOUND/);
    expect(service.output()).toMatch(/FlowError: jumpToNode ToRefund[^"]*\\n\s+at /);

    await call('PUT', definitionPath(), { body: fullDefinition() });
  });
});

describe('bounded state and failures', () => {
  let boundsAgent: string;
  const bigTools = Array.from({ length: 12 }, (_, i) => ({
    name: `Big${i + 1}`,
    type: 'tool',
    toolName: 'bigAnswer',
  }));
  const chain = (names: string[]) =>
    names.slice(1).map((to, i) => ({ from: names[i], to, type: 'stepForward' as const }));
  const boundsWebhook = (trigger: string, body: Record<string, unknown>) =>
    call<Result>('POST', `/api/v1/webhooks/${boundsAgent}/production/${trigger}`, { body });

  beforeAll(async () => {
    boundsAgent = (await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Bounds' } }))
      .body.agentId;
    const definition = {
      tools: [
        { name: 'bigAnswer', url: `${toolUrl}/big` },
        { name: 'lookupOrder', url: `${toolUrl}/orders`, parameters: { orderId: { type: 'string' } } },
      ],
      flows: [
        {
          name: 'big',
          nodes: [
            { name: 'BigStart', type: 'trigger', triggerType: 'webhook' },
            { name: 'Big', type: 'tool', toolName: 'bigAnswer' },
            { name: 'Order', type: 'tool', toolName: 'lookupOrder', parameters: { orderId: '{memory.orderId}' } },
            {
              name: 'Report',
              type: 'promptNode',
              displayName: 'Report',
              prompt: 'Order {tools.Order.status}; the big answer truncated: {tools.Big.truncated}.',
            },
          ],
          edges: chain(['BigStart', 'Big', 'Order', 'Report']),
        },
        {
          name: 'huge',
          nodes: [{ name: 'HugeStart', type: 'trigger', triggerType: 'webhook' }, ...bigTools],
          edges: chain(['HugeStart', ...bigTools.map((n) => n.name)]),
        },
      ],
    };
    expect(
      (await call('PUT', `/dashboard/agents/${boundsAgent}/definition/production`, { body: definition })).status,
    ).toBe(200);
  });

  it('keeps a 1 MB tool answer as a bounded preview; later nodes read the other outputs', async () => {
    const result = await boundsWebhook('BigStart', { orderId: 'A-1' });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    const big = result.body.outputs.Big as { truncated: boolean; bytes: number; preview: string };
    expect(big).toMatchObject({ truncated: true, bytes: JSON.stringify(ONE_MB_TOOL_ANSWER).length });
    expect(big.preview.startsWith('{"status":"large","blob":"xxx')).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(big))).toBeLessThanOrEqual(32 * 1024);
    expect(result.body.aiMessages.map((m) => m.content)).toEqual(['Order shipped; the big answer truncated: true.']);
    const session = await call<{ status: string; outputs: unknown }>(
      'GET',
      `/dashboard/agents/${boundsAgent}/sessions/production/${result.body.sessionId}`,
    );
    expect(session.body).toMatchObject({ status: 'completed', outputs: result.body.outputs });
  });

  it('ends a run whose state is still too large failed with SESSION_TOO_LARGE, and the session takes the next call', async () => {
    const first = await boundsWebhook('HugeStart', { customer: 'Ada' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'failed', error: { code: 'SESSION_TOO_LARGE' }, outputs: {} });
    const { sessionId } = first.body;
    const session = await call<{ status: string; error: unknown }>(
      'GET',
      `/dashboard/agents/${boundsAgent}/sessions/production/${sessionId}`,
    );
    expect(session.body).toMatchObject({ status: 'failed', error: first.body.error });

    const recorded = await eventsOfAgent(boundsAgent, sessionId);
    expect(recorded.map((e) => e.eventName)).toEqual([
      'invocation_start',
      ...Array.from({ length: 13 }).flatMap(() => ['node_execution', 'node_result']),
      'invocation_error',
    ]);
    expect(recorded.at(-1)?.payload).toEqual({
      code: 'SESSION_TOO_LARGE',
      message: first.body.error?.message,
      nodeName: null,
    });

    // Not held until a lease runs out (409 SESSION_BUSY), and not re-run by anyone: the next call is answered.
    const second = await boundsWebhook('HugeStart', { sessionId });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ sessionId, status: 'failed', error: { code: 'SESSION_TOO_LARGE' } });
  });

  it('never returns a stack in an invocation_error event', async () => {
    const payloads: Record<string, unknown>[] = [];
    for (const agent of [agentId, boundsAgent]) {
      const page = await call<EventsPage>('POST', '/api/v1/events/agent', {
        body: { agentId: agent, filters: { environment: 'production', eventName: 'invocation_error' }, limit: 1000 },
      });
      payloads.push(...page.body.data.map((e) => e.payload));
    }
    // JUMP_TARGET_NOT_FOUND and SESSION_TOO_LARGE from the tests above, at least.
    expect(payloads.map((p) => p.code)).toEqual(expect.arrayContaining(['JUMP_TARGET_NOT_FOUND', 'SESSION_TOO_LARGE']));
    for (const payload of payloads) expect(Object.keys(payload).sort()).toEqual(['code', 'message', 'nodeName']);
  });
});

describe('a failure message that embeds a 40 KB host, on a runtime that refuses private targets', () => {
  let guarded: TestService;
  let guardedCall: ReturnType<typeof client>;
  let guardedAgent: string;

  beforeAll(async () => {
    guarded = await startService();
    guardedCall = client(guarded);
    guardedAgent = (
      await guardedCall<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Host' } })
    ).body.agentId;
    const definition = {
      flows: [
        {
          name: 'web',
          nodes: [
            { name: 'Browse', type: 'trigger', triggerType: 'webhook' },
            { name: 'ReadPage', type: 'browserTask', prompt: 'Read the page', url: '{memory.page}' },
          ],
          edges: [{ from: 'Browse', to: 'ReadPage', type: 'stepForward' }],
        },
      ],
    };
    const put = await guardedCall('PUT', `/dashboard/agents/${guardedAgent}/definition/production`, {
      body: definition,
    });
    expect(put.status).toBe(200);
  });

  afterAll(async () => {
    await guarded?.stop();
  });

  it('fails the session with the message cut to 1,000 characters and records it, without a stack', async () => {
    // The guard resolves the host before any browser starts, so this needs no Chromium.
    const host = `${'a'.repeat(40_000)}.invalid`;
    const result = await handedOver(
      () =>
        guardedCall<Result>('POST', `/api/v1/webhooks/${guardedAgent}/production/Browse`, {
          body: { page: `http://${host}/` },
        }),
      (path) => guardedCall<Result>('GET', path),
      guardedAgent,
    );
    expect(result.body).toMatchObject({ status: 'failed', error: { code: 'BROWSER_FAILED', node: 'ReadPage' } });
    const message = result.body.error?.message ?? '';
    expect(message).toHaveLength(1_000);
    expect(message).toMatch(/^The host a+…$/);

    // A handed-over run stores its session, then writes its invocation's events (runtime.ts, `finally`): the
    // session may read `failed` a moment before its event is there, so the query is asked until it is.
    const page = await pollUntil(
      () =>
        guardedCall<EventsPage>('POST', '/api/v1/events/agent', {
          body: { agentId: guardedAgent, filters: { sessionId: result.body.sessionId, eventName: 'invocation_error' } },
        }),
      (answer) => answer.status !== 200 || answer.body.data.length > 0,
    );
    expect(page.body.data.map((e) => e.payload)).toEqual([{ code: 'BROWSER_FAILED', message, nodeName: 'ReadPage' }]);
  });
});

describe('default retrieval', () => {
  it('injects the retrieved context after the trigger as a system message the model sees', async () => {
    const dataset = await createDataset(call, 'staging');
    const { link } = await uploadDocument(
      call,
      dataset,
      { fileName: 'warranty.txt' },
      'The warranty of every Acme router lasts three years from the day of purchase.',
    );
    await pollUntil(
      () =>
        call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key: link.s3Key } }),
      (r) => r.body.status === 'ready',
    );
    const base = `/dashboard/agents/${dataset.agentId}`;
    expect(
      (
        await call('PUT', `${base}/retrieval/staging`, {
          body: { enabled: true, knowledgeBases: [{ knowledgeBaseId: dataset.knowledgeBaseId }] },
        })
      ).status,
    ).toBe(200);
    const definition = {
      flows: [
        {
          name: 'faq',
          nodes: [
            { name: 'Question', type: 'trigger', triggerType: 'webhook' },
            { name: 'Answer', type: 'promptNode', displayName: 'Answer', prompt: 'Answer the question.' },
          ],
          edges: [{ from: 'Question', to: 'Answer', type: 'stepForward' }],
        },
      ],
    };
    expect((await call('PUT', `${base}/definition/staging`, { body: definition })).status).toBe(200);

    const result = await call<Result>('POST', `/api/v1/webhooks/${dataset.agentId}/staging/Question`, {
      body: { message: 'How long is the warranty of the router?' },
    });
    expect(result.body.status).toBe('completed');
    expect(result.body.aiMessages[0].content).toBe(
      'Answer the question.\nKnowledge: The warranty of every Acme router lasts three years from the day of purchase.',
    );
    const session = await call<{ messages: { role: string; content: string }[] }>(
      'GET',
      `${base}/sessions/staging/${result.body.sessionId}`,
    );
    expect(session.body.messages.map((m) => m.role)).toEqual(['user', 'system', 'assistant']);
    expect(session.body.messages[1].content).toMatch(/^Relevant knowledge .*\n\[1\] \(document [^)]+\) The warranty/);
  });
});

describe('schedule triggers', () => {
  it('fire once when the clock passes the cron time in the trigger’s time zone', async () => {
    const timezone = 'Asia/Kolkata';
    // A minute of today in Kolkata a little ahead of now, so the fire falls after the definition is stored.
    const fireAt = new Date(Math.ceil((Date.now() + 120_000) / 60_000) * 60_000);
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat('en-GB', { timeZone: timezone, hour: 'numeric', minute: 'numeric' })
        .formatToParts(fireAt)
        .map((p) => [p.type, p.value]),
    );
    const cron = `${Number(parts.minute)} ${Number(parts.hour)} * * *`;
    expect(nextFire(cron, timezone, new Date(fireAt.getTime() - 60_000))?.toISOString()).toBe(fireAt.toISOString());

    const definition = { ...fullDefinition(), flows: [...fullDefinition().flows, scheduleFlow(cron, timezone)] };
    expect((await call('PUT', definitionPath(), { body: definition })).status).toBe(200);

    const sessionId = fireSessionId(agentId, 'production', 'Morning', fireAt);
    const sessionPath = `/dashboard/agents/${agentId}/sessions/production/${sessionId}`;
    // Before the fire time the scheduler ticks (every 200 ms) and sends nothing: two ticks at that clock.
    const before = new Date(fireAt.getTime() - 30_000).toISOString();
    setClock(new Date(before));
    const first = await tickWhere((t) => t.now === before);
    const second = await tickWhere((t) => t.now === before && t.sequence > first.sequence);
    expect([first.sent, second.sent]).toEqual([0, 0]);
    expect((await call('GET', sessionPath)).status).toBe(404);

    setClock(new Date(fireAt.getTime() + 20_000));
    const fired = await pollUntil(
      () => call<{ status: string }>('GET', sessionPath),
      (r) => r.status === 200 && r.body.status === 'completed',
    );
    expect(fired.status).toBe(200);
    // Later ticks see the same fire sent and send nothing more: one invocation_start only.
    const later = await tickWhere((t) => t.alreadySent >= 1);
    expect(later.sent).toBe(0);

    const session = await call<{ status: string; aiMessages: { content: string }[]; trigger: unknown }>(
      'GET',
      sessionPath,
    );
    expect(session.body.status).toBe('completed');
    expect(session.body.trigger).toEqual({ name: 'Morning', type: 'schedule' });
    expect(session.body.aiMessages[0].content).toContain(`(${fireAt.toISOString()})`);
    const starts = (await events(sessionId)).filter((e) => e.eventName === 'invocation_start');
    expect(starts).toHaveLength(1);
    expect(starts[0].payload).toMatchObject({
      triggerName: 'Morning',
      triggerType: 'schedule',
      body: { scheduledAt: fireAt.toISOString() },
    });
  });
});
