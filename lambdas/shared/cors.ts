/**
 * Which browser pages on other origins may read the API's answers: CORS_ALLOWED_ORIGINS, read by the handlers
 * (shared/http.ts), the local router (its preflight and its own answers) and the CDK API (preflight and gateway
 * responses), so that all of them say the same. Unset: none, the console is served from the API's own origin.
 *
 * Tokens are bearer headers that a page must set itself, never cookies, so no answer says
 * Access-Control-Allow-Credentials and `*` is safe to allow: a page of another origin can only send a token it
 * already holds, and the browser sends it nothing on its own.
 */

import { type EnvironmentValues, handlerVariable } from './environment';

export type CorsPolicy =
  /** No cross-origin reads: the default. */
  | { readonly kind: 'same-origin' }
  /** `*`: any page may read the answers. */
  | { readonly kind: 'any' }
  /** Only these origins (`https://console.example.com`), as browsers serialize them. */
  | { readonly kind: 'listed'; readonly origins: readonly string[] };

export const CORS_ALLOWED_ORIGINS_VARIABLE = 'CORS_ALLOWED_ORIGINS';

/**
 * What a request may carry beyond the CORS-safelisted headers: a person names the organization of a request with
 * X-Organization-Id (core/auth/people.ts).
 */
export const CORS_ALLOW_HEADERS: readonly string[] = ['Authorization', 'Content-Type', 'X-Organization-Id'];

/**
 * Headers a client needs to read that are not CORS-safelisted: how long to wait after 429 and 503, and the rate
 * limit's state on every answer of an authenticated route (shared/http.ts).
 */
export const CORS_EXPOSE_HEADERS: readonly string[] = [
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Policy',
];

/** How long a browser may reuse a preflight answer (Chromium caps it at two hours). */
export const CORS_MAX_AGE_SECONDS = 600;

/** The methods a preflight allows: every method of the route table, for every path, as API Gateway's preflight does. */
export function corsAllowMethods(routes: readonly { readonly method: string }[]): string[] {
  return [...new Set(routes.map((route) => route.method))].sort();
}

/**
 * The documents bucket's CORS rule for the pre-signed PUT (lib/constructs/document-storage.ts); the local S3 endpoint
 * (lib/local/s3-signature-proxy.ts) answers by the same rule. Any origin: the signature of the URL, not the page's
 * origin, authorizes the PUT, the bucket sends no cookies, and the console's own origin (CloudFront, or the local
 * runtime's port) is never the bucket's, so the API's list would not fit it.
 */
export const UPLOAD_CORS_RULE = {
  allowedMethods: ['PUT'],
  allowedOrigins: ['*'],
  allowedHeaders: ['*'],
  maxAgeSeconds: 3000,
} as const;

/**
 * Parses a comma-separated list of origins, `*`, or nothing. Throws, naming the variable and the entry, on what is not
 * an origin: a path, a query, credentials, a wildcard inside a name, `null` (the origin of sandboxed frames and local
 * files, which any such page would share), or `*` mixed with origins.
 */
export function parseCorsAllowedOrigins(raw: string | undefined, source = CORS_ALLOWED_ORIGINS_VARIABLE): CorsPolicy {
  const entries = (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) return { kind: 'same-origin' };
  if (entries.includes('*')) {
    if (entries.length > 1) throw new Error(`Invalid configuration: ${source} is either * alone or a list of origins`);
    return { kind: 'any' };
  }
  const origins = entries.map((entry) => {
    const invalid = (why: string) =>
      new Error(`Invalid configuration: ${source} entry "${entry}" ${why}; write it as scheme://host[:port]`);
    if (entry.includes('*')) throw invalid('has a wildcard, which only * alone means');
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw invalid('is not an origin');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('is not an http(s) origin');
    if (url.username || url.password || url.search || url.hash || !/^[^/]+\/\/[^/]+\/?$/.test(entry)) {
      throw invalid('has more than an origin');
    }
    // Browsers send the origin lower-cased and without a default port; so is the entry compared.
    return url.origin;
  });
  return { kind: 'listed', origins: [...new Set(origins)] };
}

let cached: { raw: string | undefined; policy: CorsPolicy } | undefined;

/** The policy of this process's environment, parsed once per value. */
export function corsPolicyFromEnv(env?: EnvironmentValues): CorsPolicy {
  // One variable, not the whole environment: this is read on every request.
  const raw = env ? env[CORS_ALLOWED_ORIGINS_VARIABLE] : handlerVariable(CORS_ALLOWED_ORIGINS_VARIABLE);
  if (cached === undefined || cached.raw !== raw) cached = { raw, policy: parseCorsAllowedOrigins(raw) };
  return cached.policy;
}

/** The Access-Control-Allow-Origin a request from `origin` gets, or undefined when it may not read the answer. */
export function allowedOrigin(policy: CorsPolicy, origin: string | undefined): string | undefined {
  if (policy.kind === 'any') return '*';
  if (policy.kind === 'listed' && origin !== undefined && policy.origins.includes(origin)) return origin;
  return undefined;
}

/**
 * Headers of an actual answer (success or error) to a request from `origin`. With a list the answer differs by
 * origin, so it says `Vary: Origin` whether or not this origin is listed, or a cache could hand one origin's answer
 * to another.
 */
export function corsResponseHeaders(policy: CorsPolicy, origin: string | undefined): Record<string, string> {
  const allowed = allowedOrigin(policy, origin);
  return {
    ...(policy.kind === 'listed' ? { vary: 'Origin' } : {}),
    ...(allowed
      ? { 'access-control-allow-origin': allowed, 'access-control-expose-headers': CORS_EXPOSE_HEADERS.join(',') }
      : {}),
  };
}

/** Headers of a preflight answer (OPTIONS) from `origin`; without Allow-Origin when the origin is not allowed. */
export function corsPreflightHeaders(
  policy: CorsPolicy,
  origin: string | undefined,
  methods: readonly string[],
): Record<string, string> {
  const allowed = allowedOrigin(policy, origin);
  return {
    ...(policy.kind === 'listed' ? { vary: 'Origin' } : {}),
    ...(allowed
      ? {
          'access-control-allow-origin': allowed,
          'access-control-allow-methods': methods.join(','),
          'access-control-allow-headers': CORS_ALLOW_HEADERS.join(','),
          'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
        }
      : {}),
  };
}

/**
 * The one Access-Control-Allow-Origin value of answers the API's edge makes without running any code of ours (API
 * Gateway's gateway responses, WAF's block response), which can only carry a fixed value: the origin when one is
 * listed, `*` when any or several are. Those answers are fixed error texts (401, 403, 429, 5xx) that hold no data, so
 * `*` lets every listed console read them and lets no page read anything it could not have guessed; what carries
 * data comes from the handlers, which answer the list exactly.
 */
export function edgeAllowOrigin(policy: CorsPolicy): string | undefined {
  if (policy.kind === 'same-origin') return undefined;
  if (policy.kind === 'listed' && policy.origins.length === 1) return policy.origins[0];
  return '*';
}
