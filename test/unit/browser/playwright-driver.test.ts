/**
 * PlaywrightBrowserDriver with the real Chromium (/usr/bin/chromium or CHROMIUM_PATH) against a real HTTP server on
 * 127.0.0.1 that records every request it receives. Guard decisions are real: loopback is let through by
 * allowPrivateNetwork or allowedKinds, and the names the pages use resolve through an injected lookup that the guard
 * proxy also connects with: only the guard can resolve `allowed.test` (to loopback), so reaching it proves the request
 * went through the proxy; Chromium would resolve `blocked.localhost` (private for the guard) to loopback by itself,
 * so the server would see any request to it that got past the guard.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  browserDriverFromEnv,
  firstHttpUrl,
  MAX_PAGE_TEXT_CHARS,
  PlaywrightBrowserDriver,
} from '../../../lambdas/adapters/browser/playwright-driver';
import type { HostLookup } from '../../../lambdas/adapters/network/url-guard';
import { type BrowserTaskRequest, OutboundError } from '../../../lambdas/ports/flows';

interface Recorded {
  readonly host: string | undefined;
  readonly path: string;
  readonly upgrade: boolean;
}

let server: Server;
let port: number;
let base: string;
let recorded: Recorded[];
let socketOpened: () => void;
let socketSeen: Promise<void>;

const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const html = (response: ServerResponse, body: string) =>
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);

function answer(request: IncomingMessage, response: ServerResponse) {
  const url = new URL(request.url ?? '/', base);
  switch (url.pathname) {
    case '/page':
      return html(
        response,
        `<html><head><title>Opening hours</title></head><body>
           <h1>City   library</h1>
           <p>Open\n\n 9 to 17</p>
           <p style="display:none">hidden staff note</p>
           <script>document.body.append('Rendered by script')</script>
         </body></html>`,
      );
    case '/long':
      return html(response, `<title>Long</title><body><p>${'word '.repeat(6_000)}</p></body>`);
    case '/stall':
      return; // never answers
    case '/go':
      return response.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
    case '/subresources':
      return html(
        response,
        `<title>Subresources</title><body>
           <img src="http://allowed.test:${port}/allowed.gif">
           <img src="http://blocked.localhost:${port}/secret.gif">
           <iframe src="http://blocked.localhost:${port}/secret-frame"></iframe>
           <img src="/go?to=${encodeURIComponent(`http://blocked.localhost:${port}/redirected-secret.gif`)}">
           <script>fetch('http://blocked.localhost:${port}/secret-fetch').catch(() => {})</script>
           <p>Pictures</p>
         </body>`,
      );
    case '/socket-page':
      // The last image is answered once the socket's upgrade arrived, so the page's load waits for the socket.
      return html(
        response,
        `<title>Socket</title><body>
           <script>new WebSocket('ws://allowed.test:${port}/socket')</script>
           <img src="/after-socket.gif">
         </body>`,
      );
    case '/after-socket.gif': {
      const gif = () => response.writeHead(200, { 'content-type': 'image/gif' }).end(PIXEL);
      const timer = setTimeout(gif, 5_000);
      return void socketSeen.then(() => {
        clearTimeout(timer);
        gif();
      });
    }
    default:
      if (url.pathname.endsWith('.gif')) return response.writeHead(200, { 'content-type': 'image/gif' }).end(PIXEL);
      return html(response, `<title>${url.pathname}</title><body>${url.pathname}</body>`);
  }
}

beforeAll(async () => {
  server = createServer((request, response) => {
    recorded.push({ host: request.headers.host, path: request.url ?? '', upgrade: false });
    answer(request, response);
  });
  server.on('upgrade', (request: IncomingMessage, socket) => {
    recorded.push({ host: request.headers.host, path: request.url ?? '', upgrade: true });
    socketOpened();
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

beforeEach(() => {
  recorded = [];
  socketSeen = new Promise((resolve) => {
    socketOpened = resolve;
  });
});

afterAll(async () => {
  await Promise.all([everything.close(), loopbackOnly.close()]);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const lookup: HostLookup = async (host) =>
  ({ 'allowed.test': ['127.0.0.1'], 'blocked.localhost': ['10.0.0.8'] })[host] ?? [];

/** OUTBOUND_ALLOW_PRIVATE_NETWORK=true. */
const everything = new PlaywrightBrowserDriver({ allowPrivateNetwork: true, lookup });
/** A local runtime that lets loopback through but nothing else that is not public. */
const loopbackOnly = new PlaywrightBrowserDriver({ allowPrivateNetwork: false, allowedKinds: ['loopback'], lookup });

async function failure(driver: PlaywrightBrowserDriver, request: BrowserTaskRequest): Promise<OutboundError> {
  const error = await driver.run(request).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof OutboundError)) throw new Error(`expected an OutboundError, got ${String(error)}`);
  return error;
}

/** What reached the server, without the favicon Chromium asks for on its own. */
const paths = () => recorded.map(({ host, path }) => `${host}${path}`).filter((path) => !path.endsWith('/favicon.ico'));
const blockedHostReached = () => recorded.filter(({ host }) => host?.startsWith('blocked.localhost'));

