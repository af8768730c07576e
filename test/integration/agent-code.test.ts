/**
 * Agent code (issue 37, items 1 and 5) on the local runtime. A definition's `agentCode.url` served by the desk agent of
 * examples/desk-agent (the SDK's `node:http` handler): a webhook run calls its trigger handler, signed (the SDK
 * verifies it), before default retrieval, and the tier it loads from the CRM reaches default retrieval's filter and the
 * prompt; the AI message reaches the same code, which posts it to the chat and tracks a custom event that
 * POST /api/v1/events/agent returns. With a handler of the test's own: its messages join the conversation before
 * retrieval's; `stop: true` ends the run before any node; a handler that times out leaves `invocation_error`
 * (AGENT_CODE_TIMEOUT) and the run going on; with `onFailure: 'stop'` a failing handler fails the run.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defineAgent, type TriggerEvent } from '@agent-platform/agent-sdk';
import { triggerEventSchema } from '#core/flows/agent-events';
import { deskAgent, stubCrm } from '../../examples/desk-agent/agent';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { greetDefinition } from '../helpers/flow-definitions';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

jest.setTimeout(120_000);

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;
let secret: string;
let servers: Server[] = [];
let deskUrl: string;
let agentUrl: string;
let slowUrl: string;
const triggers: TriggerEvent[] = [];
/** What the desk agent posted to the chat. */
const chat: { text: string }[] = [];

interface Run {
  status: string;
  sessionId: string;
  aiMessages: { content: string; callback?: { delivered: boolean; status?: number } }[];
  error: { code: string } | null;
}

const listen = async (handler: Parameters<typeof createServer>[1]) => {
  const made = createServer(handler);
  await new Promise<void>((done) => made.listen(0, '127.0.0.1', done));
  servers.push(made);
  return `http://127.0.0.1:${(made.address() as AddressInfo).port}/agent`;
};

const definition = (agentCode: Record<string, unknown>) =>
  greetDefinition('Hello {memory.customerId}, {memory.tier}.', { agentCode });

const useDefinition = async (agentCode: Record<string, unknown>) =>
  expect(
    (await call('PUT', `/dashboard/agents/${dataset.agentId}/definition/production`, { body: definition(agentCode) }))
      .status,
  ).toBe(200);

const run = (body: Record<string, unknown>) =>
  call<Run>('POST', `/api/v1/webhooks/${dataset.agentId}/production/Start`, { body });

async function eventsNamed(eventName: string) {
  const page = await call<{ data: { eventName: string; sessionId: string; payload: Record<string, unknown> }[] }>(
    'POST',
    '/api/v1/events/agent',
    { body: { agentId: dataset.agentId, filters: { eventName } } },
  );
  return page.body.data;
}

beforeAll(async () => {
  service = await startService({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true' } });
  call = client(service);
  dataset = await createDataset(call, 'production');
  for (const [fileName, label1, text] of [
    ['gold.txt', 'tier:gold', 'Gold customers get a replacement router the next day.'],
    ['silver.txt', 'tier:silver', 'Silver customers get a replacement router within a week.'],
  ]) {
    const { link } = await uploadDocument(call, dataset, { fileName, label1 }, text);
    await pollUntil(
      () =>
        call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key: link.s3Key } }),
      (r) => r.body.status === 'ready',
    );
  }
  expect(
    (
      await call('PUT', `/dashboard/agents/${dataset.agentId}/retrieval/production`, {
        body: {
          enabled: true,
          knowledgeBases: [
            {
              knowledgeBaseId: dataset.knowledgeBaseId,
              minScore: 0.01,
              filters: [{ key: 'label1', operator: 'equals', value: '{state.memory.tier}' }],
            },
          ],
        },
      })
    ).status,
  ).toBe(200);
  secret = (
    await call<{ secret: string }>('POST', `/dashboard/agents/${dataset.agentId}/callback-secret`, { body: {} })
  ).body.secret;
  const token = await call<{ token: string }>('POST', '/dashboard/tokens', {
    body: { scopes: ['analytics', 'dashboard'], agentIds: [dataset.agentId], name: 'desk agent code' },
  });

  const platform = { baseUrl: service.baseUrl, token: token.body.token };
  const chatUrl = await listen((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      chat.push(JSON.parse(Buffer.concat(parts).toString('utf8')) as { text: string });
      response.writeHead(200).end('ok');
    });
  });
  deskUrl = await listen(deskAgent({ secrets: secret, platform, crm: stubCrm, chatWebhookUrl: chatUrl }).http);
  const agent = defineAgent({
    secrets: secret,
    platform,
    onTrigger(event) {
      triggers.push(event);
      const body = event.body as { stop?: boolean; fail?: boolean };
      if (body.fail) throw new Error('the CRM is down');
      if (body.stop) return { stop: true };
      return {
        // A `__proto__` key (JSON can carry one) never becomes memory's prototype, nor anything it stores.
        memory: JSON.parse('{"customerId":"cust-9","tier":"tier:gold","__proto__":{"polluted":true}}'),
        messages: [{ role: 'system', content: 'CRM: cust-9 is a gold customer since 2021.' }],
      };
    },
  });
  agentUrl = await listen(agent.http);
  // Answers after 3 s: past a 1 s handler timeout.
  slowUrl = await listen((_request, response) => {
    setTimeout(() => response.writeHead(204).end(), 3000).unref();
  });
});

