/**
 * What the local S3 proxy answers besides s3rver's own answers: S3's XML error bodies with their statuses, CORS
 * preflights and headers (as a bucket CORS rule allowing any origin would), and the refusal of keys S3 or the disk
 * cannot take (KeyTooLongError).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { UPLOAD_CORS_RULE } from '#shared/cors';
import type { SigV4ErrorCode } from './sigv4-verifier';

/** S3's longest key, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024;

/**
 * The longest name of one file or folder on the disk store (NAME_MAX of Linux and macOS file systems). s3rver stores
 * a key's last segment as `<segment>._S3rver_metadata.json`, 22 bytes longer, so that segment may have 233.
 */
const NAME_MAX = 255;

const STORE_SUFFIX_BYTES = '._S3rver_metadata.json'.length;

/** HTTP status S3 answers each error code with. */
export const STATUS: Record<SigV4ErrorCode, number> = {
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
export function sendError(
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

export const INTERNAL_ERROR = 'We encountered an internal error. Please try again.';

const CORS_VARY = 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method';

const corsAllows = (allowed: readonly string[], value: string): boolean =>
  allowed.includes('*') || allowed.some((item) => item.toLowerCase() === value.toLowerCase());

/**
 * A CORS preflight, answered as S3 answers it for the documents bucket's rule (UPLOAD_CORS_RULE, which the CDK
 * bucket has too): s3rver's bucket has no CORS configuration, so without this a browser page could not PUT to an
 * upload URL locally although it can in AWS. Like S3, no signature is asked of a preflight.
 */
export function answerPreflight(req: IncomingMessage, res: ServerResponse): void {
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
export function setCorsHeaders(req: IncomingMessage, res: ServerResponse): void {
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
export function keyRefusal(
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
