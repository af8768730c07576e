/**
 * How the local runtime shares its origin between the console and the API (lib/local/console.ts): the console's
 * files and /config.json, index.html for a browser's navigation to a console path, and the API's JSON answers for
 * everything else, an unknown path included.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ConsoleConfig, consoleHandler } from '../../lib/local/console';

let dist: string;
const servers: Server[] = [];
let base: string;
const CONFIG: ConsoleConfig = {
  apiUrl: '',
  cognito: { region: 'local', endpoint: 'http://127.0.0.1:1', userPoolId: 'local_x', clientId: 'client' },
  signUp: 'open',
};

/** A server as the runtime's: the console first, then the API (here a JSON 404 that says it is the API). */
async function serve(folder: string): Promise<string> {
  const web = consoleHandler(CONFIG, folder);
  const server = createServer((request, response) => {
    if (web(request, response)) return;
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"api":true}');
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  dist = mkdtempSync(join(tmpdir(), 'aps-console-'));
  mkdirSync(join(dist, 'assets'));
  writeFileSync(join(dist, 'index.html'), '<!doctype html><title>console</title>');
  writeFileSync(join(dist, 'assets/app.js'), 'console.log(1)');
  base = await serve(dist);
});
afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
  rmSync(dist, { recursive: true, force: true });
});

const get = async (path: string, accept = '*/*', at = base) => {
  const response = await fetch(at + path, { headers: { accept } });
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
};

it("serves the console's files and its configuration", async () => {
  expect(await get('/assets/app.js')).toMatchObject({ status: 200, body: 'console.log(1)' });
  const config = await get('/config.json');
  expect({ ...config, body: JSON.parse(config.body) }).toEqual({
    status: 200,
    type: 'application/json',
    body: CONFIG,
  });
});

it("answers a browser's navigation to a console path with index.html, and anything else with the API", async () => {
  expect(await get('/agents', 'text/html,application/xhtml+xml')).toMatchObject({
    status: 200,
    body: expect.stringContaining('<title>console'),
  });
  expect(await get('/agents')).toEqual({ status: 404, type: 'application/json', body: '{"api":true}' });
  expect(await get('/no/such/route', 'application/json')).toMatchObject({ status: 404, body: '{"api":true}' });
  // The API's own prefixes never reach the console, a browser's navigation included.
  expect(await get('/dashboard/agents', 'text/html')).toMatchObject({ body: '{"api":true}' });
  expect(await get('/api/v1/openapi.json', 'text/html')).toMatchObject({ body: '{"api":true}' });
  expect(await get('/health', 'text/html')).toMatchObject({ body: '{"api":true}' });
});

it('leaves every request to the API when the console is not built, but its configuration', async () => {
  const bare = await serve(join(dist, 'missing'));
  expect(await get('/agents', 'text/html', bare)).toMatchObject({ status: 404, body: '{"api":true}' });
  expect(await get('/assets/app.js', '*/*', bare)).toMatchObject({ status: 404, body: '{"api":true}' });
  // /config.json still answers: the console may be served by `npm run dev:web`.
  expect(await get('/config.json', '*/*', bare)).toMatchObject({ status: 200 });
});
