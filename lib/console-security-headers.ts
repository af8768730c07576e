/**
 * The web console's security headers (docs/console.md), one policy for both places that serve the console: CloudFront's
 * response headers policy (lib/constructs/console-site.ts) and the local runtime (lib/local/console.ts). Plain
 * TypeScript, no CDK: the local runtime imports it, and no Lambda does (lambdas/ reads lib/ only for the route table).
 *
 * The page reaches its own origin (the console's files, `/config.json` and the API, which share it), Cognito for
 * sign-in and the documents bucket for an upload's pre-signed PUT, and nothing else. The origins are given by the
 * caller: in AWS CloudFormation tokens (the region, the bucket's regional domain name), locally cognito-local's and
 * the S3 endpoint's addresses.
 */

/** What the page talks to beside its own origin. */
export interface ConsolePeers {
  /** The API where it is not on the page's own origin (`ConsoleConfig.apiUrl`; empty or absent: the same origin). */
  readonly api?: readonly string[];
  /** Sign-in: Cognito's regional endpoint in AWS, cognito-local's address locally. */
  readonly cognito?: readonly string[];
  /** Uploads (pre-signed PUT URLs): the documents bucket in AWS, the local S3 endpoint locally. */
  readonly documents?: readonly string[];
  /**
   * Whether the page is served over HTTPS (CloudFront): only then is HSTS sent. Never on the local runtime's http: a
   * browser ignores it there anyway, and a host name pinned to HTTPS would break every other local server on it.
   */
  readonly https: boolean;
}

export interface ConsoleSecurityHeaders {
  readonly contentSecurityPolicy: string;
  /** No page of any origin, the console's own included, may frame the console (with CSP's `frame-ancestors`). */
  readonly frameOptions: 'DENY';
  readonly contentTypeOptions: 'nosniff';
  readonly referrerPolicy: 'strict-origin-when-cross-origin';
  /** Only over HTTPS (`ConsolePeers.https`). */
  readonly strictTransportSecurity?: { readonly maxAgeSeconds: number; readonly includeSubdomains: boolean };
}

/** A year, as CloudFront sent before this module (and the least HSTS preload lists take). */
export const HSTS_MAX_AGE_SECONDS = 365 * 24 * 60 * 60;

/** How CDK writes a token into a string (`${Token[AWS.Region.8]}`): resolved at deploy, not a URL yet. */
const CDK_TOKEN = /\$\{Token\[/;

/**
 * An origin as a CSP source: `http(s)://host[:port]`, a URL's path dropped. A CloudFormation token inside it (CDK's
 * `${Token[…]}`) is kept as written. Anything that could end the directive or add another source (a space, `;`,
 * `,`, a quote) is refused, so a caller cannot widen the policy by accident.
 */
export function cspSource(origin: string): string {
  if (!/^https?:\/\/[^\s;,'"]+$/.test(origin)) {
    throw new Error(`not an http(s) origin the console's CSP can name: ${JSON.stringify(origin)}`);
  }
  if (CDK_TOKEN.test(origin)) return origin;
  return new URL(origin).origin;
}

export function consoleSecurityHeaders(peers: ConsolePeers): ConsoleSecurityHeaders {
  const connect = [
    ...new Set(
      [...(peers.api ?? []), ...(peers.cognito ?? []), ...(peers.documents ?? [])].filter(Boolean).map(cspSource),
    ),
  ];
  const contentSecurityPolicy = [
    "default-src 'self'",
    // Vite's build has no inline script (web/dist/index.html loads its entry chunk by src), no eval.
    "script-src 'self'",
    // Mantine writes its CSS variables into a <style> element at run time, and Mantine, React Flow and CodeMirror set
    // style attributes; a nonce cannot reach a file CloudFront serves as it is. No script runs from a style.
    "style-src 'self' 'unsafe-inline'",
    // data: CodeMirror's lint underline (an SVG data URL in its style); blob: only what the page itself makes.
    "img-src 'self' data: blob:",
    ["connect-src 'self'", ...connect].join(' '),
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
  return {
    contentSecurityPolicy,
    frameOptions: 'DENY',
    contentTypeOptions: 'nosniff',
    referrerPolicy: 'strict-origin-when-cross-origin',
    ...(peers.https
      ? { strictTransportSecurity: { maxAgeSeconds: HSTS_MAX_AGE_SECONDS, includeSubdomains: true } }
      : {}),
  };
}

/** The headers as an HTTP response carries them (lower-case names), as CloudFront writes them. */
export function securityHeaderFields(headers: ConsoleSecurityHeaders): Record<string, string> {
  const hsts = headers.strictTransportSecurity;
  return {
    'content-security-policy': headers.contentSecurityPolicy,
    'x-frame-options': headers.frameOptions,
    'x-content-type-options': headers.contentTypeOptions,
    'referrer-policy': headers.referrerPolicy,
    ...(hsts
      ? {
          'strict-transport-security': `max-age=${hsts.maxAgeSeconds}${hsts.includeSubdomains ? '; includeSubDomains' : ''}`,
        }
      : {}),
  };
}
