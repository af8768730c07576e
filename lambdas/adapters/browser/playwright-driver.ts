/**
 * BrowserDriver for browserTask nodes: Chromium through playwright-core, launched on the first task and reused; the
 * Chromium of the `@sparticuz/chromium` package unless CHROMIUM_PATH names another. Every request of a task's page
 * leaves through a guard proxy of that task (see GuardProxy), so the outbound guard holds for the page, its redirects,
 * subresources, frames and WebSockets alike; WebRTC, which would send UDP past any proxy, is off.
 */
import { randomUUID } from 'node:crypto';
import { constants, createReadStream, createWriteStream } from 'node:fs';
import { access, lstat, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, type LookupFunction, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';
import { type Browser, chromium, errors, type Page, type Response as PageResponse } from 'playwright-core';
import { type BrowserDriver, type BrowserTaskRequest, type BrowserTaskResult, OutboundError } from '../../ports/flows';
import { allowPrivateNetworkFromEnv, checkTarget, guardedLookup, type TargetGuardOptions } from '../network/url-guard';

export const DEFAULT_BROWSER_TIMEOUT_MS = 15_000;
export const MAX_PAGE_TEXT_CHARS = 20_000;

/**
 * Without the background-networking flags Chromium keeps calling Google services (refused on a closed network).
 * WebRTC's UDP does not go through the guard proxy, so it may use the proxy (TCP) or nothing. Of the flags
 * `@sparticuz/chromium` recommends (`chromium.args`) none is needed here, and several must stay out for hostile pages:
 * --disable-web-security, --allow-running-insecure-content and the site-isolation switches; --single-process and
 * --no-zygote are for Lambda's sandbox only.
 */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
];

/**
 * Runs in every page and frame before its own scripts: without the WebRTC constructors a page cannot open a peer
 * connection at all (the flag above is the second line). The whole RTC family goes, RTCPeerConnection and its
 * webkit alias included.
 */
export const WEBRTC_OFF_SCRIPT = `for (const name of Object.getOwnPropertyNames(globalThis)) {
  if (name.startsWith('RTC') || name.startsWith('webkitRTC')) delete globalThis[name];
}`;

const PACKAGE = '@sparticuz/chromium';
const CHROMIUM_HINT = `set CHROMIUM_PATH to a Chromium binary, or leave it unset for the one of ${PACKAGE}`;

export interface PlaywrightBrowserDriverOptions extends TargetGuardOptions {
  /** Default: CHROMIUM_PATH, else the Chromium of @sparticuz/chromium. */
  readonly executablePath?: string;
  /** For loading the page and reading it. */
  readonly timeoutMs?: number;
}

export class PlaywrightBrowserDriver implements BrowserDriver {
  readonly name = 'playwright-chromium';
  /** Undefined: the packaged Chromium. */
  private readonly executablePath: string | undefined;
  private readonly timeoutMs: number;
  private browser: Promise<Browser> | undefined;

  constructor(private readonly options: PlaywrightBrowserDriverOptions) {
    this.executablePath = options.executablePath ?? (process.env.CHROMIUM_PATH || undefined);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_BROWSER_TIMEOUT_MS;
  }

  async run(request: BrowserTaskRequest): Promise<BrowserTaskResult> {
    const url = request.url ?? firstHttpUrl(request.prompt);
    if (url === undefined) throw new OutboundError('BROWSER_FAILED', 'the browser task names no http(s) URL');
    const target = await checkTarget(url, this.options).catch((error: unknown) => {
      // A host that does not resolve is a failed task here, not a failed HTTP call.
      if (error instanceof OutboundError && error.code === 'OUTBOUND_FAILED') {
        throw new OutboundError('BROWSER_FAILED', error.message);
      }
      throw error;
    });
    const browser = await this.launched();
    const proxy = await GuardProxy.start(this.options);
    const deadline = Date.now() + this.timeoutMs;
    try {
      const context = await browser.newContext({
        proxy: { server: proxy.url },
        serviceWorkers: 'block', // a service worker could answer from a cache the proxy never sees
        acceptDownloads: false,
      });
      try {
        await context.addInitScript(WEBRTC_OFF_SCRIPT);
        return await this.read(await context.newPage(), target, proxy, deadline);
      } finally {
        await context.close().catch(() => {});
      }
    } finally {
      await proxy.close();
    }
  }

