/**
 * How the local runtime shares its origin between the console and the API (lib/local/console.ts): the console's
 * files and /config.json, index.html for a browser's navigation to a console path, and the API's JSON answers for
 * everything else, an unknown path included. Every answer of the console carries its security headers (the CSP
 * naming this runtime's Cognito and S3 endpoint, no framing, nosniff; no HSTS on http); the API's do not get them
 * from the console.
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
/** The local S3 endpoint upload URLs point at. */
const UPLOADS = 'http://127.0.0.1:2';

/** A server as the runtime's: the console first, then the API (here a JSON 404 that says it is the API). */
async function serve(folder: string): Promise<string> {
  const web = consoleHandler(CONFIG, { dist: folder, uploads: UPLOADS });
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

const SECURITY_HEADERS = [
  'content-security-policy',
  'x-frame-options',
  'x-content-type-options',
  'referrer-policy',
  'strict-transport-security',
];

/** The security headers of an answer, by name (null: absent). */
async function securityHeaders(path: string, headers: Record<string, string> = {}, at = base) {
  const response = await fetch(at + path, { headers: { accept: '*/*', ...headers } });
  await response.arrayBuffer();
  const found: Record<string, string | number | null> = { status: response.status };
  for (const name of SECURITY_HEADERS) found[name] = response.headers.get(name);
  return found;
}

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

it("sends the console's security headers with every answer of the console, and leaves the API's alone", async () => {
  const expected = {
    'content-security-policy':
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
      "connect-src 'self' http://127.0.0.1:1 http://127.0.0.1:2; font-src 'self'; object-src 'none'; " +
      "base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'strict-origin-when-cross-origin',
    // http: never HSTS.
    'strict-transport-security': null,
  };
  const html = { accept: 'text/html,application/xhtml+xml' };
  // index.html, an SPA route, an asset, /config.json (GET and HEAD).
  expect(await securityHeaders('/', html)).toEqual({ status: 200, ...expected });
  expect(await securityHeaders('/index.html')).toEqual({ status: 200, ...expected });
  expect(await securityHeaders('/agents/a1/knowledge', html)).toEqual({ status: 200, ...expected });
  expect(await securityHeaders('/assets/app.js')).toEqual({ status: 200, ...expected });
  expect(await securityHeaders('/config.json')).toEqual({ status: 200, ...expected });
  const head = await fetch(`${base}/config.json`, { method: 'HEAD' });
  expect([head.status, head.headers.get('x-frame-options')]).toEqual([200, 'DENY']);
  // A revalidated asset (sirv's 304) and the console's own 404 (a navigation to a missing file).
  const etag = (await fetch(`${base}/assets/app.js`)).headers.get('etag') ?? '';
  expect(etag).not.toBe('');
  expect(await securityHeaders('/assets/app.js', { 'if-none-match': etag })).toEqual({ status: 304, ...expected });
  expect(await securityHeaders('/assets/missing.png', html)).toEqual({ status: 404, ...expected });

  // What goes on to the API gets none of them from the console.
  const none = Object.fromEntries(SECURITY_HEADERS.map((name) => [name, null]));
  expect(await securityHeaders('/agents')).toEqual({ status: 404, ...none });
  expect(await securityHeaders('/assets/missing.js')).toEqual({ status: 404, ...none });
  expect(await securityHeaders('/dashboard/agents', html)).toEqual({ status: 404, ...none });
});

it('names no Cognito or S3 endpoint the runtime does not have; /config.json keeps its headers without a build', async () => {
  const bare = async (config: ConsoleConfig, uploads?: string) => {
    const web = consoleHandler(config, { dist: join(dist, 'missing'), ...(uploads ? { uploads } : {}) });
    const server = createServer((request, response) => {
      if (!web(request, response)) response.writeHead(404).end();
    });
    servers.push(server);
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  // COGNITO=off: no Cognito endpoint to name.
  const at = await bare({ ...CONFIG, cognito: null }, UPLOADS);
  const headers = await securityHeaders('/config.json', {}, at);
  expect(headers['content-security-policy']).toContain("connect-src 'self' http://127.0.0.1:2;");
  expect(headers['x-frame-options']).toBe('DENY');
  const alone = await securityHeaders('/config.json', {}, await bare({ ...CONFIG, cognito: null }));
  expect(alone['content-security-policy']).toContain("connect-src 'self';");
});
