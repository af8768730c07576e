/**
 * Rate limits through HTTP against the local runtime (core/auth/rate-limit.ts; the counters in the runtime's
 * DynamoDB): the RateLimit-* headers on every authenticated answer, 429 RATE_LIMITED with Retry-After past the
 * token's burst, nothing of a refused request done, the organization's limit across its tokens, another
 * organization untouched, and the defaults (100 every 2 s) of a runtime given none.
 */
import { createDataset, type Dataset } from '../helpers/fixtures';
import { client, startService, type TestService } from '../helpers/service';

const DOCS = '/api/v1/knowledge/documents';
/** 1 a second sustained, a burst of 5: a window of 5 s. */
const BURST = 5;
const WINDOW_MS = 5000;

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;

beforeAll(async () => {
  service = await startService({ env: { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: String(BURST) } });
  call = client(service);
  dataset = await createDataset(call);
});
afterAll(() => service?.stop());

/** Waits for the start of the next window (the runtime's clock is this machine's), with room for its first requests. */
async function nextWindow(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, WINDOW_MS - (Date.now() % WINDOW_MS) + 50));
}

const limitHeaders = (headers: Headers) => ({
  limit: headers.get('ratelimit-limit'),
  remaining: headers.get('ratelimit-remaining'),
  policy: headers.get('ratelimit-policy'),
});

it('counts each request of a token: headers on every answer, then 429 with Retry-After, and nothing done', async () => {
  await nextWindow();
  const answers = [];
  for (let i = 0; i < BURST; i++) {
    answers.push(await call('GET', '/dashboard/agents'));
  }
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
  expect(answers.map((a) => limitHeaders(a.headers))).toEqual(
    [4, 3, 2, 1, 0].map((remaining) => ({ limit: '5', remaining: String(remaining), policy: '5;w=5' })),
  );
  const reset = Number(answers[0].headers.get('ratelimit-reset'));
  expect(reset).toBeGreaterThanOrEqual(1);
  expect(reset).toBeLessThanOrEqual(5);

  // Past the burst: a refused upload-link reserves nothing (the same customDocumentId is free afterwards).
  const refused = await call('POST', `${DOCS}/upload-link`, {
    body: { ...dataset, fileName: 'a.txt', customDocumentId: 'limited-1' },
  });
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({
    success: false,
    error: { code: 'RATE_LIMITED', message: expect.stringContaining('at most 5 every 5 s'), details: [] },
  });
  expect(limitHeaders(refused.headers)).toEqual({ limit: '5', remaining: '0', policy: '5;w=5' });
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(5);
  // Invalid input is refused by the limit first, as any other request.
  expect((await call('POST', `${DOCS}/upload-link`, { body: {} })).status).toBe(429);

  // Another organization's token has its own count, and so has its organization.
  const other = client(service, service.tokens[1]);
  expect((await other('GET', '/dashboard/agents')).status).toBe(200);
  // Routes without a token are not counted.
  const health = await call('GET', '/health', { token: null });
  expect(health.status).toBe(200);
  expect(health.headers.get('ratelimit-limit')).toBeNull();

  await nextWindow();
  const again = await call('POST', `${DOCS}/upload-link`, {
    body: { ...dataset, fileName: 'a.txt', customDocumentId: 'limited-1' },
  });
  expect(again.status).toBe(200);
  expect(again.headers.get('ratelimit-remaining')).toBe('4');
});

it("limits the organization across its tokens: a second token finds the organization's window used up", async () => {
  await nextWindow();
  const created = await call<{ token: string }>('POST', '/dashboard/tokens', {
    body: { name: 'second', scopes: ['dashboard'] },
  });
  expect(created.status).toBe(201);
  for (let i = 1; i < BURST; i++) expect((await call('GET', '/dashboard/agents')).status).toBe(200);
  // The first token has made the burst in its organization's window, so it has used up the organization's...
  expect((await call('GET', '/dashboard/agents')).status).toBe(429);
  // ...and the second token is refused as well.
  const second = await call('GET', '/dashboard/agents', { token: created.body.token });
  expect(second.status).toBe(429);
  expect(second.body).toMatchObject({ error: { code: 'RATE_LIMITED' } });
});

describe('a runtime given no limit', () => {
  let defaults: TestService;
  beforeAll(async () => {
    defaults = await startService({ env: { RATE_LIMIT_PER_SECOND: '', RATE_LIMIT_BURST: '' } });
  });
  afterAll(() => defaults?.stop());

  it('takes 100 requests every 2 s (50 a second sustained) of a token', async () => {
    const answer = await client(defaults)('GET', '/dashboard/agents');
    expect(answer.status).toBe(200);
    expect(limitHeaders(answer.headers)).toEqual({ limit: '100', remaining: '99', policy: '100;w=2' });
  });
});
