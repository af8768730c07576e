/**
 * A SigV4 check in front of s3rver. s3rver only looks at the access key id and the expiry of a request and never
 * recomputes a Signature Version 4 signature, so without this proxy a tampered pre-signed URL (another key, another
 * content type, a longer expiry) would be accepted locally although S3 rejects it. The proxy verifies header auth
 * (`Authorization: AWS4-HMAC-SHA256 …`) and query auth (pre-signed URLs) the way S3 does, answers rejections with
 * S3's XML error body, and streams accepted requests to s3rver and its responses back, without buffering bodies.
 * It also does what s3rver leaves out of a PUT: the conditional write `If-None-Match: *` (412 when the key exists),
 * which makes the service's upload URLs write-once; S3's key length limit (KeyTooLongError) and a cap on what one
 * request may store (EntityTooLarge), counted while the body streams through.
 *
 * s3rver knows one fixed key pair; the proxy verifies requests against the data folder's own credentials and hands
 * them on under s3rver's key id (s3rver never recomputes a V4 signature, so the signature itself is left as it is).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
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

export type SigV4ErrorCode =
  | 'AccessDenied'
  | 'SignatureDoesNotMatch'
  | 'InvalidAccessKeyId'
  | 'AuthorizationQueryParametersError'
  | 'AuthorizationHeaderMalformed'
  | 'MissingSecurityHeader'
  | 'RequestTimeTooSkewed'
  | 'InvalidArgument';

export type SigV4Result = { ok: true } | { ok: false; code: SigV4ErrorCode; message: string };

export interface SigV4Request {
  method: string;
  /** The raw path, exactly as received (still percent-encoded). */
  path: string;
  /** The raw query string, without '?'. */
  query: string;
  /** Header names in lower case, as node:http gives them. Repeated headers may be given as arrays. */
  headers: Record<string, string | string[] | undefined>;
}

export interface SigV4VerifyOptions {
  credentials: { accessKeyId: string; secretAccessKey: string };
  region: string;
  /** Signing service name, default 's3'. */
  service?: string;
  /** Current time, default the wall clock. */
  now?: Date;
  /** Longest accepted X-Amz-Expires, default 604800. */
  maxPresignExpiresSeconds?: number;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
const MAX_SKEW_MS = 15 * 60 * 1000;
const DEFAULT_MAX_PRESIGN_EXPIRES = 604800;

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

const fail = (code: SigV4ErrorCode, message: string): SigV4Result => ({ ok: false, code, message });

const SIGNATURE_MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your key and signing method.';

/** SigV4 URI encoding (RFC 3986): everything except A-Z a-z 0-9 - _ . ~ is percent-encoded, in UTF-8. */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function decodeComponent(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value; // malformed escapes: sign the text as it is (it will simply not match)
  }
}

interface QueryParam {
  key: string;
  value: string;
}

/** Parses a raw query string into decoded pairs; a parameter without '=' has the empty value. */
function parseQuery(query: string): QueryParam[] {
  if (query === '') return [];
  return query
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const eq = part.indexOf('=');
      return eq < 0
        ? { key: decodeComponent(part), value: '' }
        : { key: decodeComponent(part.slice(0, eq)), value: decodeComponent(part.slice(eq + 1)) };
    });
}

function canonicalQueryString(params: QueryParam[], exclude?: string): string {
  return params
    .filter((p) => p.key !== exclude)
    .map((p) => [uriEncode(p.key), uriEncode(p.value)] as const)
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

function headerValues(headers: SigV4Request['headers'], name: string): string[] | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value : [value];
}

function firstHeader(headers: SigV4Request['headers'], name: string): string | undefined {
  return headerValues(headers, name)?.[0];
}

/** `name:value` lines of the signed headers; undefined names the first signed header the request lacks. */
function canonicalHeaders(
  headers: SigV4Request['headers'],
  signedHeaders: string[],
): { ok: true; text: string } | { ok: false; missing: string } {
  let text = '';
  for (const name of signedHeaders) {
    const values = headerValues(headers, name);
    if (values === undefined) return { ok: false, missing: name };
    text += `${name}:${values.map((v) => v.trim().replace(/\s+/g, ' ')).join(',')}\n`;
  }
  return { ok: true, text };
}

const sha256Hex = (data: string): string => createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
}

function constantTimeEqual(provided: string, expected: string): boolean {
  const a = Buffer.from(provided, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  // Lengths are public (a SigV4 signature is always 64 hex characters); the contents are compared in constant time.
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Parses an ISO 8601 basic timestamp, yyyyMMdd'T'HHmmss'Z'. */
function parseAmzDate(value: string | undefined): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value ?? '');
  if (!m) return undefined;
  const time = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  return Number.isNaN(time) ? undefined : new Date(time);
}

interface Scope {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  text: string;
}

function parseCredential(credential: string): Scope | undefined {
  const parts = credential.split('/');
  if (parts.length !== 5 || parts[4] !== 'aws4_request' || parts.some((p) => p === '')) return undefined;
  const [accessKeyId, date, region, service] = parts;
  return { accessKeyId, date, region, service, text: parts.slice(1).join('/') };
}

