/**
 * What no token pays for, limited per client in the local runtime (lib/local/client-limits.ts, docs/rate-limits.md,
 * "Per client"): sign-ups, and requests without a valid credential; and a request's body is read only once its caller
 * is known, so a bad token with a large body costs its headers. In AWS the web ACL's rate rules stand here
 * (test/infra/api-firewall.test.ts).
 */
import { request as httpRequest } from 'node:http';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
type Body = Record<string, unknown>;

beforeAll(async () => {
  service = await startService({
    env: { COGNITO: 'on', SIGNUP_LIMIT_PER_5_MINUTES: '3', FAILED_AUTH_LIMIT_PER_MINUTE: '5' },
  });
});
afterAll(() => service?.stop());

it('lets one client sign up 3 times in five minutes, then answers 429 with Retry-After, making nobody', async () => {
  const api = client(service, null);
  const signUp = (n: number) =>
    api<Body>('POST', '/dashboard/signup', {
      body: { email: `limit-${n}@example.com`, password: 'Limit-pass-1', organizationName: `Limit ${n}` },
    });
  for (const n of [1, 2, 3]) expect((await signUp(n)).status).toBe(201);
  const refused = await signUp(4);
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({ success: false, error: { code: 'RATE_LIMITED' } });
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(300);
  // Nobody was made: the address has no account (its sign-up is refused again, not EMAIL_TAKEN).
  expect((await signUp(4)).status).toBe(429);
});

it('refuses a client that sent 5 requests without a valid credential in a minute, whatever it sends next', async () => {
  // Its own address: another client than the sign-ups above would be, but the local runtime sees one, 127.0.0.1.
  const api = client(service, 'aps_this-token-was-never-issued-0000000000');
  for (let i = 0; i < 5; i++) {
    const refused = await api('GET', '/dashboard/agents');
    expect(refused.status).toBe(401);
    // A request without a body keeps its connection.
    expect(refused.headers.get('connection')).not.toBe('close');
  }
  const refused = await api<Body>('GET', '/dashboard/agents');
  expect(refused.status).toBe(429);
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  // Until the minute ends, a valid token from that client is refused too: the authorizer does not run.
  expect((await client(service)('GET', '/dashboard/agents')).status).toBe(429);
  // What needs no credential is not counted.
  expect((await client(service, null)('GET', '/health')).status).toBe(200);
});

it('answers a bad token before reading its body, and closes the connection rather than read the rest', async () => {
  const url = new URL(`${service.baseUrl}/dashboard/agents`);
  // 10 MiB announced, 64 KiB sent: the answer comes while the body is still far from sent.
  const answer = await new Promise<{ status: number; connection: string | undefined; sent: number }>(
    (resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            authorization: 'Bearer aps_another-token-never-issued-000000000',
            'content-type': 'application/json',
            'content-length': String(10 * 1024 * 1024),
          },
        },
        (response) => {
          response.resume();
          resolve({ status: response.statusCode ?? 0, connection: response.headers.connection, sent });
        },
      );
      let sent = 0;
      req.on('error', (error: NodeJS.ErrnoException) => {
        // The server may close before our write ends: that is the point.
        if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
      });
      req.write(Buffer.alloc(64 * 1024, 0x20));
      sent += 64 * 1024;
    },
  );
  // 401, or 429 when the previous test's count still holds this client: either way before its body.
  expect([401, 429]).toContain(answer.status);
  expect(answer.connection).toBe('close');
  expect(answer.sent).toBeLessThan(10 * 1024 * 1024);
});
