/**
 * Agent code deployed as a Lambda function (adapters/agent-code/lambda-functions.ts) through the SDK's Lambda client
 * and the stack-check's Invoke endpoint (lib/stack-check/triggers.ts), which hands a registered function's event to
 * a server of this test: the event is a function URL event carrying the exact headers and body; a `{ statusCode,
 * body }` result is the answer, any other JSON a 200; a crash, an unknown function and a slow one are failures the
 * run can tell apart (a timeout says so).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { LambdaAgentCodeFunctions } from '#adapters/agent-code/lambda-functions';
import { serveLambdaInvoke } from '../../../../lib/stack-check/triggers';

const ARN = 'arn:aws:lambda:eu-west-1:111122223333:function:desk-agent';

let lambda: Server;
let code: Server;
let functions: LambdaAgentCodeFunctions;
let answer: (event: Record<string, unknown>) => Promise<{ status: number; body: unknown }>;
const events: Record<string, unknown>[] = [];

const listening = async (server: Server) => {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  code = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', async () => {
      const event = JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>;
      events.push(event);
      const { status, body } = await answer(event);
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    });
  });
  lambda = serveLambdaInvoke(() => undefined, { [ARN]: `${await listening(code)}/invoke` });
  const client = new LambdaClient({
    region: 'eu-west-1',
    endpoint: await listening(lambda),
    credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' },
    maxAttempts: 1,
  });
  functions = new LambdaAgentCodeFunctions(client);
});

afterAll(async () => {
  await new Promise((done) => lambda.close(done));
  await new Promise((done) => code.close(done));
});

const invoke = (functionArn = ARN, timeoutMs = 5_000) =>
  functions.invoke({
    organizationId: 'org-a',
    agentId: 'agent-a',
    functionArn,
    headers: { 'content-type': 'application/json', 'webhook-id': 'trg_1', 'webhook-signature': 'v1,abc' },
    body: '{"event":"TRIGGER_EVENT","memory":{}}',
    timeoutMs,
  });

test('the function gets a function URL event with the exact headers and body; its { statusCode, body } is the answer', async () => {
  answer = async () => ({ status: 200, body: { statusCode: 200, body: '{"memory":{"tier":"tier:gold"}}' } });
  await expect(invoke()).resolves.toEqual({ status: 200, body: { memory: { tier: 'tier:gold' } } });
  expect(events.at(-1)).toMatchObject({
    version: '2.0',
    requestContext: { http: { method: 'POST' } },
    headers: { 'webhook-id': 'trg_1', 'webhook-signature': 'v1,abc' },
    body: '{"event":"TRIGGER_EVENT","memory":{}}',
    isBase64Encoded: false,
  });
  answer = async () => ({ status: 200, body: { statusCode: 401, body: '{"error":"no signature verifies"}' } });
  await expect(invoke()).resolves.toEqual({ status: 401, body: { error: 'no signature verifies' } });
});

test('any other JSON result is a 200 with that body, as a function URL reads it', async () => {
  answer = async () => ({ status: 200, body: { stop: true } });
  await expect(invoke()).resolves.toEqual({ status: 200, body: { stop: true } });
});

test('a crash, an unknown function and a slow one fail with OUTBOUND_FAILED, the slow one as timed out', async () => {
  answer = async () => ({ status: 500, body: {} });
  await expect(invoke()).rejects.toMatchObject({
    code: 'OUTBOUND_FAILED',
    message: 'The agent code function failed (Unhandled)',
  });
  await expect(invoke(`${ARN}-gone`)).rejects.toMatchObject({
    code: 'OUTBOUND_FAILED',
    message: 'The agent code function could not be invoked (HTTP 404 ResourceNotFoundException)',
  });
  answer = () => new Promise((done) => setTimeout(() => done({ status: 200, body: {} }), 1_000));
  await expect(invoke(ARN, 100)).rejects.toMatchObject({
    code: 'OUTBOUND_FAILED',
    message: 'The agent code function timed out after 100 ms',
  });
});
