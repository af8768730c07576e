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
 *
 * Its error bodies, CORS answers and key refusals are in s3-answers.ts; what it hands on to s3rver, s3-upstream.ts.
 */
import {
  Agent,
  type ClientRequest,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { type GuardServer, listenGuard } from './guard-server';
import { answerPreflight, INTERNAL_ERROR, keyRefusal, STATUS, sendError, setCorsHeaders } from './s3-answers';
import { asUpstream, forwardHeaders, HOP_BY_HOP, isPartUpload, type S3Upstream, upstreamTarget } from './s3-upstream';
import { verifySigV4 } from './sigv4-verifier';

export interface S3SignatureProxyOptions {
  /** Where s3rver answers: a base URL (http://127.0.0.1:45678), or a Unix socket. */
  upstream: S3Upstream;
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

export type S3SignatureProxy = GuardServer;

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
  // An idle socket is closed by the agent after 30 s (Node destroys a free socket on its timeout), before s3rver's
  // server would close it (65 s, engines.ts): a request never goes out on a socket the server is closing.
  const agent = new Agent({ keepAlive: true, timeout: 30_000 });
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

  return listenGuard(handle, { host: options.host, port: options.port, agent });
}
