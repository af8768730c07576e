/**
 * A long flow end to end through the flow runner's queue (docs/flows.md, "Long runs"): a webhook starts a flow of
 * HTTP tool nodes that each take a while (a loopback tool server sleeps), the request runs what fits in its budget and
 * answers 202, and the runtime's flow runner goes on with the rest; the test polls GET …/sessions/… until the run
 * ends and prints how long it took against the time its tools took.
 *
 * Small in `npm test` (4 tools of 1 s, FLOW_SYNC_BUDGET_MS=1000); PROOF_SIZE=full (`npm run test:proof`) runs the
 * issue's 60 s flow: 12 tools of 5 s with the default 20 s budget, so 4 run in the request and 8 in the runner.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';
import { FULL_SIZE, printFigures, proofSize } from './size';

const SIZE = proofSize({ tools: 4, toolMs: 1_000, budgetMs: 1_000 }, { tools: 12, toolMs: 5_000, budgetMs: 20_000 });
const FLOW_MS = SIZE.tools * SIZE.toolMs;

jest.setTimeout(FLOW_MS + 120_000);

let service: TestService;
let toolServer: Server;
let toolUrl: string;
const calls = new Map<string, number>();

beforeAll(async () => {
  toolServer = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const path = request.url ?? '/';
      calls.set(path, (calls.get(path) ?? 0) + 1);
      setTimeout(() => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path }));
      }, SIZE.toolMs);
    });
  });
  await new Promise<void>((done) => toolServer.listen(0, '127.0.0.1', done));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
  service = await startService({
    env: {
      OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true',
      ...(FULL_SIZE ? {} : { FLOW_SYNC_BUDGET_MS: String(SIZE.budgetMs) }),
    },
  });
});

afterAll(async () => {
  await service?.stop();
  toolServer?.closeAllConnections();
  await new Promise<void>((done) => toolServer?.close(() => done()));
});

it(`runs a flow of ${FLOW_MS / 1000} s to its end through the flow runner's queue, each tool once`, async () => {
  const call = client(service);
  const names = Array.from({ length: SIZE.tools }, (_, i) => `Step${i + 1}`);
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Long flow' } });
  const agentId = agent.body.agentId;
  const stored = await call('PUT', `/dashboard/agents/${agentId}/definition/production`, {
    body: {
      tools: names.map((name) => ({ name: name.toLowerCase(), url: `${toolUrl}/${name.toLowerCase()}` })),
      flows: [
        {
          name: 'long',
          nodes: [
            { name: 'Start', type: 'trigger', triggerType: 'webhook' },
            ...names.map((name) => ({ name, type: 'tool', toolName: name.toLowerCase() })),
          ],
          edges: ['Start', ...names]
            .slice(1)
            .map((to, i) => ({ from: i === 0 ? 'Start' : names[i - 1], to, type: 'stepForward' })),
        },
      ],
    },
  });
  expect(stored.status).toBe(200);

  const started = Date.now();
  const answer = await call<{ sessionId: string; status: string }>(
    'POST',
    `/api/v1/webhooks/${agentId}/production/Start`,
    { body: {} },
  );
  const answeredMs = Date.now() - started;
  expect(answer.status).toBe(202);
  expect(answer.body.status).toBe('running');

  const path = `/dashboard/agents/${agentId}/sessions/production/${answer.body.sessionId}`;
  const ended = await pollUntil(
    () => call<{ status: string; run: { steps: { node: string }[]; takeovers: number } }>('GET', path),
    (r) => r.body.status !== 'running',
    FLOW_MS + 60_000,
  );
  const endedMs = Date.now() - started;
  expect(ended.body.status).toBe('completed');
  expect(ended.body.run.steps.map((s) => s.node)).toEqual(['Start', ...names]);
  expect(ended.body.run.takeovers).toBe(1);
  expect([...calls.values()]).toEqual(names.map(() => 1));

  const inRequest = Math.ceil(SIZE.budgetMs / SIZE.toolMs);
  printFigures('flow-runs', [
    `a flow of ${SIZE.tools} tools × ${SIZE.toolMs / 1000} s (${FLOW_MS / 1000} s of tool time), budget ${SIZE.budgetMs / 1000} s: ${inRequest} tools in the request, ${SIZE.tools - inRequest} in the flow runner`,
    `202 after ${(answeredMs / 1000).toFixed(2)} s; completed (seen by polling every 150 ms) after ${(endedMs / 1000).toFixed(2)} s end to end: ${((endedMs - FLOW_MS) / 1000).toFixed(2)} s more than its tools took`,
  ]);
});