interface SignatureInput {
  method: string;
  path: string;
  canonicalQuery: string;
  headers: SigV4Request['headers'];
  signedHeaders: string;
  payloadHash: string;
  amzDate: string;
  scope: Scope;
  provided: string;
  /** Error code of a malformed credential scope: query auth and header auth name it differently. */
  malformed: SigV4ErrorCode;
}

function checkSignature(input: SignatureInput, opts: SigV4VerifyOptions): SigV4Result {
  const { scope } = input;
  if (scope.accessKeyId !== opts.credentials.accessKeyId) {
    return fail('InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  }
  const service = opts.service ?? 's3';
  if (scope.region !== opts.region) {
    return fail(
      input.malformed,
      `The authorization is malformed; the region '${scope.region}' is wrong; expecting '${opts.region}'`,
    );
  }
  if (scope.service !== service) {
    return fail(
      input.malformed,
      `The authorization is malformed; incorrect service '${scope.service}'. This endpoint belongs to '${service}'.`,
    );
  }
  if (scope.date !== input.amzDate.slice(0, 8)) {
    return fail(
      input.malformed,
      `The authorization is malformed; invalid date '${scope.date}' in the credential scope; expecting '${input.amzDate.slice(0, 8)}'`,
    );
  }
  const signedHeaders = input.signedHeaders.split(';');
  if (
    signedHeaders.some((h) => h === '' || h !== h.toLowerCase()) ||
    signedHeaders.some((h, i) => i > 0 && signedHeaders[i - 1] >= h)
  ) {
    return fail(input.malformed, 'SignedHeaders must be lower-case header names, sorted and separated by semicolons.');
  }
  if (!signedHeaders.includes('host')) {
    return fail('AccessDenied', 'There were headers present in the request which were not signed: host');
  }
  // S3 requires every x-amz-* header of a request to be signed: an unsigned x-amz-meta-* (or x-amz-acl, …) added to a
  // pre-signed PUT is refused, so a URL cannot be made to store metadata it was not issued with. The payload hash
  // header is bound by the signature anyway (it is the canonical request's last line).
  // (x-amz-* query parameters, which s3rver also reads as headers, are part of the canonical query string.)
  const unsigned = Object.keys(input.headers)
    .filter((name) => name.startsWith('x-amz-') && name !== 'x-amz-content-sha256' && !signedHeaders.includes(name))
    .sort();
  if (unsigned.length > 0) {
    return fail(
      'AccessDenied',
      `There were headers present in the request which were not signed: ${unsigned.join(', ')}`,
    );
  }
  const canonical = canonicalHeaders(input.headers, signedHeaders);
  if (!canonical.ok)
    return fail('SignatureDoesNotMatch', `${SIGNATURE_MISMATCH} Signed header missing: ${canonical.missing}`);

  const canonicalRequest = [
    input.method,
    // S3 signs the path exactly as sent: no normalisation, no second round of encoding (unlike other services).
    input.path === '' ? '/' : input.path,
    input.canonicalQuery,
    canonical.text,
    input.signedHeaders,
    input.payloadHash,
  ].join('\n');
  const stringToSign = [ALGORITHM, input.amzDate, scope.text, sha256Hex(canonicalRequest)].join('\n');
  const expected = createHmac(
    'sha256',
    signingKey(opts.credentials.secretAccessKey, scope.date, scope.region, scope.service),
  )
    .update(stringToSign, 'utf8')
    .digest('hex');
  return constantTimeEqual(input.provided, expected) ? { ok: true } : fail('SignatureDoesNotMatch', SIGNATURE_MISMATCH);
}

function verifyQueryAuth(req: SigV4Request, params: QueryParam[], opts: SigV4VerifyOptions, now: Date): SigV4Result {
  const get = (name: string): string | undefined => params.find((p) => p.key === name)?.value;
  if (get('X-Amz-Algorithm') !== ALGORITHM) {
    return fail('AuthorizationQueryParametersError', `X-Amz-Algorithm only supports "${ALGORITHM}"`);
  }
  const credential = get('X-Amz-Credential');
  const amzDate = get('X-Amz-Date');
  const expiresText = get('X-Amz-Expires');
  const signedHeaders = get('X-Amz-SignedHeaders');
  const signature = get('X-Amz-Signature');
  if (
    credential === undefined ||
    amzDate === undefined ||
    expiresText === undefined ||
    signedHeaders === undefined ||
    signature === undefined
  ) {
    return fail(
      'AuthorizationQueryParametersError',
      'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, ' +
        'X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
    );
  }
  const scope = parseCredential(credential);
  if (!scope) {
    return fail(
      'AuthorizationQueryParametersError',
      'Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".',
    );
  }
  const signedAt = parseAmzDate(amzDate);
  if (!signedAt) {
    return fail(
      'AuthorizationQueryParametersError',
      "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"",
    );
  }
  if (!/^\d+$/.test(expiresText)) {
    return fail('AuthorizationQueryParametersError', 'X-Amz-Expires should be a number');
  }
  const expires = Number(expiresText);
  const max = opts.maxPresignExpiresSeconds ?? DEFAULT_MAX_PRESIGN_EXPIRES;
  if (expires > max) {
    return fail(
      'AuthorizationQueryParametersError',
      `X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than ${max} seconds`,
    );
  }
  if (signedAt.getTime() - now.getTime() > MAX_SKEW_MS) {
    return fail('AccessDenied', 'Request is not valid yet');
  }
  if (now.getTime() > signedAt.getTime() + expires * 1000) {
    return fail('AccessDenied', 'Request has expired');
  }
  return checkSignature(
    {
      method: req.method,
      path: req.path,
      canonicalQuery: canonicalQueryString(params, 'X-Amz-Signature'),
      headers: req.headers,
      signedHeaders,
      // Pre-signed URLs do not sign the body; a client may still name a hash, which then takes part in the signature.
      payloadHash: get('X-Amz-Content-Sha256') ?? UNSIGNED_PAYLOAD,
      amzDate,
      scope,
      provided: signature,
      malformed: 'AuthorizationQueryParametersError',
    },
    opts,
  );
}

function verifyHeaderAuth(
  req: SigV4Request,
  authorization: string,
  params: QueryParam[],
  opts: SigV4VerifyOptions,
  now: Date,
): SigV4Result {
  const space = authorization.indexOf(' ');
  const algorithm = space < 0 ? authorization : authorization.slice(0, space);
  if (algorithm !== ALGORITHM) {
    return fail(
      'AccessDenied',
      `Unsupported authorization type '${algorithm}': the local S3 endpoint accepts ${ALGORITHM} only.`,
    );
  }
  const components = new Map<string, string>();
  for (const part of authorization.slice(space + 1).split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) components.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credential = components.get('Credential');
  const signedHeaders = components.get('SignedHeaders');
  const signature = components.get('Signature');
  if (credential === undefined || signedHeaders === undefined || signature === undefined) {
    return fail(
      'AuthorizationHeaderMalformed',
      'The authorization header is malformed; the authorization header requires three components: Credential, SignedHeaders, and Signature.',
    );
  }
  const scope = parseCredential(credential);
  if (!scope) {
    return fail(
      'AuthorizationHeaderMalformed',
      'The authorization header is malformed; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".',
    );
  }
  const amzDate = firstHeader(req.headers, 'x-amz-date');
  const signedAt = parseAmzDate(amzDate);
  if (amzDate === undefined || !signedAt) {
    return fail('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  }
  const payloadHash = firstHeader(req.headers, 'x-amz-content-sha256');
  if (payloadHash === undefined) {
    return fail('MissingSecurityHeader', 'Missing required header for this request: x-amz-content-sha256');
  }
  if (!/^(UNSIGNED-PAYLOAD|STREAMING-[A-Z0-9-]+|[0-9a-f]{64})$/.test(payloadHash)) {
    return fail(
      'InvalidArgument',
      'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-…, or a valid sha256 value.',
    );
  }
  if (Math.abs(now.getTime() - signedAt.getTime()) > MAX_SKEW_MS) {
    return fail('RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
  }
  // The payload hash is taken from x-amz-content-sha256 as sent; the body itself is not hashed here. The signature
  // still binds that claimed hash, so a forged or altered request (path, query, signed headers, credentials, the hash
  // value) is rejected. What is not caught is a body altered in transit with the header left alone — on a loopback
  // connection between a local client and this proxy nobody sits in between, and checking it would mean hashing every
  // upload before s3rver may keep it (or buffering 50 MB bodies). Real S3 does it; this local engine does not need to.
  // STREAMING-* (aws-chunked) uploads: only the seed signature (the Authorization header) is checked here, the chunk
  // signatures in the body are not.
  return checkSignature(
    {
      method: req.method,
      path: req.path,
      canonicalQuery: canonicalQueryString(params),
      headers: req.headers,
      signedHeaders,
      payloadHash,
      amzDate,
      scope,
      provided: signature,
      malformed: 'AuthorizationHeaderMalformed',
    },
    opts,
  );
}

/** Verifies the SigV4 signature of an S3 request, by `Authorization` header or by query string (pre-signed URL). */
export function verifySigV4(req: SigV4Request, opts: SigV4VerifyOptions): SigV4Result {
  const now = opts.now ?? new Date();
  const params = parseQuery(req.query);
  const authorization = firstHeader(req.headers, 'authorization');
  const byQuery = params.some(
    (p) => p.key === 'X-Amz-Algorithm' || p.key === 'X-Amz-Signature' || p.key === 'X-Amz-Credential',
  );
  if (authorization !== undefined && byQuery) {
    return fail(
      'InvalidArgument',
      'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified',
    );
  }
  if (authorization !== undefined) return verifyHeaderAuth(req, authorization, params, opts, now);
  if (byQuery) return verifyQueryAuth(req, params, opts, now);
  if (params.some((p) => p.key === 'Signature' || p.key === 'AWSAccessKeyId')) {
    return fail(
      'AccessDenied',
      `Signature version 2 is not supported: the local S3 endpoint accepts ${ALGORITHM} only.`,
    );
  }
  return fail('AccessDenied', 'Access Denied');
}

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
