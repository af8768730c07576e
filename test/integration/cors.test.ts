/**
 * CORS from a real browser: Chromium (the packaged one browserTask nodes use) opens a page served on one loopback
 * port, and the page's own script calls the local runtime's API on another port with a bearer token, as a console
 * on another origin would. The runtime is started with CORS_ALLOWED_ORIGINS naming one page's origin: that page reads
 * the answers (the handlers', the router's own, and S3's to its upload PUT); the page of another origin gets the
 * TypeError a browser gives a script it will not let read an answer. Needs the local runtime itself (its environment
 * is set here), so the LocalStack run leaves it out.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM_FLAGS, packagedChromium } from '#adapters/browser/playwright-driver';
import { createDataset, type Dataset, type UploadLink } from '../helpers/fixtures';
import { client, startService, type TestService } from '../helpers/service';

/** The page's script: one fetch, and what the page could read of its answer (or the error the browser gave it). */
const PAGE = `<!doctype html><meta charset="utf-8"><title>console</title><script>
window.callApi = async (url, init) => {
  try {
    const response = await fetch(url, init);
    return { status: response.status, text: await response.text() };
  } catch (error) {
    return { blocked: error.name, message: error.message };
  }
};
</script>`;

interface PageResult {
  readonly status?: number;
  readonly text?: string;
  readonly blocked?: string;
  readonly message?: string;
}

async function pageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let service: TestService;
let browser: Browser;
const pageServers: Server[] = [];
let allowed: Page;
let other: Page;
let dataset: Dataset;
let token: string;

beforeAll(async () => {
  const [allowedServer, otherServer] = await Promise.all([pageServer(), pageServer()]);
  pageServers.push(allowedServer.server, otherServer.server);
  service = await startService({ env: { CORS_ALLOWED_ORIGINS: allowedServer.origin } });
  token = service.tokens[0];
  dataset = await createDataset(client(service));
  browser = await chromium.launch({ executablePath: await packagedChromium(), args: CHROMIUM_FLAGS });
  allowed = await browser.newPage();
  await allowed.goto(allowedServer.origin);
  other = await browser.newPage();
  await other.goto(otherServer.origin);
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await Promise.all(pageServers.map((server) => new Promise((done) => server.close(done))));
});