  async close(): Promise<void> {
    const browser = this.browser;
    this.browser = undefined;
    await (await browser?.catch(() => undefined))?.close();
  }

  private async read(page: Page, target: URL, proxy: GuardProxy, deadline: number): Promise<BrowserTaskResult> {
    let failedNavigation: string | undefined;
    page.on('requestfailed', (request) => {
      if (request.isNavigationRequest() && request.frame() === page.mainFrame()) failedNavigation = request.url();
    });
    let response: PageResponse | null;
    try {
      response = await page.goto(target.href, { timeout: Math.max(deadline - Date.now(), 1), waitUntil: 'load' });
    } catch (error) {
      throw proxy.refusalOf(failedNavigation ?? target.href) ?? this.failure(error, target);
    }
    const refusal = response === null ? undefined : proxy.refusalOf(response.url(), response.headers());
    if (refusal) throw refusal;

    try {
      const [title, text] = await withDeadline(
        Promise.all([page.title(), page.evaluate('document.body ? document.body.innerText : ""')]),
        Math.max(deadline - Date.now(), 1_000),
      );
      return {
        url: page.url(),
        status: response?.status() ?? null,
        title,
        text: String(text).replace(/\s+/g, ' ').trim().slice(0, MAX_PAGE_TEXT_CHARS),
      };
    } catch (error) {
      throw this.failure(error, target);
    }
  }

  private failure(error: unknown, target: URL): OutboundError {
    if (error instanceof errors.TimeoutError) {
      return new OutboundError('BROWSER_FAILED', `The page at ${target.host} did not load within ${this.timeoutMs} ms`);
    }
    // Only Chromium's net error code: the rest of Playwright's message is a call log with internal detail.
    const reason = /net::ERR_[A-Z_]+/.exec(error instanceof Error ? error.message : '')?.[0];
    return new OutboundError(
      'BROWSER_FAILED',
      reason ? `The browser could not open ${target.host} (${reason})` : `The browser could not read ${target.host}`,
    );
  }

  private launched(): Promise<Browser> {
    this.browser ??= this.launch().catch((error: unknown) => {
      this.browser = undefined; // the next task tries again (the binary may be there by then)
      throw error;
    });
    return this.browser;
  }

  private async launch(): Promise<Browser> {
    const executablePath = this.executablePath ?? (await packagedChromiumOrUnavailable());
    try {
      await access(executablePath, constants.X_OK);
    } catch {
      throw new OutboundError('BROWSER_UNAVAILABLE', `No Chromium at ${executablePath}: ${CHROMIUM_HINT}`);
    }
    let browser: Browser;
    try {
      browser = await chromium.launch({ executablePath, args: CHROMIUM_FLAGS, timeout: 30_000 });
    } catch {
      throw new OutboundError('BROWSER_UNAVAILABLE', `Chromium at ${executablePath} did not start: ${CHROMIUM_HINT}`);
    }
    browser.on('disconnected', () => {
      this.browser = undefined;
    });
    return browser;
  }
}

/** The driver of the local runtime: OUTBOUND_ALLOW_PRIVATE_NETWORK and CHROMIUM_PATH. */
export function browserDriverFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): PlaywrightBrowserDriver {
  return new PlaywrightBrowserDriver({
    allowPrivateNetwork: allowPrivateNetworkFromEnv(env),
    executablePath: env.CHROMIUM_PATH || undefined,
  });
}

const SENTENCE_END = new Set('.,;:!?)]}');

/**
 * The first http(s) URL in a prompt, without the punctuation that ends the sentence around it. The trailing run is
 * trimmed by a loop: the pattern `[.,;:!?)\]}]+$` retried its run from every position of it (quadratic).
 */
