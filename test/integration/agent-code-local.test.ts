/**
 * The local loop of agent code (issue 37, item 4; docs/agent-code.md, "The local loop"): the local runtime started
 * with AGENT_CODE=examples/desk-agent/local.ts runs that module for the agent code a definition names (a Lambda
 * function, or a URL), as AWS would run the function: the module is built with the calling agent's secrets and
 * verifies every call with them. A
 * webhook run gets the customer's tier from the module's trigger handler before default retrieval, its AI message is
 * posted by the module to the chat, and the trace shows the call.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDataset, type Dataset } from '../helpers/fixtures';
import { greetDefinition } from '../helpers/flow-definitions';
import { client, startService, type TestService } from '../helpers/service';

jest.setTimeout(120_000);

const FUNCTION_ARN = 'arn:aws:lambda:eu-west-1:111122223333:function:desk-agent';

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;
let chatServer: Server;
const chat: { text: string }[] = [];

beforeAll(async () => {
  chatServer = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      chat.push(JSON.parse(Buffer.concat(parts).toString('utf8')) as { text: string });
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((done) => chatServer.listen(0, '127.0.0.1', done));
  service = await startService({
    env: {
      AGENT_CODE: 'examples/desk-agent/local.ts',
      CHAT_WEBHOOK_URL: `http://127.0.0.1:${(chatServer.address() as AddressInfo).port}/chat`,
    },
  });
  call = client(service);
  dataset = await createDataset(call, 'production');
});

afterAll(async () => {
  await service?.stop();
  chatServer?.closeAllConnections();
  await new Promise((done) => chatServer?.close(done));
});

const useDefinition = async (agentCode: Record<string, unknown>) => {
  const put = await call('PUT', `/dashboard/agents/${dataset.agentId}/definition/production`, {
    body: greetDefinition('Hello {memory.customerId}, {memory.tier}.', { agentCode }),
  });
  expect(put.status).toBe(200);
};

it('runs the module for the function the definition names, verified with the agent’s own secret', async () => {
  await useDefinition({ functionArn: FUNCTION_ARN });
  const run = await call<{
    status: string;
    sessionId: string;
    aiMessages: { content: string; callback?: { delivered: boolean; status?: number } }[];
  }>('POST', `/api/v1/webhooks/${dataset.agentId}/production/Start`, { body: { customerId: 'cust-2' } });
  expect(run.body).toMatchObject({ status: 'completed' });
  expect(run.body.aiMessages.map((m) => [m.content, m.callback])).toEqual([
    ['Hello cust-2, tier:silver.', { delivered: true, status: 204 }],
  ]);
  expect(chat).toEqual([{ text: 'Hello cust-2, tier:silver.' }]);

  const trace = await call<{ steps: { kind: string; status: string; output: unknown }[] }>(
    'GET',
    `/dashboard/agents/${dataset.agentId}/sessions/production/${run.body.sessionId}/trace`,
  );
  expect(trace.body.steps[0]).toMatchObject({
    kind: 'agentCode',
    status: 'succeeded',
    output: { memory: { customerId: 'cust-2', tier: 'tier:silver' } },
  });

  // After a rotation the module is built with the secrets in force (the new one, and the previous for 24 h): the
  // calls still verify.
  expect((await call('POST', `/dashboard/agents/${dataset.agentId}/callback-secret`, { body: {} })).status).toBe(201);
  const again = await call<{ aiMessages: { content: string; callback?: { delivered: boolean } }[] }>(
    'POST',
    `/api/v1/webhooks/${dataset.agentId}/production/Start`,
    { body: { customerId: 'cust-1' } },
  );
  expect(again.body.aiMessages.map((m) => [m.content, m.callback?.delivered])).toEqual([
    ['Hello cust-1, tier:gold.', true],
  ]);
});

it('runs the module for an agentCode url too: the definition need not change to iterate locally', async () => {
  await useDefinition({ url: 'https://desk.example.com/agent' });
  const run = await call<{ aiMessages: { content: string; callback?: { delivered: boolean } }[] }>(
    'POST',
    `/api/v1/webhooks/${dataset.agentId}/production/Start`,
    { body: { customerId: 'cust-1' } },
  );
  expect(run.body.aiMessages.map((m) => [m.content, m.callback?.delivered])).toEqual([
    ['Hello cust-1, tier:gold.', true],
  ]);
});
