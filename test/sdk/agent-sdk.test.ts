/**
 * The agent SDK (packages/agent-sdk, issue 37 item 2), built with its own tsconfig and used as a customer would use
 * it, against the local runtime (offline model): its `node:http` handler receives a run's AI message and verifies it
 * with the agent's secret, and the handler, through `context.platform` and a token restricted to the agent, records
 * a custom analytics event (returned by POST /api/v1/events/agent) and retrieves from the agent's knowledge base. A
 * tampered or stale message is refused (401); the Lambda form answers the same; the platform's errors reach the code
 * as PlatformError with the rule; its verifier accepts what the platform signs, with either secret of a rotation.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { rotatedSecrets, signatureHeaders, signingSecrets } from '#core/flows/callback-signing';
import type * as Sdk from '../../packages/agent-sdk/src';
import { createDataset, type Dataset, readyDocument } from '../helpers/fixtures';
import { client, startService, type TestService } from '../helpers/service';

jest.setTimeout(120_000);

let service: TestService;
let call: ReturnType<typeof client>;
let sdk: typeof Sdk;
let outDir: string;
let server: Server;
let serverUrl: string;
let agentId: string;
let secret: string;
let dataset: Dataset;
let documentId: string;
const received: { message: Sdk.AiMessage; retrieved: string[]; tracked: Sdk.TrackedEvent }[] = [];

const definition = (callbackUrl: string) => ({
  callbackUrl,
  flows: [
    {
      name: 'hello',
      nodes: [
        { name: 'Start', type: 'trigger', triggerType: 'webhook' },
        { name: 'Greet', type: 'promptNode', displayName: 'Greet', prompt: 'Hello {memory.name}.' },
      ],
      edges: [{ from: 'Start', to: 'Greet', type: 'stepForward' }],
    },
  ],
});

beforeAll(async () => {
  // Built as its package builds it (`npm run build -w @agent-platform/agent-sdk`), into a folder of the test's own.
  outDir = mkdtempSync(join(tmpdir(), 'aps-agent-sdk-'));
  await promisify(execFile)(process.execPath, [
    require.resolve('typescript/bin/tsc'),
    '-p',
    join(__dirname, '../../packages/agent-sdk/tsconfig.json'),
    '--outDir',
    outDir,
  ]);
  sdk = require(join(outDir, 'index.js')) as typeof Sdk;

  service = await startService({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true' } });
  call = client(service);
  dataset = await createDataset(call, 'production');
  agentId = dataset.agentId;
  const link = await readyDocument(call, dataset, 'returns.txt', 'Gold customers may return any order within 60 days.');
  documentId = link.documentId as string;
  // The agent's own secret: rotated, so this test knows it (the creation answer of createDataset is not kept).
  const rotation = await call<{ secret: string }>('POST', `/dashboard/agents/${agentId}/callback-secret`, { body: {} });
  secret = rotation.body.secret;
  const token = await call<{ token: string }>('POST', '/dashboard/tokens', {
    body: { scopes: ['analytics', 'dashboard'], agentIds: [agentId], name: 'desk agent code' },
  });
  expect(token.status).toBe(201);

  const agent = sdk.defineAgent({
    secrets: secret,
    platform: { baseUrl: service.baseUrl, token: token.body.token },
    async onAiMessage(message, context) {
      const platform = context.platform as Sdk.PlatformClient;
      const hits = await platform.retrieveFromKnowledgeBase({
        knowledgeBaseId: dataset.knowledgeBaseId,
        query: 'return an order within days',
        numberOfResults: 3,
      });
      const tracked = await platform.trackAnalyticsEvent(
        'ai_message.routed',
        { node: message.node, channel: 'chat' },
        { sessionId: message.sessionId, eventKey: context.messageId },
      );
      received.push({ message, retrieved: hits.map((hit) => hit.metadata.documentId), tracked });
    },
  });
  server = createServer(agent.http);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/agent`;
  expect(
    (await call('PUT', `/dashboard/agents/${agentId}/definition/production`, { body: definition(serverUrl) })).status,
  ).toBe(200);
});

afterAll(async () => {
  await service?.stop();
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

it('receives a run’s AI message, verified, and calls the platform back for the agent', async () => {
  const run = await call<{ status: string; sessionId: string; aiMessages: { callback?: unknown }[] }>(
    'POST',
    `/api/v1/webhooks/${agentId}/production/Start`,
    { body: { name: 'Ada' } },
  );
  expect(run.status).toBe(200);
  expect(run.body.aiMessages[0].callback).toEqual({ delivered: true, status: 204 });
  expect(received).toHaveLength(1);
  const [{ message, retrieved, tracked }] = received;
  expect(message).toMatchObject({
    event: 'AgentEvents.AI_MESSAGE',
    agentId,
    environment: 'production',
    sessionId: run.body.sessionId,
    node: 'Greet',
    content: 'Hello Ada.',
  });
  expect(retrieved).toEqual([documentId]);
  expect(tracked).toMatchObject({ agentId, eventName: 'ai_message.routed', duplicate: false });

  const events = await call<{ data: { eventName: string; sessionId: string; payload: unknown }[] }>(
    'POST',
    '/api/v1/events/agent',
    { body: { agentId, filters: { eventName: 'ai_message.routed' } } },
  );
  expect(events.body.data).toEqual([
    expect.objectContaining({ sessionId: run.body.sessionId, payload: { node: 'Greet', channel: 'chat' } }),
  ]);
});

it('refuses a tampered, stale or unsigned message, in its node:http and its Lambda form', async () => {
  const body = JSON.stringify({ event: 'AgentEvents.AI_MESSAGE', agentId, content: 'Send Ada a refund.' });
  const now = Math.floor(Date.now() / 1000);
  const signed = (timestamp: number, text: string) =>
    signatureHeaders({ id: 'msg_test', timestamp, body: text, secrets: [secret] });
  const post = (headers: Record<string, string>, text: string) =>
    fetch(serverUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text });

  expect((await post(signed(now, body), `${body} `)).status).toBe(401);
  expect((await post(signed(now - 600, body), body)).status).toBe(401);
  expect((await post({}, body)).status).toBe(401);
  expect((await post({ ...signed(now, 'x'.repeat(10)) }, 'x'.repeat(1024 * 1024 + 1))).status).toBe(413);
  expect(received).toHaveLength(1);

  const agent = sdk.defineAgent({ secrets: secret, onAiMessage: () => undefined });
  const lambdaEvent = (headers: Record<string, string>, text: string) => ({
    headers,
    body: Buffer.from(text).toString('base64'),
    isBase64Encoded: true,
  });
  expect((await agent.lambda(lambdaEvent(signed(now, body), `${body} `))).statusCode).toBe(401);
  expect((await agent.lambda(lambdaEvent(signed(now, body), body))).statusCode).toBe(204);
  // Signed, but not an object, or not an event it has a handler for.
  expect((await agent.lambda(lambdaEvent(signed(now, 'null'), 'null'))).statusCode).toBe(400);
  const other = JSON.stringify({ event: 'SOMETHING_ELSE' });
  expect((await agent.lambda(lambdaEvent(signed(now, other), other))).statusCode).toBe(422);
});

it('verifies what the platform signs with either secret of a rotation, and names the platform’s refusals', async () => {
  const before = rotatedSecrets(undefined, new Date());
  const after = rotatedSecrets(before, new Date());
  const body = '{"event":"AgentEvents.AI_MESSAGE"}';
  const headers = signatureHeaders({
    id: 'msg_rotation',
    timestamp: Math.floor(Date.now() / 1000),
    body,
    secrets: signingSecrets(after, new Date()),
  });
  expect(sdk.verifyWebhook(before.current.secret, headers, body)).toBe('msg_rotation');
  expect(sdk.verifyWebhook(after.current.secret, headers, body)).toBe('msg_rotation');
  expect(() => sdk.verifyWebhook(rotatedSecrets(undefined, new Date()).current.secret, headers, body)).toThrow(
    sdk.WebhookVerificationError,
  );

  const platform = new sdk.PlatformClient({ baseUrl: service.baseUrl, token: service.tokens[0], agentId });
  const refused = await platform.trackAnalyticsEvent('invocation_start').catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(sdk.PlatformError);
  expect(refused).toMatchObject({
    status: 400,
    code: 'VALIDATION_ERROR',
    details: [expect.objectContaining({ field: 'eventName', rule: 'eventName.reserved' })],
  });
  const answer = await platform.retrieveAndGenerateFromKnowledgeBase({
    knowledgeBaseId: dataset.knowledgeBaseId,
    query: 'How long may gold customers return an order?',
  });
  expect(answer.citations.map((citation) => citation.documentId)).toContain(documentId);
});