/** What the page's script passes to fetch. */
interface PageInit {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

/** `fetch(url, init)` run by the page's own script (window.callApi), in the page's origin. */
function fetchFrom(page: Page, url: string, init: PageInit = {}): Promise<PageResult> {
  return page.evaluate(
    (args) =>
      (globalThis as unknown as { callApi(url: string, init: PageInit): Promise<PageResult> }).callApi(
        args.url,
        args.init,
      ),
    { url, init },
  );
}

const json = (result: PageResult) => JSON.parse(result.text ?? 'null') as Record<string, unknown>;
const bearer = (extra: Record<string, string> = {}) => ({ Authorization: `Bearer ${token}`, ...extra });
const api = (path: string) => `${service.baseUrl}${path}`;

describe('a page of an allowed origin', () => {
  it('reads a handler’s answer to a request with a bearer token (preflight, then the answer)', async () => {
    const result = await fetchFrom(allowed, api('/dashboard/agents'), { headers: bearer() });
    expect(result.blocked).toBeUndefined();
    expect(result.status).toBe(200);
    expect(json(result)).toMatchObject({ success: true });
    expect((json(result).data as { agentId: string }[]).map((agent) => agent.agentId)).toContain(dataset.agentId);
  });

  it('creates with a JSON body and reads a handler’s 400, naming the field', async () => {
    const created = await fetchFrom(allowed, api('/dashboard/agents'), {
      method: 'POST',
      headers: bearer({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ displayName: 'From the console' }),
    });
    expect(created.status).toBe(201);
    expect(json(created)).toMatchObject({ success: true, agentId: expect.any(String) });

    const refused = await fetchFrom(allowed, api('/dashboard/agents'), {
      method: 'POST',
      headers: bearer({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ displayName: 'x', colour: 'blue' }),
    });
    expect(refused.status).toBe(400);
    expect(json(refused)).toMatchObject({
      success: false,
      error: { code: 'VALIDATION_ERROR', details: [expect.objectContaining({ field: 'colour' })] },
    });
  });

  it('reads the router’s own answers: 401 without a token, 404 for an unknown path', async () => {
    const unauthorized = await fetchFrom(allowed, api('/dashboard/agents'));
    expect(unauthorized.status).toBe(401);
    expect(json(unauthorized)).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
    const missing = await fetchFrom(allowed, api('/api/v1/nothing-here'));
    expect(missing.status).toBe(404);
    expect(json(missing)).toMatchObject({ error: { code: 'ROUTE_NOT_FOUND' } });
  });

  it('uploads a file: upload-link, the PUT to the local S3 endpoint (a third origin), upload-complete', async () => {
    const link = await fetchFrom(allowed, api('/api/v1/knowledge/documents/upload-link'), {
      method: 'POST',
      headers: bearer({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ ...dataset, fileName: 'from-the-browser.txt' }),
    });
    expect(link.status).toBe(200);
    const { uploadUrl, requiredHeaders, uploadId } = json(link) as unknown as UploadLink;
    const put = await fetchFrom(allowed, uploadUrl, {
      method: 'PUT',
      headers: requiredHeaders,
      body: 'Uploaded by a page.',
    });
    expect(put).toMatchObject({ status: 200 });
    const complete = await fetchFrom(allowed, api('/api/v1/knowledge/documents/upload-complete'), {
      method: 'POST',
      headers: bearer({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ uploadId }),
    });
    expect(complete.status).toBe(200);
    expect(json(complete)).toMatchObject({ success: true, status: 'uploaded' });
  });
});

describe('a page of another origin', () => {
  // Each time the allowed page sends the same request at once: only the page's origin differs.
  it('cannot read an answer to a request with a bearer token: the preflight names no origin for it', async () => {
    const result = await fetchFrom(other, api('/dashboard/agents'), { headers: bearer() });
    expect(result).toMatchObject({ blocked: 'TypeError' });
    expect(result.status).toBeUndefined();
    expect(await fetchFrom(allowed, api('/dashboard/agents'), { headers: bearer() })).toMatchObject({ status: 200 });
  });

  it('cannot read even the router’s 401 to a request that needs no preflight', async () => {
    expect(await fetchFrom(other, api('/dashboard/agents'))).toMatchObject({ blocked: 'TypeError' });
    expect(await fetchFrom(allowed, api('/dashboard/agents'))).toMatchObject({ status: 401 });
  });

  it('can PUT to an upload URL it holds: the URL’s signature, not the origin, authorizes that', async () => {
    const link = await client(service)<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
      body: { ...dataset, fileName: 'handed-over.txt' },
    });
    const put = await fetchFrom(other, link.body.uploadUrl, {
      method: 'PUT',
      headers: link.body.requiredHeaders,
      body: 'x',
    });
    expect(put).toMatchObject({ status: 200 });
  });
});

describe('the local S3 endpoint’s preflight, as S3 answers it for the bucket’s rule', () => {
  it('allows PUT from any origin with any headers, and nothing else', async () => {
    const link = await client(service)<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
      body: { ...dataset, fileName: 'preflight.txt' },
    });
    const preflight = (headers: Record<string, string>) => fetch(link.body.uploadUrl, { method: 'OPTIONS', headers });
    const put = await preflight({
      origin: 'https://anywhere.example',
      'access-control-request-method': 'PUT',
      'access-control-request-headers': 'content-type,if-none-match,x-amz-tagging',
    });
    expect(put.status).toBe(200);
    expect(Object.fromEntries(put.headers)).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'PUT',
      'access-control-allow-headers': 'content-type, if-none-match, x-amz-tagging',
      'access-control-max-age': '3000',
    });
    const get = await preflight({ origin: 'https://anywhere.example', 'access-control-request-method': 'GET' });
    expect(get.status).toBe(403);
    expect(await get.text()).toContain('<Code>AccessForbidden</Code>');
    const noOrigin = await preflight({ 'access-control-request-method': 'PUT' });
    expect(noOrigin.status).toBe(400);
  });
});
