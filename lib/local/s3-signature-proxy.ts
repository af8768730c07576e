/**
 * A SigV4 check in front of s3rver. s3rver only looks at the access key id and the expiry of a request and never
 * recomputes a Signature Version 4 signature, so without this proxy a tampered pre-signed URL (another key, another
 * content type, a longer expiry) would be accepted locally although S3 rejects it. The proxy verifies each request
 * with `verifySigV4` (sigv4-verifier.ts), answers rejections with S3's XML error body, and streams accepted requests to
 * s3rver and its responses back, without buffering bodies. It also does what s3rver leaves out of a PUT: the
 * conditional write `If-None-Match: *` (412 when the key exists), which makes the service's upload URLs write-once;
 * S3's key length limit (KeyTooLongError) and a cap on what one request may store (EntityTooLarge), counted while the
 * body streams through.
 *
 * s3rver knows one fixed key pair; the proxy verifies requests against the data folder's own credentials and hands
 * them on under s3rver's key id (s3rver never recomputes a V4 signature, so the signature itself is left as it is).
 */

import {
  Agent,
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { UPLOAD_CORS_RULE } from '../../lambdas/shared/cors';
import { decodeComponent, parseQuery, type SigV4ErrorCode, uriEncode, verifySigV4 } from './sigv4-verifier';

export interface S3SignatureProxyOptions {
  /** Where s3rver answers: a base URL (http://127.0.0.1:45678), or a Unix socket. */
  upstream: string | { socketPath: string };
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** e.g. us-east-1 */
  region: string;
  /** Listen host, default 127.0.0.1. */
  host?: string;
  /** Listen port, default 0 (ephemeral). */
  port?: number;
  /** Clock, for tests. */
  now?: () => Date;
  /** Longest accepted X-Amz-Expires of a pre-signed URL, default 604800 (seven days, as S3). */
  maxPresignExpiresSeconds?: number;
  /** Most bytes one request body may carry (default S3's 5 GiB); more is refused as EntityTooLarge. */
  maxUploadBytes?: number;
}

/** S3's own limit of one PUT: 5 GiB. The local runtime passes the service's limits instead (engines.ts). */
export const S3_MAX_PUT_BYTES = 5 * 1024 ** 3;

/** S3's longest key, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024;

/**
 * The longest name of one file or folder on the disk store (NAME_MAX of Linux and macOS file systems). s3rver stores
 * a key's last segment as `<segment>._S3rver_metadata.json`, 22 bytes longer, so that segment may have 233.
 */
const NAME_MAX = 255;

const STORE_SUFFIX_BYTES = '._S3rver_metadata.json'.length;

/** s3rver's own, fixed access key id: what requests carry once the proxy has verified them. */
const UPSTREAM_ACCESS_KEY_ID = 'S3RVER';

export interface S3SignatureProxy {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** HTTP status S3 answers each error code with. */
const STATUS: Record<SigV4ErrorCode, number> = {
  AccessDenied: 403,
  SignatureDoesNotMatch: 403,
  InvalidAccessKeyId: 403,
  AuthorizationQueryParametersError: 403,
  AuthorizationHeaderMalformed: 400,
  MissingSecurityHeader: 400,
  RequestTimeTooSkewed: 403,
  InvalidArgument: 400,
};

const escapeXml = (text: string): string =>
  text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c] ?? c);

