/**
 * Signature Version 4 as S3 checks it, for requests to the local S3: header auth (`Authorization: AWS4-HMAC-SHA256 …`)
 * and query auth (pre-signed URLs): the canonical request, the string to sign, the signing key, the time window and the
 * expiry. A pure function of the request and the credentials (`verifySigV4`); the proxy in front of s3rver uses it.
 *
 * Over 400 lines on purpose: the canonical request, the string to sign and the checks of S3's two ways to sign are
 * one algorithm. `@smithy/signature-v4` was weighed for the expected signature and not used: it signs a request
 * it is about to send (it picks the headers to sign, normalizes the path and adds its own X-Amz-* values), while a
 * verifier must rebuild the canonical request from what was received: the raw path as sent, exactly the headers
 * listed in SignedHeaders, the client's X-Amz-Date and X-Amz-Expires. The tests sign with the SDK itself
 * (S3Client requests and getSignedUrl URLs through the proxy, test/unit/local/s3-signature-proxy.test.ts) and check
 * this verifier accepts them and refuses them tampered, which is the comparison that matters.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

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

const fail = (code: SigV4ErrorCode, message: string): SigV4Result => ({ ok: false, code, message });

const SIGNATURE_MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your key and signing method.';

/** SigV4 URI encoding (RFC 3986): everything except A-Z a-z 0-9 - _ . ~ is percent-encoded, in UTF-8. */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function decodeComponent(value: string): string {
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
export function parseQuery(query: string): QueryParam[] {
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

/**
 * Derived keys by secret, day, region and service: the same for every request of a day, so four of the six HMACs a
 * check costs are done once a day per engine (as the SDK's signer caches them on its side). Bounded: a flood of
 * made-up scopes empties it rather than grow it.
 */
const signingKeys = new Map<string, Buffer>();
const MAX_SIGNING_KEYS = 64;

function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  const cacheKey = `${secret}\n${date}\n${region}\n${service}`;
  const cached = signingKeys.get(cacheKey);
  if (cached) return cached;
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
  if (signingKeys.size >= MAX_SIGNING_KEYS) signingKeys.clear();
  signingKeys.set(cacheKey, key);
  return key;
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
