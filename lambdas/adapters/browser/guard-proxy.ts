/**
 * The guard proxy of a browser task: an HTTP proxy on 127.0.0.1 for one task's browser context. Playwright's `route`
 * does not see redirects (Chromium follows them itself), and Chromium resolves host names on its own, so a guard
 * inside the browser would leave redirects and DNS rebinding open. Here every plain request and every CONNECT tunnel
 * (https, WebSockets) is checked and then connected through `guardedLookup`, to the addresses the guard saw.
 * Playwright makes Chromium send loopback traffic through a context's proxy as well (`<-loopback>`).
 */
import { randomUUID } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, type LookupFunction, type Socket } from 'node:net';
import { checkTarget, guardedLookup, type TargetGuardOptions } from '#adapters/network/url-guard';
import { OutboundError } from '#ports/flows';

export class GuardProxy {
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
