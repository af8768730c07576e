/**
 * A tool that takes its time (docs/flows.md, "Tools", `timeoutSeconds`), on the local runtime (`bin/local.ts` as a
 * child process, the default FLOW_SYNC_BUDGET_MS of 20 s) with its own flow runner: a webhook whose next node calls a
 * tool that answers after 40 s (declared `timeoutSeconds: 60`) is answered 202 `running` at once, well inside API
 * Gateway's 29 s, the runner calls the tool once and the run completes with its answer. The same tool without
 * `timeoutSeconds` gets the default 10 s and fails the run with OUTBOUND_FAILED.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

jest.setTimeout(150_000);

const TOOL_ANSWERS_AFTER_MS = 40_000;

let toolServer: Server;
let toolUrl: string;
let service: TestService;
let call: ReturnType<typeof client>;
const calls = new Map<string, number>();

beforeAll(async () => {
  toolServer = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('end', () => {
      const path = request.url ?? '/';
      calls.set(path, (calls.get(path) ?? 0) + 1);
      setTimeout(() => {
        if (!response.destroyed) {
          response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ report: 'ready' }));
        }
      }, TOOL_ANSWERS_AFTER_MS);
    });
  });
  await new Promise<void>((done) => toolServer.listen(0, '127.0.0.1', done));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
  service = await startService({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true' } });
  call = client(service);
});

afterAll(async () => {
  await service?.stop();
  toolServer?.closeAllConnections();
  await new Promise<void>((done) => toolServer?.close(() => done()));
});

interface Session {
  sessionId: string;
  status: string;
  outputs: Record<string, unknown>;
  error: { code: string; message: string } | null;
}

async function agentWith(tool: Record<string, unknown>): Promise<string> {
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Reports' } });
  const stored = await call('PUT', `/dashboard/agents/${agent.body.agentId}/definition/production`, {
    body: {
      tools: [{ name: 'report', url: `${toolUrl}/report`, ...tool }],
      flows: [
        {
          name: 'reports',
          nodes: [
            { name: 'Start', type: 'trigger', triggerType: 'webhook' },
            { name: 'Report', type: 'tool', toolName: 'report' },
          ],
          edges: [{ from: 'Start', to: 'Report', type: 'stepForward' }],
        },
      ],
    },
  });
  expect(stored.status).toBe(200);
  return agent.body.agentId;
}

const sessionOf = (agentId: string, sessionId: string) =>
  call<Session>('GET', `/dashboard/agents/${agentId}/sessions/production/${sessionId}`);

it('a node whose tool answers after 40 s is answered 202 running at once and completes in the runner, the tool called once', async () => {
  calls.clear();
  const agentId = await agentWith({ timeoutSeconds: 60 });
  const started = Date.now();
  const answered = await call<Session>('POST', `/api/v1/webhooks/${agentId}/production/Start`, { body: {} });
  const answeredInMs = Date.now() - started;
  expect(answered.status).toBe(202);
  expect(answered.body.status).toBe('running');
  expect(answeredInMs).toBeLessThan(29_000);

  const ended = await pollUntil(
    () => sessionOf(agentId, answered.body.sessionId),
    (r) => r.body.status !== 'running',
    TOOL_ANSWERS_AFTER_MS + 60_000,
  );
  expect(ended.body).toMatchObject({ status: 'completed', error: null, outputs: { Report: { report: 'ready' } } });
  expect(Object.fromEntries(calls)).toEqual({ '/report': 1 });
  process.stderr.write(
    `[slow-tool] 202 in ${answeredInMs} ms; completed in the runner after ${Date.now() - started} ms, tool called once\n`,
  );
});

it('the same tool without timeoutSeconds gets 10 s and fails the run with OUTBOUND_FAILED', async () => {
  calls.clear();
  const agentId = await agentWith({});
  const answered = await call<Session>('POST', `/api/v1/webhooks/${agentId}/production/Start`, { body: {} });
  // 10 s fits in the request: it runs there and fails there.
  expect(answered.status).toBe(200);
  expect(answered.body).toMatchObject({ status: 'failed', error: { code: 'OUTBOUND_FAILED' } });
  expect(answered.body.error?.message).toContain('timed out after 10000 ms');
});
