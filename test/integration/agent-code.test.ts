/**
 * Agent code (issue 37, item 1) on the local runtime: a definition's `agentCode.url` served by the agent SDK's
 * `node:http` handler. A webhook run calls the trigger handler, signed (the SDK verifies it), before default
 * retrieval: the memory it answers reaches default retrieval's filter and the prompt, its message is in the
 * conversation before retrieval's; the AI message reaches the same handler, which tracks a custom event that
 * POST /api/v1/events/agent returns. A handler that times out leaves `invocation_error` (AGENT_CODE_TIMEOUT) and the run
 * going on; with `onFailure: 'stop'` a failing handler fails the run; `stop: true` ends it before any node.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defineAgent, type PlatformClient, type TriggerEvent } from '../../packages/agent-sdk/src';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

jest.setTimeout(120_000);

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;
let secret: string;
let server: Server;
let slow: Server;
let agentUrl: string;
let slowUrl: string;
const triggers: TriggerEvent[] = [];
const messages: { content: string; sessionId: string }[] = [];

interface Run {
  status: string;
  sessionId: string;
  aiMessages: { content: string; callback?: { delivered: boolean; status?: number } }[];
  error: { code: string } | null;
}

const listen = async (handler: Parameters<typeof createServer>[1]) => {
  const made = createServer(handler);
  await new Promise<void>((done) => made.listen(0, '127.0.0.1', done));
  return { server: made, url: `http://127.0.0.1:${(made.address() as AddressInfo).port}/agent` };
};

const definition = (agentCode: Record<string, unknown>) => ({
  agentCode,
  flows: [
    {
      name: 'desk',
      nodes: [
        { name: 'Start', type: 'trigger', triggerType: 'webhook' },
        { name: 'Greet', type: 'promptNode', displayName: 'Greet', prompt: 'Hello {memory.name}, {memory.tier}.' },
      ],
      edges: [{ from: 'Start', to: 'Greet', type: 'stepForward' }],
    },
  ],
});

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

  const agent = defineAgent({
    secrets: secret,
    platform: { baseUrl: service.baseUrl, token: token.body.token },
    onTrigger(event) {
      triggers.push(event);
      const body = event.body as { stop?: boolean; fail?: boolean };
      if (body.fail) throw new Error('the CRM is down');
      if (body.stop) return { stop: true };
      // The customer's tier from a (stub) CRM, for default retrieval and the prompt.
      return {
        memory: { name: 'Ada', tier: 'tier:gold' },
        messages: [{ role: 'system', content: 'CRM: Ada is a gold customer since 2021.' }],
      };
    },
    async onAiMessage(message, context) {
      messages.push({ content: message.content, sessionId: message.sessionId });
      await (context.platform as PlatformClient).trackAnalyticsEvent(
        'ai_message.routed',
        { channel: 'chat' },
        { sessionId: message.sessionId, eventKey: context.messageId },
      );
    },
  });
  ({ server, url: agentUrl } = await listen(agent.http));
  // Answers after 3 s: past a 1 s handler timeout.
  ({ server: slow, url: slowUrl } = await listen((_request, response) => {
    setTimeout(() => response.writeHead(204).end(), 3000).unref();
  }));
});

afterAll(async () => {
  await service?.stop();
  for (const made of [server, slow]) if (made) made.closeAllConnections();
  await Promise.all(
    [server, slow].map((made) => new Promise<void>((done) => (made ? made.close(() => done()) : done()))),
  );
});

it('calls the trigger handler before default retrieval, and sends it the AI message', async () => {
  await useDefinition({ url: agentUrl });
  const answer = await run({ question: 'When do I get a replacement router?' });
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ status: 'completed', error: null });
  // The handler's memory reached the prompt, and default retrieval's gold document the model (the offline model
  // answers with its prompt and the knowledge it was given).
  const [content] = answer.body.aiMessages.map((m) => m.content);
  expect(content).toMatch(
    /^Hello Ada, tier:gold\.\nKnowledge: Gold customers get a replacement router the next day\.$/,
  );
  expect(answer.body.aiMessages[0].callback).toEqual({ delivered: true, status: 204 });

  expect(triggers).toHaveLength(1);
  expect(triggers[0]).toMatchObject({
    event: 'TRIGGER_EVENT',
    agentId: dataset.agentId,
    environment: 'production',
    sessionId: answer.body.sessionId,
    trigger: { name: 'Start', type: 'webhook' },
    body: { question: 'When do I get a replacement router?' },
    memory: {},
  });

  // Its message first, then default retrieval's, filtered by the tier it set: the gold document alone.
  const session = await call<{ messages: { role: string; content: string }[]; memory: Record<string, unknown> }>(
    'GET',
    `/dashboard/agents/${dataset.agentId}/sessions/production/${answer.body.sessionId}`,
  );
  const system = session.body.messages.filter((m) => m.role === 'system').map((m) => m.content);
  expect(system).toHaveLength(2);
  expect(system[0]).toBe('CRM: Ada is a gold customer since 2021.');
  expect(system[1]).toContain('Gold customers get a replacement router the next day.');
  expect(system[1]).not.toContain('Silver');
  expect(session.body.memory).toMatchObject({ name: 'Ada', tier: 'tier:gold' });

  // The AI message reached the handler, which tracked an event the events query returns.
  expect(messages).toEqual([{ content, sessionId: answer.body.sessionId }]);
  expect(await eventsNamed('ai_message.routed')).toEqual([
    expect.objectContaining({ sessionId: answer.body.sessionId, payload: { channel: 'chat' } }),
  ]);
  expect(await eventsNamed('invocation_error')).toEqual([]);
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
  expect(slowRun.body.aiMessages.map((m) => m.content.split('\n')[0])).toEqual(['Hello {memory.name}, {memory.tier}.']);
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