/** S3's XML error body; `details` are the extra elements S3 adds for some codes (Size, MaxSizeAllowed, ...). */
function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  details: Record<string, string | number> = {},
  close = false,
): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const extra = Object.entries(details)
    .map(([name, value]) => `<${name}>${escapeXml(String(value))}</${name}>`)
    .join('');
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${escapeXml(code)}</Code><Message>${escapeXml(message)}</Message>${extra}</Error>`;
  res.writeHead(status, {
    'content-type': 'application/xml',
    'content-length': Buffer.byteLength(body),
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(body);
}

const INTERNAL_ERROR = 'We encountered an internal error. Please try again.';

const CORS_VARY = 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method';

const corsAllows = (allowed: readonly string[], value: string): boolean =>
  allowed.includes('*') || allowed.some((item) => item.toLowerCase() === value.toLowerCase());

/**
 * A CORS preflight, answered as S3 answers it for the documents bucket's rule (UPLOAD_CORS_RULE, which the CDK
 * bucket has too): s3rver's bucket has no CORS configuration, so without this a browser page could not PUT to an
 * upload URL locally although it can in AWS. Like S3, no signature is asked of a preflight.
 */
function answerPreflight(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  const origin = req.headers.origin;
  const method = req.headers['access-control-request-method'];
  if (!origin) {
    sendError(res, 400, 'BadRequest', 'Insufficient information. Origin request header needed.');
    return;
  }
  if (!method) {
    sendError(res, 400, 'BadRequest', 'Invalid Access-Control-Request-Method: null');
    return;
  }
  const requested = (req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  const rule = UPLOAD_CORS_RULE;
  if (
    !corsAllows(rule.allowedOrigins, origin) ||
    !corsAllows(rule.allowedMethods, method) ||
    !requested.every((name) => corsAllows(rule.allowedHeaders, name))
  ) {
    sendError(
      res,
      403,
      'AccessForbidden',
      "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.",
    );
    return;
  }
  res.writeHead(200, {
    'access-control-allow-origin': rule.allowedOrigins.includes('*') ? '*' : origin,
    'access-control-allow-methods': rule.allowedMethods.join(', '),
    ...(requested.length > 0 ? { 'access-control-allow-headers': requested.join(', ') } : {}),
    'access-control-max-age': String(rule.maxAgeSeconds),
    vary: CORS_VARY,
    'content-length': 0,
  });
  res.end();
}

/**
 * The CORS headers of an actual request the rule covers (a PUT from a page), set before any answer is written, so
 * that they go with s3rver's answer and with the proxy's own errors alike: the page can read why S3 refused its
 * upload (403 SignatureDoesNotMatch, 412, EntityTooLarge).
 */
function setCorsHeaders(req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin;
  const rule = UPLOAD_CORS_RULE;
  if (!origin || !corsAllows(rule.allowedMethods, req.method ?? '') || !corsAllows(rule.allowedOrigins, origin)) {
    return;
  }
  res.setHeader('access-control-allow-origin', rule.allowedOrigins.includes('*') ? '*' : origin);
  res.setHeader('vary', CORS_VARY);
}

/**
 * Why the key a request addresses cannot be stored: longer than S3 allows, or (stricter than S3, which stores any
 * key up to 1,024 bytes) a segment too long for a file name of the disk store, or a `.`/`..` segment, which the
 * disk store would resolve to another folder. undefined when the key is fine, or the request names no key.
 */
function keyRefusal(
  path: string,
  host: string | undefined,
): { code: 'KeyTooLongError' | 'InvalidArgument'; message: string; details: Record<string, number> } | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return undefined; // s3rver answers a malformed path itself
  }
  // Virtual-hosted style (`<bucket>.s3.amazonaws.com`): the whole path is the key; path style: all after the bucket.
  const name = (host ?? '').replace(/:\d+$/, '');
  const virtualHosted = /^.+\.s3(-website)?([-.].+)?\.amazonaws\.com$/.test(name);
  const rest = decoded.replace(/^\//, '');
  const key = virtualHosted ? rest : rest.slice(rest.indexOf('/') + 1 || rest.length);
  if (key === '') return undefined;
  const size = Buffer.byteLength(key, 'utf8');
  if (size > MAX_KEY_BYTES) {
    return {
      code: 'KeyTooLongError',
      message: 'Your key is too long',
      details: { Size: size, MaxSizeAllowed: MAX_KEY_BYTES },
    };
  }
  const segments = key.split('/');
  for (const [index, segment] of segments.entries()) {
    if (segment === '.' || segment === '..') {
      return {
        code: 'InvalidArgument',
        message: `The local S3 engine cannot store a key with a '${segment}' segment (S3 itself would accept it).`,
        details: {},
      };
    }
    const limit = index === segments.length - 1 ? NAME_MAX - STORE_SUFFIX_BYTES : NAME_MAX;
    const bytes = Buffer.byteLength(segment, 'utf8');
    if (bytes > limit) {
      return {
        code: 'KeyTooLongError',
        message:
          `Your key is too long for the local S3 engine: it stores each segment between slashes as a file name, and ` +
          `one has ${bytes} bytes, over its ${limit} (S3 itself accepts any key up to ${MAX_KEY_BYTES} bytes).`,
        details: { Size: size, MaxSizeAllowed: MAX_KEY_BYTES },
      };
    }
  }
  return undefined;
}

/**
 * The request as s3rver is to see it: the verified access key id replaced by s3rver's own, in the Authorization
 * header or in X-Amz-Credential. Everything else (and so the signature) is left as it came.
 */
function asUpstream(url: string, headers: OutgoingHttpHeaders): string {
  const authorization = headers.authorization;
  if (typeof authorization === 'string') {
    headers.authorization = authorization.replace(/Credential=[^/,\s]*\//, `Credential=${UPSTREAM_ACCESS_KEY_ID}/`);
    return url;
  }
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      if (eq < 0 || decodeComponent(part.slice(0, eq)) !== 'X-Amz-Credential') return part;
      const scope = decodeComponent(part.slice(eq + 1));
      return `${part.slice(0, eq)}=${uriEncode(`${UPSTREAM_ACCESS_KEY_ID}${scope.slice(scope.indexOf('/'))}`)}`;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

/** Hop-by-hop headers, which belong to one connection and are not forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
]);

/**
 * Whether s3rver routes a request with this Host as path-style. s3rver's vhost middleware takes any other host name as
 * a bucket name (virtual-hosted style: `Host: files.example` means bucket `files.example`); IP addresses, `localhost`,
 * the machine's own name and `*.s3*.amazonaws.com` keep their meaning.
 */
function s3rverUnderstandsHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return (
    isIP(name) !== 0 ||
    name === 'localhost' ||
    name === osHostname() ||
    /(^|\.)s3(-website)?([-.].+)?\.amazonaws\.com$/.test(name)
  );
}

function forwardHeaders(headers: IncomingHttpHeaders, upstreamHost: string): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || name === 'expect') continue; // the 100-continue was answered here
    out[name] = value;
  }
  // The original Host is kept when s3rver reads it as intended, so that URLs it builds from it (the Location of a
  // completed multipart upload) point at this proxy; another name would be taken for a bucket, so it is replaced.
  if (!s3rverUnderstandsHost(headers.host)) out.host = upstreamHost;
  return out;
}

/** An UploadPart (`?partNumber&uploadId`): S3 applies If-None-Match to whole objects, not to parts. */
function isPartUpload(url: string): boolean {
  const q = url.indexOf('?');
  return q >= 0 && parseQuery(url.slice(q + 1)).some((p) => p.key === 'uploadId');
}

/** Runs `work` after every earlier `work` of the same key has ended. */
async function exclusively(locks: Map<string, Promise<void>>, key: string, work: () => Promise<void>): Promise<void> {
  const previous = locks.get(key);
  let release = (): void => undefined;
  const mine = new Promise<void>((done) => {
    release = done;
  });
  const tail = (previous ?? Promise.resolve()).then(() => mine);
  locks.set(key, tail);
  try {
    await previous;
    await work();
  } finally {
    release();
    if (locks.get(key) === tail) locks.delete(key);
  }
}

/** Starts the SigV4-checking proxy in front of s3rver. */
export function startS3SignatureProxy(options: S3SignatureProxyOptions): Promise<S3SignatureProxy> {
  const target = upstreamTarget(options.upstream);
  const agent = new Agent({ keepAlive: true });
  const now = options.now ?? (() => new Date());
  const maxUploadBytes = options.maxUploadBytes ?? S3_MAX_PUT_BYTES;
  const writeLocks = new Map<string, Promise<void>>();

  /**
   * Refuses a body over the cap: stores nothing, answers S3's EntityTooLarge at once and closes the connection after
   * the answer, as S3 does. ProposedSize is what arrived so far when no Content-Length said more.
   */
  const tooLarge = (req: IncomingMessage, res: ServerResponse, proposed: number): void => {
    sendError(
      res,
      400,
      'EntityTooLarge',
      'Your proposed upload exceeds the maximum allowed size',
      { ProposedSize: proposed, MaxSizeAllowed: maxUploadBytes },
      true,
    );
    req.resume(); // what the client still sends until then is dropped
  };

  /** Streams an accepted request to s3rver and its answer back; resolves when the exchange is over. */
  const forward = (req: IncomingMessage, res: ServerResponse, url: string): Promise<void> => {
    if (res.destroyed || res.closed) {
      req.resume(); // the client left while the request waited for its turn
      return Promise.resolve();
    }
    const over = new Promise<void>((done) => res.once('close', () => done()));
    let upstreamReq: ClientRequest | undefined;
    let upstreamRes: IncomingMessage | undefined;
    const abort = (): void => {
      upstreamReq?.destroy();
      upstreamRes?.destroy();
    };
    // The client went away (or the request stream broke) before the response was complete.
    res.on('close', () => {
      if (!res.writableFinished) abort();
    });
    req.on('error', abort);

    const headers = forwardHeaders(req.headers, target.host);
    upstreamReq = httpRequest(
      {
        ...target.connect,
        method: req.method,
        path: asUpstream(url, headers),
        headers,
        agent,
      },
      (response) => {
        upstreamRes = response;
        const headers: OutgoingHttpHeaders = {};
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
        }
        if (res.destroyed || res.headersSent) {
          response.destroy();
          return;
        }
        res.writeHead(response.statusCode ?? 500, response.statusMessage, headers);
        response.on('error', () => res.destroy());
        response.pipe(res);
      },
    );
    upstreamReq.on('error', (error) => {
      req.unpipe();
      req.resume();
      if (res.destroyed || res.writableEnded) return;
      if (res.headersSent) {
        res.destroy(); // a truncated response must not look complete
        return;
      }
      sendError(res, 500, 'InternalError', `${INTERNAL_ERROR} (The local S3 engine failed: ${error.message})`);
    });

    // The body is counted as it passes: a declared Content-Length is not taken on trust, and s3rver, cut off
    // before the end of a body over the cap, keeps nothing of it (see engines.ts, storeAtomically).
    let received = 0;
    let refused = false;
    const outgoing = upstreamReq;
    req.on('data', (chunk: Buffer) => {
      if (refused || outgoing.destroyed) return; // after a refusal or a failed upstream, the rest is dropped
      received += chunk.length;
      if (received > maxUploadBytes) {
        refused = true;
        tooLarge(req, res, received);
        outgoing.destroy();
        return;
      }
      if (!outgoing.write(chunk)) req.pause();
    });
    outgoing.on('drain', () => {
      if (!refused) req.resume();
    });
    req.on('end', () => {
      if (!refused && !outgoing.destroyed) outgoing.end();
    });
    return over;
  };

  /** Whether the object exists: a HEAD to s3rver. */
  const objectExists = (req: IncomingMessage, url: string): Promise<boolean> =>
    new Promise((resolve, reject) => {
      const q = url.indexOf('?');
      const head = httpRequest(
        {
          ...target.connect,
          method: 'HEAD',
          path: q < 0 ? url : url.slice(0, q),
          headers: { host: forwardHeaders({ host: req.headers.host }, target.host).host },
          agent,
        },
        (response) => {
          response.resume();
          if (response.statusCode === 200) resolve(true);
          else if (response.statusCode === 404) resolve(false);
          else reject(new Error(`HEAD answered ${response.statusCode}`));
        },
      );
      head.on('error', reject);
      head.end();
    });

  /**
   * A conditional write, as S3 does it: `If-None-Match: *` stores the object only when the key does not exist yet,
   * otherwise 412 PreconditionFailed. s3rver ignores the header on PUT, so the proxy checks first, and holds one such
   * write per key at a time so that two racing PUTs cannot both find the key free.
   */
  const writeOnce = async (req: IncomingMessage, res: ServerResponse, url: string): Promise<void> => {
    const condition = req.headers['if-none-match'];
    if (condition?.trim() !== '*') {
      req.resume();
      sendError(
        res,
        501,
        'NotImplemented',
        'A header you provided implies functionality that is not implemented: If-None-Match accepts only *',
      );
      return;
    }
    const key = `${req.headers.host ?? ''} ${url.split('?')[0]}`;
    await exclusively(writeLocks, key, async () => {
      let exists: boolean;
      try {
        exists = await objectExists(req, url);
      } catch (error) {
        req.resume();
        sendError(
          res,
          500,
          'InternalError',
          `${INTERNAL_ERROR} (The local S3 engine failed: ${(error as Error).message})`,
        );
        return;
      }
      if (exists) {
        req.resume();
        sendError(res, 412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
        return;
      }
      await forward(req, res, url);
    });
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method === 'OPTIONS') {
      answerPreflight(req, res);
      return;
    }
    setCorsHeaders(req, res);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const verdict = verifySigV4(
      {
        method: req.method ?? 'GET',
        path,
        query: q < 0 ? '' : url.slice(q + 1),
        headers: req.headersDistinct,
      },
      {
        credentials: options.credentials,
        region: options.region,
        now: now(),
        maxPresignExpiresSeconds: options.maxPresignExpiresSeconds,
      },
    );
    if (!verdict.ok) {
      req.resume(); // discard the body, so that the connection can carry the next request
      sendError(res, STATUS[verdict.code], verdict.code, verdict.message);
      return;
    }
    const badKey = keyRefusal(path, req.headers.host);
    if (badKey) {
      req.resume();
      sendError(res, 400, badKey.code, badKey.message, badKey.details);
      return;
    }
    const declared = Number(req.headers['content-length']);
    if (declared > maxUploadBytes) {
      tooLarge(req, res, declared); // S3 refuses it before reading the body; so does this
      return;
    }

    if (req.method === 'PUT' && req.headers['if-none-match'] !== undefined && !isPartUpload(url)) {
      writeOnce(req, res, url).catch(() => res.destroy());
      return;
    }
    void forward(req, res, url);
  };

  const server = createServer(handle);
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  const host = options.host ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      const { port } = server.address() as AddressInfo;
      const urlHost = host.includes(':') ? `[${host}]` : host;
      resolve({
        url: `http://${urlHost}:${port}`,
        port,
        close: () =>
          new Promise<void>((done, failed) => {
            server.close((error) => (error ? failed(error) : done()));
            server.closeAllConnections();
            agent.destroy();
          }),
      });
    });
  });
}

/** How to reach s3rver, and the Host it is told when the client's would be taken for a bucket name. */
function upstreamTarget(upstream: S3SignatureProxyOptions['upstream']): {
  connect: { socketPath: string } | { host: string; port: number };
  host: string;
} {
  if (typeof upstream !== 'string') return { connect: { socketPath: upstream.socketPath }, host: 'localhost' };
  const url = new URL(upstream);
  if (url.protocol !== 'http:') throw new Error(`upstream must be an http:// URL, got ${upstream}`);
  return {
    connect: { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80) },
    host: url.host,
  };
}
