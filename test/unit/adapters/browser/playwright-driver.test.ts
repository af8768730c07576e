/**
 * PlaywrightBrowserDriver with the real Chromium (the one of @sparticuz/chromium, or CHROMIUM_PATH) against a real HTTP
 * server on 127.0.0.1 that records every request it receives, and a UDP socket on 127.0.0.1 that records every
 * datagram (WebRTC). Guard decisions are real: loopback is let through by
 * allowPrivateNetwork or allowedKinds, and the names the pages use resolve through an injected lookup that the guard
 * proxy also connects with: only the guard can resolve `allowed.test` (to loopback), so reaching it proves the request
 * went through the proxy; Chromium would resolve `blocked.localhost` (private for the guard) to loopback by itself,
 * so the server would see any request to it that got past the guard.
 */
import { execFile } from 'node:child_process';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import {
  browserDriverFromEnv,
  CHROMIUM_FLAGS,
  firstHttpUrl,
  MAX_PAGE_TEXT_CHARS,
  PlaywrightBrowserDriver,
  packagedChromium,
  unpackChromium,
} from '#adapters/browser/playwright-driver';
import type { HostLookup } from '#adapters/network/url-guard';
import { type BrowserTaskRequest, OutboundError } from '#ports/flows';

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
let udp: UdpSocket;
let udpPort: number;
let datagrams: string[];
let datagramArrived: () => void;
let datagramSeen: Promise<void>;

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
    case '/webrtc':
      // Every way to a peer connection the page has (its own, the webkit alias, a new frame's): each one that exists
      // gathers ICE candidates with a STUN server at the UDP socket, a private address.
      return html(
        response,
        `<title>WebRTC</title><body><p id="out"></p>
           <script>
             const frame = document.body.appendChild(document.createElement('iframe'));
             document.getElementById('out').textContent = 'RTCPeerConnection: ' + typeof RTCPeerConnection +
               ', webkitRTCPeerConnection: ' + typeof webkitRTCPeerConnection +
               ', in a new frame: ' + typeof frame.contentWindow.RTCPeerConnection;
             const constructors = [window.RTCPeerConnection, window.webkitRTCPeerConnection, frame.contentWindow.RTCPeerConnection];
             for (const Connection of constructors.filter(Boolean)) {
               const connection = new Connection({ iceServers: [{ urls: 'stun:127.0.0.1:${udpPort}' }] });
               connection.createDataChannel('out');
               connection.createOffer().then((offer) => connection.setLocalDescription(offer));
             }
           </script>
           <img src="/after-datagram.gif">
         </body>`,
      );
    case '/after-datagram.gif': {
      // The page's load waits for the first datagram, or 2 s: time enough for a STUN request to arrive.
      const gif = () => response.writeHead(200, { 'content-type': 'image/gif' }).end(PIXEL);
      const timer = setTimeout(gif, 2_000);
      return void datagramSeen.then(() => {
        clearTimeout(timer);
        gif();
      });
    }
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
  udp = createSocket('udp4');
  udp.on('message', (message, from) => {
    datagrams.push(`${message.length} bytes from ${from.address}:${from.port}`);
    datagramArrived();
  });
  await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
  udpPort = udp.address().port;
});

beforeEach(() => {
  recorded = [];
  socketSeen = new Promise((resolve) => {
    socketOpened = resolve;
  });
  datagrams = [];
  datagramSeen = new Promise((resolve) => {
    datagramArrived = resolve;
  });
});