export function firstHttpUrl(prompt: string): string | undefined {
  const found = /https?:\/\/[^\s<>"'`]+/i.exec(prompt)?.[0];
  if (found === undefined) return undefined;
  let end = found.length;
  while (end > 0 && SENTENCE_END.has(found[end - 1])) end -= 1;
  // A link that opened a parenthesis keeps the one that closes it: .../Foo_(bar)).
  if (found[end] === ')' && found.includes('(')) end += 1;
  return found.slice(0, end);
}

let packaged: Promise<string> | undefined;

/** The Chromium of @sparticuz/chromium in the temporary folder, unpacked on the first call of the process. */
export function packagedChromium(): Promise<string> {
  packaged ??= unpackChromium(tmpdir()).catch((error: unknown) => {
    packaged = undefined;
    throw error;
  });
  return packaged;
}

async function packagedChromiumOrUnavailable(): Promise<string> {
  try {
    return await packagedChromium();
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0]; // not require's stack
    throw new OutboundError(
      'BROWSER_UNAVAILABLE',
      `The Chromium of ${PACKAGE} could not be unpacked (${reason}): run npm ci, or set CHROMIUM_PATH`,
    );
  }
}

/**
 * Unpacks the binary that @sparticuz/chromium ships brotli-compressed in its bin/ into `<parent>/<folder of this
 * version and user>/chromium`, unless it is there. Not through the package's `executablePath()`: the package is ES
 * modules only (jest's CommonJS runtime cannot load it), and it writes the fixed /tmp/chromium, which any local user
 * may have put there, and which another process already runs while it is still being written. Here the binary is
 * written into a private staging folder that is then renamed into place, so the folder, when it exists, is complete;
 * of processes unpacking at once, the first rename wins and the others use its copy. Fonts and SwiftShader, also in
 * the package, are not needed: the pages are read, not drawn.
 */
export async function unpackChromium(parent: string): Promise<string> {
  const bin = join(dirname(require.resolve(PACKAGE)), '..', 'bin');
  const { version } = JSON.parse(await readFile(join(bin, '..', 'package.json'), 'utf8')) as { version: string };
  const folder = join(parent, `agent-platform-chromium-${version}-${process.getuid?.() ?? 'user'}`);
  const binary = join(folder, 'chromium');
  if (await unpackedIn(folder, binary)) return binary;
  const staging = await mkdtemp(`${folder}.`);
  try {
    await pipeline(
      createReadStream(join(bin, 'chromium.br')),
      createBrotliDecompress(),
      createWriteStream(join(staging, 'chromium'), { mode: 0o700 }),
    );
    await rename(staging, folder);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    if (!(await unpackedIn(folder, binary))) throw error;
  }
  return binary;
}

/**
 * Whether `folder` holds the binary. A folder another user owns or may write is refused, never run; one of ours
 * without its binary (a cleaner of old temporary files took it) is removed, to be unpacked again.
 */
