/**
 * An AI message whose delivery fails is sent again through the flow runner's queue (docs/agent-code.md, "The AI
 * message"; core/flows/ai-message-retry.ts), on the local runtime with the waits shortened to 1 s: every attempt
 * carries the same `webhook-id` and a valid signature; the session's message says it is retrying; each later attempt
 * is an `ai_message_delivery` event; a target that never answers 2xx gets six attempts in all, and the last failure is
 * an `invocation_error` (CALLBACK_FAILED for a callbackUrl).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '@agent-platform/agent-sdk';
import { aiMessageEventSchema } from '#core/flows/agent-events';
import { createDataset, type Dataset } from '../helpers/fixtures';
import { greetDefinition } from '../helpers/flow-definitions';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

jest.setTimeout(120_000);

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;
let secret: string;
let server: Server;
let baseUrl: string;
/** What the receiver got, by path: each request's headers and body. */
const received: Record<string, { headers: IncomingHttpHeaders; body: string }[]> = {};

interface DeliveryEvent {
  sessionId: string;
  payload: { attempt: number; delivered: boolean; status?: number; messageId: string; nodeName: string };
}

beforeAll(async () => {
  // /flaky answers 503 twice, then 204; /down always 500.
  server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const path = request.url ?? '';
      received[path] ??= [];
      received[path].push({ headers: request.headers, body: Buffer.concat(parts).toString('utf8') });
      const status = path === '/flaky' ? (received[path].length <= 2 ? 503 : 204) : 500;
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  service = await startService({
    env: { OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true', AI_MESSAGE_RETRY_DELAYS_SECONDS: '1,1,1,1,1' },
  });
  call = client(service);
  dataset = await createDataset(call, 'production');
  secret = (
    await call<{ secret: string }>('POST', `/dashboard/agents/${dataset.agentId}/callback-secret`, { body: {} })
  ).body.secret;
});

afterAll(async () => {
  await service?.stop();
  server?.closeAllConnections();
  await new Promise((done) => server?.close(done));
});

async function runWithCallback(path: string) {
  const definition = greetDefinition('Hello.', { callbackUrl: `${baseUrl}${path}` });
  expect(
    (await call('PUT', `/dashboard/agents/${dataset.agentId}/definition/production`, { body: definition })).status,
  ).toBe(200);
  const run = await call<{ sessionId: string; aiMessages: { callback: Record<string, unknown> }[] }>(
    'POST',
    `/api/v1/webhooks/${dataset.agentId}/production/Start`,
    { body: {} },
  );
  expect(run.status).toBe(200);
  return run.body;
}

const events = async (eventName: string, sessionId: string) =>
  (
    await call<{ data: (DeliveryEvent & { eventName: string })[] }>('POST', '/api/v1/events/agent', {
      body: { agentId: dataset.agentId, filters: { eventName } },
    })
  ).body.data.filter((event) => event.sessionId === sessionId);

it('sends a message again until it is delivered, with the same webhook-id, each attempt signed', async () => {
  const run = await runWithCallback('/flaky');
  expect(run.aiMessages[0].callback).toEqual({ delivered: false, status: 503, retrying: true });
  const deliveries = await pollUntil(
    () => events('ai_message_delivery', run.sessionId),
    (found) => found.some((event) => event.payload.delivered),
  );
  expect(
    deliveries.map((event) => [event.payload.attempt, event.payload.delivered, event.payload.status]).sort(),
  ).toEqual([
    [2, false, 503],
    [3, true, 204],
  ]);
  const attempts = received['/flaky'];
  expect(attempts).toHaveLength(3);
  const ids = attempts.map((attempt) => verifyWebhook(secret, attempt.headers, attempt.body));
  expect(new Set(ids).size).toBe(1);
  expect(deliveries[0].payload.messageId).toBe(ids[0]);
  expect(new Set(attempts.map((attempt) => attempt.body)).size).toBe(1);
  // What was sent is what the schema the SDK's types are generated from says (core/flows/agent-events.ts).
  expect(aiMessageEventSchema.safeParse(JSON.parse(attempts[0].body)).error).toBeUndefined();
  expect(await events('invocation_error', run.sessionId)).toEqual([]);
});

it('gives up after six attempts, recording an invocation_error', async () => {
  const run = await runWithCallback('/down');
  expect(run.aiMessages[0].callback).toEqual({ delivered: false, status: 500, retrying: true });
  const errors = await pollUntil(
    () => events('invocation_error', run.sessionId),
    (found) => found.length > 0,
  );
  expect(errors.map((event) => event.payload)).toEqual([
    {
      code: 'CALLBACK_FAILED',
      message: 'The AI message of Greet was not delivered after 6 attempts (the last answered 500)',
      nodeName: 'Greet',
    },
  ]);
  expect(received['/down']).toHaveLength(6);
  expect((await events('ai_message_delivery', run.sessionId)).map((event) => event.payload.attempt).sort()).toEqual([
    2, 3, 4, 5, 6,
  ]);
});