afterAll(async () => {
  await service?.stop();
  for (const made of servers) made.closeAllConnections();
  await Promise.all(servers.map((made) => new Promise<void>((done) => made.close(() => done()))));
  servers = [];
});

it('calls the desk agent before default retrieval with the trigger, and sends it the AI message', async () => {
  await useDefinition({ url: deskUrl });
  const answer = await run({ customerId: 'cust-1', question: 'When do I get a replacement router?' });
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ status: 'completed', error: null });
  // The tier the CRM gave reached the prompt, and default retrieval's gold document the model (the offline model
  // answers with its prompt and the knowledge it was given).
  const [content] = answer.body.aiMessages.map((m) => m.content);
  expect(content).toMatch(
    /^Hello cust-1, tier:gold\.\nKnowledge: Gold customers get a replacement router the next day\.$/,
  );
  expect(answer.body.aiMessages[0].callback).toEqual({ delivered: true, status: 204 });

  // Default retrieval ran after the handler, filtered by the tier it set: the gold document alone.
  const session = await call<{ messages: { role: string; content: string }[]; memory: Record<string, unknown> }>(
    'GET',
    `/dashboard/agents/${dataset.agentId}/sessions/production/${answer.body.sessionId}`,
  );
  const system = session.body.messages.filter((m) => m.role === 'system').map((m) => m.content);
  expect(system).toHaveLength(1);
  expect(system[0]).toContain('Gold customers get a replacement router the next day.');
  expect(system[0]).not.toContain('Silver');
  expect(session.body.memory).toMatchObject({ customerId: 'cust-1', tier: 'tier:gold' });

  // The AI message reached the desk agent, which posted it to the chat and tracked an event the events query returns.
  expect(chat).toEqual([{ text: content }]);
  expect(await eventsNamed('ai_message.posted')).toEqual([
    expect.objectContaining({ sessionId: answer.body.sessionId, payload: { channel: 'chat', node: 'Greet' } }),
  ]);

  // The trace shows the call, before the run's node, with the handler's answer.
  const trace = await call<{ steps: { kind: string; node: string; status: string; output: unknown }[] }>(
    'GET',
    `/dashboard/agents/${dataset.agentId}/sessions/production/${answer.body.sessionId}/trace`,
  );
  expect(trace.body.steps.map((step) => [step.kind, step.node, step.status])).toEqual([
    ['agentCode', 'Start', 'succeeded'],
    ['node', 'Start', 'succeeded'],
    ['node', 'Greet', 'succeeded'],
  ]);
  expect(trace.body.steps[0].output).toEqual({ memory: { customerId: 'cust-1', tier: 'tier:gold' } });

  // A customer the CRM does not know: no tier, so the filter is skipped and both documents may come back.
  const unknown = await run({ customerId: 'cust-404', question: 'replacement router' });
  expect(unknown.body.aiMessages[0].content.split('\n')[0]).toBe('Hello cust-404, {memory.tier}.');
  expect(await eventsNamed('invocation_error')).toEqual([]);
});