describe('PlaywrightBrowserDriver', () => {
  it('reads the title and the visible text of a page, whitespace collapsed', async () => {
    const result = await everything.run({ prompt: 'Read the opening hours', url: `${base}/page` });
    expect(result).toEqual({
      url: `${base}/page`,
      status: 200,
      title: 'Opening hours',
      text: 'City library Open 9 to 17 Rendered by script',
    });
    expect(everything.name).toBe('playwright-chromium');
  });

  it('opens the first http(s) URL of the prompt and reports the URL after redirects', async () => {
    const result = await everything.run({ prompt: `Summarise ${base}/go?to=/page, then answer.` });
    expect(result).toMatchObject({ url: `${base}/page`, status: 200, title: 'Opening hours' });
    expect(paths()).toEqual([`127.0.0.1:${port}/go?to=/page`, `127.0.0.1:${port}/page`]);
  });

  it('keeps at most 20,000 characters of text', async () => {
    const result = await everything.run({ prompt: 'Read it', url: `${base}/long` });
    expect(result.text).toHaveLength(MAX_PAGE_TEXT_CHARS);
    expect(result.text.startsWith('word word')).toBe(true);
  });

  it('fails with BROWSER_FAILED when the task names no http(s) URL', async () => {
    const error = await failure(everything, { prompt: 'Read file:///etc/passwd for me' });
    expect(error.code).toBe('BROWSER_FAILED');
    expect(error.message).toBe('the browser task names no http(s) URL');
  });

  it('fails with BROWSER_FAILED when the host does not resolve', async () => {
    const error = await failure(loopbackOnly, { prompt: 'Open http://unknown.test/' });
    expect(error.code).toBe('BROWSER_FAILED');
    expect(error.message).toBe('The host unknown.test could not be resolved');
  });

  it('fails with BROWSER_FAILED when the page does not load in time', async () => {
    const impatient = new PlaywrightBrowserDriver({ allowPrivateNetwork: true, timeoutMs: 500 });
    try {
      const error = await failure(impatient, { prompt: 'Open it', url: `${base}/stall` });
      expect(error.code).toBe('BROWSER_FAILED');
      expect(error.message).toBe(`The page at 127.0.0.1:${port} did not load within 500 ms`);
    } finally {
      await impatient.close();
    }
  });

  it('refuses a page on loopback when the private network is not allowed, before any request', async () => {
    const publicOnly = new PlaywrightBrowserDriver({ allowPrivateNetwork: false });
    const error = await failure(publicOnly, { prompt: `Open ${base}/page` });
    expect(error.code).toBe('TARGET_REFUSED');
    expect(error.message).toBe('Refused the outbound target 127.0.0.1: a loopback address');
    expect(recorded).toEqual([]);
    await publicOnly.close();
  });

  it('blocks images, frames, fetches and redirects of a page to hosts the guard refuses', async () => {
    const result = await loopbackOnly.run({ prompt: 'Look at the pictures', url: `${base}/subresources` });
    expect(result).toMatchObject({ status: 200, title: 'Subresources' });
    expect(result.text).toContain('Pictures');
    expect(paths()).toContain(`allowed.test:${port}/allowed.gif`);
    expect(blockedHostReached()).toEqual([]);
  });

  it('refuses a page that redirects to a host the guard refuses, over http and https', async () => {
    for (const scheme of ['http', 'https']) {
      const to = encodeURIComponent(`${scheme}://blocked.localhost:${port}/secret`);
      const error = await failure(loopbackOnly, { prompt: 'Open it', url: `${base}/go?to=${to}` });
      expect(error.code).toBe('TARGET_REFUSED');
      expect(error.message).toBe('Refused the outbound target blocked.localhost: it resolves to a private address');
    }
    expect(paths()).toHaveLength(2); // the two redirecting pages
    expect(blockedHostReached()).toEqual([]);
  });

  it('tunnels a WebSocket to a host the guard allows', async () => {
    const result = await loopbackOnly.run({ prompt: 'Open it', url: `${base}/socket-page` });
    expect(result.title).toBe('Socket');
    expect(recorded).toContainEqual({ host: `allowed.test:${port}`, path: '/socket', upgrade: true });
  });

  it('fails with BROWSER_UNAVAILABLE, saying how to install Chromium, when there is none', async () => {
    const missing = new PlaywrightBrowserDriver({ allowPrivateNetwork: true, executablePath: '/nonexistent/chromium' });
    const error = await failure(missing, { prompt: 'Open it', url: `${base}/page` });
    expect(error.code).toBe('BROWSER_UNAVAILABLE');
    expect(error.message).toContain('apt-get install chromium');
    expect(error.message).toContain('CHROMIUM_PATH');
    await missing.close();
  });

  it('reads CHROMIUM_PATH and OUTBOUND_ALLOW_PRIVATE_NETWORK from the environment', async () => {
    expect(() => browserDriverFromEnv({ OUTBOUND_ALLOW_PRIVATE_NETWORK: 'maybe' })).toThrow(
      'OUTBOUND_ALLOW_PRIVATE_NETWORK',
    );
    const configured = browserDriverFromEnv({ CHROMIUM_PATH: '/opt/nowhere/chrome' });
    expect((await failure(configured, { prompt: `Open ${base}/page` })).code).toBe('TARGET_REFUSED');
    const allowing = browserDriverFromEnv({
      CHROMIUM_PATH: '/opt/nowhere/chrome',
      OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true',
    });
    const error = await failure(allowing, { prompt: `Open ${base}/page` });
    expect(error.code).toBe('BROWSER_UNAVAILABLE');
    expect(error.message).toContain('/opt/nowhere/chrome');
  });
});

describe('firstHttpUrl', () => {
  it.each([
    ['Open https://example.com/a?b=1.', 'https://example.com/a?b=1'],
    ['See (https://en.wikipedia.org/wiki/Foo_(bar)), please', 'https://en.wikipedia.org/wiki/Foo_(bar)'],
    ['Read "http://example.com/x" and ftp://other', 'http://example.com/x'],
    ['No link here', undefined],
  ])('finds the URL in %p', (prompt, url) => {
    expect(firstHttpUrl(prompt)).toBe(url);
  });
});