async function unpackedIn(folder: string, binary: string): Promise<boolean> {
  const stats = await lstat(folder).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (stats === undefined) return false;
  const uid = process.getuid?.();
  if (!stats.isDirectory() || (uid !== undefined && stats.uid !== uid) || (stats.mode & 0o022) !== 0) {
    throw new Error(`${folder} is not a folder that only this user can write: remove it`);
  }
  const file = await lstat(binary).catch(() => undefined);
  if (file?.isFile() && (uid === undefined || file.uid === uid)) return true;
  await rm(folder, { recursive: true, force: true });
  return false;
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new errors.TimeoutError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * An HTTP proxy on 127.0.0.1 for one task's browser context. Playwright's `route` does not see redirects (Chromium
 * follows them itself), and Chromium resolves host names on its own, so a guard inside the browser would leave
 * redirects and DNS rebinding open. Here every plain request and every CONNECT tunnel (https, WebSockets) is checked
 * and then connected through `guardedLookup`, to the addresses the guard saw. Playwright makes Chromium send loopback
 * traffic through a context's proxy as well (`<-loopback>`).
 */
class GuardProxy {
  /** Refusals by `host:port`, to tell a refused main navigation from any other failure. */
  private readonly refusals = new Map<string, OutboundError>();
  /** Marks the proxy's own refusal answers; an upstream server cannot know it. */
  private readonly token = randomUUID();
  private readonly open = new Set<{ destroy(): void }>();
  private readonly lookup: LookupFunction;

  private constructor(
    private readonly server: Server,
    private readonly guard: TargetGuardOptions,
    readonly url: string,
  ) {
    this.lookup = guardedLookup(guard);
  }

  static async start(guard: TargetGuardOptions): Promise<GuardProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const proxy = new GuardProxy(server, guard, `http://127.0.0.1:${port}`);
    server.on('connection', (socket) => proxy.track(socket));
    server.on('request', (request, response) => void proxy.forward(request, response));
    server.on('connect', (request, socket: Socket, head: Buffer) => void proxy.tunnel(request, socket, head));
    return proxy;
  }

  /** The guard's error when `url`'s host was refused (for an answer: only when it is the proxy's refusal). */
  refusalOf(url: string, headers?: Record<string, string>): OutboundError | undefined {
    if (headers !== undefined && headers['x-outbound-guard'] !== this.token) return undefined;
    const target = new URL(url);
    return this.refusals.get(hostKey(target.hostname, target.port, target.protocol));
  }

  async close(): Promise<void> {
    for (const connection of this.open) connection.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private track<T extends { destroy(): void; once(event: 'close', listener: () => void): unknown }>(item: T): T {
    this.open.add(item);
    item.once('close', () => this.open.delete(item));
    return item;
  }

  /** A plain http:// request: Chromium sends the absolute URL. */
  private async forward(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const target = parseUrl(request.url ?? '');
    if (target?.protocol !== 'http:') {
      response.writeHead(400).end();
      return;
    }
    const key = hostKey(target.hostname, target.port, target.protocol);
    const refuse = (error: unknown) => {
      if (error instanceof OutboundError && error.code === 'TARGET_REFUSED') {
        this.refusals.set(key, error);
        if (!response.headersSent) response.writeHead(403, { 'x-outbound-guard': this.token });
        response.end('Refused by the outbound guard');
      } else if (!response.headersSent) {
        response.writeHead(502).end();
      } else {
        response.destroy();
      }
    };
    try {
      await checkTarget(target.href, this.guard);
    } catch (error) {
      refuse(error);
      return;
    }
    const upstream = httpRequest(
      {
        hostname: bare(target.hostname),
        port: target.port || 80,
        path: `${target.pathname}${target.search}`,
        method: request.method,
        headers: withoutHopByHop(request.headers),
        lookup: this.lookup,
        agent: false,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
        answer.pipe(response);
      },
    );
    this.track(upstream);
    upstream.on('error', refuse);
    response.on('close', () => upstream.destroy());
    request.pipe(upstream);
  }

  /** CONNECT host:port, for https:// and WebSockets. */
  private async tunnel(request: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy());
    const target = parseUrl(`https://${request.url ?? ''}`);
    if (target === undefined) {
      client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      return;
    }
    const key = hostKey(target.hostname, target.port, target.protocol);
    let connected = false;
    const refuse = (error: unknown) => {
      const refused = error instanceof OutboundError && error.code === 'TARGET_REFUSED';
      if (refused) this.refusals.set(key, error);
      if (connected) client.destroy();
      else client.end(refused ? 'HTTP/1.1 403 Forbidden\r\n\r\n' : 'HTTP/1.1 502 Bad Gateway\r\n\r\n');
    };
    try {
      await checkTarget(target.href, this.guard);
    } catch (error) {
      refuse(error);
      return;
    }
    const upstream = this.track(
      connect({ host: bare(target.hostname), port: Number(target.port || 443), lookup: this.lookup }),
    );
    upstream.on('error', refuse);
    upstream.once('connect', () => {
      connected = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    client.on('close', () => upstream.destroy());
  }
}

function parseUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function withoutHopByHop(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
}

function hostKey(hostname: string, port: string, protocol: string): string {
  return `${bare(hostname)}:${port || (protocol === 'https:' ? '443' : '80')}`;
}

function bare(hostname: string): string {
  return hostname.replace(/^\[(.*)\]$/, '$1');
}