it("adds the handler's messages before default retrieval's, with what the trigger carried", async () => {
  await useDefinition({ url: agentUrl });
  const answer = await run({ question: 'When do I get a replacement router?' });
  expect(answer.body).toMatchObject({ status: 'completed', error: null });
  expect(triggers.at(-1)).toMatchObject({
    event: 'TRIGGER_EVENT',
    agentId: dataset.agentId,
    environment: 'production',
    sessionId: answer.body.sessionId,
    trigger: { name: 'Start', type: 'webhook' },
    body: { question: 'When do I get a replacement router?' },
    memory: {},
  });
  // What was sent is what the schema the SDK's types are generated from says (core/flows/agent-events.ts).
  expect(triggerEventSchema.safeParse(triggers.at(-1)).error).toBeUndefined();
  const session = await call<{ messages: { role: string; content: string }[] }>(
    'GET',
    `/dashboard/agents/${dataset.agentId}/sessions/production/${answer.body.sessionId}`,
  );
  const system = session.body.messages.filter((m) => m.role === 'system').map((m) => m.content);
  expect(system).toHaveLength(2);
  expect(system[0]).toBe('CRM: cust-9 is a gold customer since 2021.');
  expect(system[1]).toContain('Gold customers get a replacement router the next day.');
  const stored = await call<{ memory: Record<string, unknown> }>(
    'GET',
    `/dashboard/agents/${dataset.agentId}/sessions/production/${answer.body.sessionId}`,
  );
  expect(stored.body.memory).toMatchObject({ customerId: 'cust-9', tier: 'tier:gold' });
  expect(Object.keys(stored.body.memory).sort()).toEqual(['customerId', 'question', 'tier']);
  expect(stored.body.memory.polluted).toBeUndefined();
});

it('ends the run before any node when the handler says stop', async () => {
  await useDefinition({ url: agentUrl });
  const answer = await run({ stop: true });
  expect(answer.body).toMatchObject({ status: 'completed', aiMessages: [], error: null });
});

it('goes on without a handler that times out, recording invocation_error; fails the run when told to', async () => {
  await useDefinition({ url: slowUrl, timeoutSeconds: 1 });
  const slowRun = await run({ question: 'replacement router' });
  expect(slowRun.body).toMatchObject({ status: 'completed', error: null });
  // No memory from the handler: the prompt's placeholders stay as written. (Its AI message went to the same slow URL,
  // within the callback's own timeout.)
  expect(slowRun.body.aiMessages.map((m) => m.content.split('\n')[0])).toEqual([
    'Hello {memory.customerId}, {memory.tier}.',
  ]);
  const errors = await pollUntil(
    () => eventsNamed('invocation_error'),
    (found) => found.length > 0,
  );
  expect(errors).toEqual([
    expect.objectContaining({
      sessionId: slowRun.body.sessionId,
      payload: {
        code: 'AGENT_CODE_TIMEOUT',
        message: expect.stringContaining('timed out after 1000 ms'),
        nodeName: 'Start',
      },
    }),
  ]);

  // In the trace: the failed call, once (its invocation_error is that step's), then the run's nodes.
  const slowTrace = await call<{ steps: { kind: string; status: string; error: { code: string } | null }[] }>(
    'GET',
    `/dashboard/agents/${dataset.agentId}/sessions/production/${slowRun.body.sessionId}/trace`,
  );
  expect(slowTrace.body.steps.map((step) => [step.kind, step.status, step.error?.code ?? null])).toEqual([
    ['agentCode', 'failed', 'AGENT_CODE_TIMEOUT'],
    ['node', 'succeeded', null],
    ['node', 'succeeded', null],
  ]);

  await useDefinition({ url: agentUrl, onFailure: 'stop' });
  const failed = await run({ fail: true });
  expect(failed.body).toMatchObject({ status: 'failed', error: { code: 'AGENT_CODE_FAILED' } });
  expect(failed.body.aiMessages).toEqual([]);
});

it('refuses an agentCode that breaks a rule, naming the field', async () => {
  const bad = await call<{ error: { details: { field: string; rule: string }[] } }>(
    'PUT',
    `/dashboard/agents/${dataset.agentId}/definition/production`,
    { body: definition({ url: agentUrl, timeoutSeconds: 30 }) },
  );
  expect(bad.status).toBe(400);
  expect(bad.body.error.details).toContainEqual(expect.objectContaining({ field: 'agentCode.timeoutSeconds' }));
});