afterAll(async () => {
  await Promise.all([everything.close(), loopbackOnly.close()]);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await new Promise<void>((resolve) => udp.close(resolve));
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
  it('reads the title and the visible text of a page, whitespace collapsed (the offline model: one done step)', async () => {
    const result = await everything.run({ prompt: 'Read the opening hours', url: `${base}/page` });
    expect(result).toEqual({
      answer: 'City library Open 9 to 17 Rendered by script',
      url: `${base}/page`,
      status: 200,
      title: 'Opening hours',
      text: 'City library Open 9 to 17 Rendered by script',
      steps: [{ action: 'done', target: null, ok: true, url: `${base}/page`, durationMs: expect.any(Number) }],
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

  it('gives a page no WebRTC: no peer connection in it or its frames, and no datagram to a private address', async () => {
    const result = await everything.run({ prompt: 'Open it', url: `${base}/webrtc` });
    expect(result).toMatchObject({ status: 200, title: 'WebRTC' });
    expect(datagrams).toEqual([]);
    expect(result.text).toBe(
      'RTCPeerConnection: undefined, webkitRTCPeerConnection: undefined, in a new frame: undefined',
    );
  });

  it('fails with BROWSER_UNAVAILABLE, naming CHROMIUM_PATH and the package, when the binary is missing', async () => {
    const missing = new PlaywrightBrowserDriver({ allowPrivateNetwork: true, executablePath: '/nonexistent/chromium' });
    const error = await failure(missing, { prompt: 'Open it', url: `${base}/page` });
    expect(error.code).toBe('BROWSER_UNAVAILABLE');
    expect(error.message).toBe(
      'No Chromium at /nonexistent/chromium: set CHROMIUM_PATH to a Chromium binary, or leave it unset for the one of @sparticuz/chromium',
    );
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

describe('the launch flags', () => {
  /** A page that gathers ICE candidates with a STUN server at the UDP socket; its title says when gathering ended. */
  async function gatherIce(flags: string[]): Promise<{ gathered: () => Promise<unknown>; close: () => Promise<void> }> {
    const browser = await chromium.launch({ executablePath: await packagedChromium(), args: flags });
    // Pages of a task always have a proxy; with one, the flag leaves WebRTC only what goes through it (TCP).
    const context = await browser.newContext({ proxy: { server: base } });
    const page = await context.newPage();
    await page.setContent(`<script>
      const connection = new RTCPeerConnection({ iceServers: [{ urls: 'stun:127.0.0.1:${udpPort}' }] });
      connection.onicegatheringstatechange = () => { document.title = connection.iceGatheringState; };
      connection.createDataChannel('out');
      connection.createOffer().then((offer) => connection.setLocalDescription(offer));
    </script>`);
    return { gathered: () => page.waitForFunction('document.title === "complete"'), close: () => browser.close() };
  }

  it('keep WebRTC from sending UDP past the proxy, even where a page has RTCPeerConnection', async () => {
    const withFlags = await gatherIce(CHROMIUM_FLAGS);
    try {
      // Gathering ends once every way out was tried; a datagram that arrives first ends the wait too.
      await Promise.race([withFlags.gathered(), datagramSeen]);
      expect(datagrams).toEqual([]);
    } finally {
      await withFlags.close();
    }
    // The same page without the WebRTC flag: the STUN request reaches the socket, so the probe above could see one.
    const without = await gatherIce(CHROMIUM_FLAGS.filter((flag) => !flag.startsWith('--force-webrtc')));
    try {
      await datagramSeen;
      expect(datagrams[0]).toMatch(/^\d+ bytes from 127\.0\.0\.1:/);
    } finally {
      await without.close();
    }
  });
});

describe('unpackChromium', () => {
  let parent: string;
  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), 'unpack-chromium-'));
  });
  afterAll(async () => {
    await chmod(parent, 0o700);
    await rm(parent, { recursive: true, force: true });
  });

  const version = async (binary: string) => (await promisify(execFile)(binary, ['--version'])).stdout;

  it('unpacks one complete binary for callers racing each other, and again when it was removed', async () => {
    const [first, second] = await Promise.all([unpackChromium(parent), unpackChromium(parent)]);
    expect(second).toBe(first);
    expect(await readdir(parent)).toEqual([basename(dirname(first))]); // no staging folder left
    expect(await version(first)).toMatch(/^Chromium \d+\./);

    await rm(first);
    expect(await unpackChromium(parent)).toBe(first);
    expect(await version(first)).toMatch(/^Chromium \d+\./);
  });

  it('refuses a folder that others may write, rather than run what it holds', async () => {
    const folder = dirname(await unpackChromium(parent));
    await chmod(folder, 0o777);
    await expect(unpackChromium(parent)).rejects.toThrow(
      `${folder} is not a folder that only this user can write: remove it`,
    );
  });
});

describe('firstHttpUrl', () => {
  it.each([
    ['Open https://example.com/a?b=1.', 'https://example.com/a?b=1'],
    ['See (https://en.wikipedia.org/wiki/Foo_(bar)), please', 'https://en.wikipedia.org/wiki/Foo_(bar)'],
    ['Read "http://example.com/x" and ftp://other', 'http://example.com/x'],
    ['Go to https://example.com/a).', 'https://example.com/a'],
    ['Only http://', undefined],
    ['No link here', undefined],
  ])('finds the URL in %p', (prompt, url) => {
    expect(firstHttpUrl(prompt)).toBe(url);
  });

  it('reads a 200,000-character URL of punctuation runs (the old trailing pattern was quadratic on it)', () => {
    const dots = '.'.repeat(100_000);
    expect(firstHttpUrl(`Open http://a${dots}b${')'.repeat(99_990)}`)).toBe(`http://a${dots}b`);
    expect(firstHttpUrl(`Open http://a(${dots}b${')'.repeat(99_990)}`)).toBe(`http://a(${dots}b)`);
  });
});
