/**
 * The local router's CORS (lib/local/router.ts): its preflight answer and its own answers (404, 405, 413, 401) under
 * each policy of CORS_ALLOWED_ORIGINS. What the handlers answer is test/integration/cors.test.ts's, from a browser.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { type CorsPolicy, corsAllowMethods, parseCorsAllowedOrigins } from '#shared/cors';
import { createRouter } from '../../../lib/local/router';
import { ROUTES } from '../../../lib/routes';

const ROOT = resolve(__dirname, '..', '..', '..');
const CONSOLE = 'https://console.example.com';
const OTHER = 'https://elsewhere.example.net';

const servers: Server[] = [];
beforeAll(() => {
  // The authorizer builds its token store before it finds no token to look up (the 401 here).
  process.env.TOKENS_TABLE ??= 'tokens';
});
afterAll(() => Promise.all(servers.map((server) => new Promise((done) => server.close(done)))));

async function routerWith(cors: CorsPolicy): Promise<string> {
  const router = createRouter(ROOT, ROUTES, { cors });
  const server = createServer((request, response) => void router.handle(request, response));
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const preflight = (base: string, path: string, origin: string) =>
  fetch(`${base}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
  });

/** The router's own answers, each from `origin`: unknown path, wrong method, too large, no token. */
async function ownAnswers(base: string, origin: string): Promise<Response[]> {
  return Promise.all([
    fetch(`${base}/api/v1/nothing-here`, { headers: { origin } }),
    fetch(`${base}/health`, { method: 'POST', headers: { origin } }),
    // Over the body a route that takes no credential reads (sign-up's 4 KiB): a body is read only once the caller is
    // known, so a route with a token would answer 401 before it.
    fetch(`${base}/dashboard/signup`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json' },
      body: Buffer.alloc(4097, 0x20),
    }),
    fetch(`${base}/dashboard/agents`, { headers: { origin } }),
  ]);
}

const cors = (response: Response) => ({
  status: response.status,
  allowOrigin: response.headers.get('access-control-allow-origin'),
  expose: response.headers.get('access-control-expose-headers'),
  vary: response.headers.get('vary'),
});

describe('with CORS_ALLOWED_ORIGINS unset (same origin only)', () => {
  it('has no preflight: OPTIONS is a method like any other the route lacks', async () => {
    const base = await routerWith(parseCorsAllowedOrigins(undefined));
    const answer = await preflight(base, '/dashboard/agents', CONSOLE);
    expect(answer.status).toBe(405);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('METHOD_NOT_ALLOWED');
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('sends no CORS header with its own answers', async () => {
    const base = await routerWith(parseCorsAllowedOrigins(''));
    for (const answer of await ownAnswers(base, CONSOLE)) {
      expect(cors(answer)).toMatchObject({ allowOrigin: null, expose: null, vary: null });
    }
  });
});

describe('with a list of origins', () => {
  let base: string;
  beforeAll(async () => {
    base = await routerWith(parseCorsAllowedOrigins(`${CONSOLE}, http://127.0.0.1:5173`));
  });

  it('answers a listed origin’s preflight with the methods of the route table, the request headers and a max age', async () => {
    const answer = await preflight(base, '/dashboard/agents/a-1/knowledge/bases', CONSOLE);
    expect(answer.status).toBe(204);
    expect(Object.fromEntries(answer.headers)).toMatchObject({
      'access-control-allow-origin': CONSOLE,
      'access-control-allow-methods': corsAllowMethods(ROUTES).join(','),
      'access-control-allow-headers': 'Authorization,Content-Type,X-Organization-Id',
      'access-control-max-age': '600',
      vary: 'Origin',
    });
    expect(corsAllowMethods(ROUTES)).toEqual(expect.arrayContaining(['DELETE', 'GET', 'PATCH', 'POST']));
  });

  it('gives another origin’s preflight no Allow-Origin, so the browser goes no further', async () => {
    const answer = await preflight(base, '/dashboard/agents', OTHER);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    expect(answer.headers.get('access-control-allow-methods')).toBeNull();
  });

  it('answers a preflight for a path it does not know 404, as any request there', async () => {
    const answer = await preflight(base, '/api/v1/nothing-here', CONSOLE);
    expect(cors(answer)).toMatchObject({ status: 404, allowOrigin: CONSOLE });
  });

  it('lets a listed origin read its own 404, 405, 413 and 401 (and Retry-After, were there one)', async () => {
    const answers = (await ownAnswers(base, CONSOLE)).map(cors);
    expect(answers.map((a) => a.status)).toEqual([404, 405, 413, 401]);
    for (const answer of answers) {
      expect(answer).toMatchObject({
        allowOrigin: CONSOLE,
        expose: 'Retry-After,RateLimit-Limit,RateLimit-Remaining,RateLimit-Reset,RateLimit-Policy',
        vary: 'Origin',
      });
    }
  });

  it('lets no other origin read them', async () => {
    for (const answer of (await ownAnswers(base, OTHER)).map(cors)) {
      expect(answer).toMatchObject({ allowOrigin: null, expose: null, vary: 'Origin' });
    }
  });
});

describe('with *', () => {
  it('allows every origin, without credentials', async () => {
    const base = await routerWith(parseCorsAllowedOrigins('*'));
    const answer = await preflight(base, '/dashboard/agents', OTHER);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    expect(answer.headers.get('access-control-allow-credentials')).toBeNull();
    for (const own of (await ownAnswers(base, OTHER)).map(cors)) {
      expect(own).toMatchObject({
        allowOrigin: '*',
        expose: 'Retry-After,RateLimit-Limit,RateLimit-Remaining,RateLimit-Reset,RateLimit-Policy',
        vary: null,
      });
    }
  });
});

describe('CORS_ALLOWED_ORIGINS', () => {
  it.each([
    ['', { kind: 'same-origin' }],
    [' , ', { kind: 'same-origin' }],
    ['*', { kind: 'any' }],
    [
      'https://Console.Example.com/, http://127.0.0.1:8080,https://console.example.com:443',
      { kind: 'listed', origins: ['https://console.example.com', 'http://127.0.0.1:8080'] },
    ],
  ])('reads %j', (raw, policy) => {
    expect(parseCorsAllowedOrigins(raw)).toEqual(policy);
  });

  it.each([
    ['*,https://a.example', /either \* alone or a list/],
    ['https://*.example.com', /wildcard/],
    ['https://a.example/console', /more than an origin/],
    ['https://a.example?x=1', /more than an origin/],
    ['https://user:pw@a.example', /more than an origin/],
    ['null', /not an origin/],
    ['a.example', /not an origin/],
    ['ftp://a.example', /not an http\(s\) origin/],
  ])('refuses %j, naming the variable and the entry', (raw, message) => {
    expect(() => parseCorsAllowedOrigins(raw)).toThrow(message);
    expect(() => parseCorsAllowedOrigins(raw)).toThrow('CORS_ALLOWED_ORIGINS');
  });

  it('stops the local router from being made with a bad value', () => {
    const saved = process.env.CORS_ALLOWED_ORIGINS;
    process.env.CORS_ALLOWED_ORIGINS = 'https://a.example/path';
    try {
      expect(() => createRouter(ROOT)).toThrow(/CORS_ALLOWED_ORIGINS entry "https:\/\/a.example\/path"/);
    } finally {
      if (saved === undefined) delete process.env.CORS_ALLOWED_ORIGINS;
      else process.env.CORS_ALLOWED_ORIGINS = saved;
    }
  });
});
