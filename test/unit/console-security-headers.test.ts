/**
 * The console's security headers (lib/console-security-headers.ts), the one policy CloudFront and the local runtime
 * both send: the CSP lets the page reach its own origin and the Cognito and bucket origins it is given, nothing else;
 * no framing; nosniff; HSTS only over HTTPS.
 */
import { Aws } from 'aws-cdk-lib';
import {
  consoleSecurityHeaders,
  cspSource,
  HSTS_MAX_AGE_SECONDS,
  securityHeaderFields,
} from '../../lib/console-security-headers';

/** The CSP as directive → sources. */
function directives(csp: string): Record<string, string[]> {
  return Object.fromEntries(
    csp.split(';').map((directive) => {
      const [name, ...sources] = directive.trim().split(/\s+/);
      return [name, sources];
    }),
  );
}

const LOCAL = {
  cognito: ['http://127.0.0.1:9229'],
  documents: ['http://127.0.0.1:4569'],
  https: false,
};

it("names the given Cognito and bucket origins in connect-src, and no other origin beyond 'self'", () => {
  const csp = directives(consoleSecurityHeaders(LOCAL).contentSecurityPolicy);
  expect(csp).toEqual({
    'default-src': ["'self'"],
    'script-src': ["'self'"],
    'style-src': ["'self'", "'unsafe-inline'"],
    'img-src': ["'self'", 'data:', 'blob:'],
    'connect-src': ["'self'", 'http://127.0.0.1:9229', 'http://127.0.0.1:4569'],
    'font-src': ["'self'"],
    'object-src': ["'none'"],
    'base-uri': ["'self'"],
    'form-action': ["'self'"],
    'frame-ancestors': ["'none'"],
  });
  // Without peers: the page's own origin only.
  const alone = directives(consoleSecurityHeaders({ https: false }).contentSecurityPolicy);
  expect(alone['connect-src']).toEqual(["'self'"]);
  const everySource = Object.values(alone).flat();
  expect(everySource.filter((source) => /^https?:|\.|:\d/.test(source))).toEqual([]);
  expect(everySource).not.toContain("'unsafe-eval'");
  expect(alone['script-src']).toEqual(["'self'"]);
});

it('reduces a URL to its origin, names it once, and leaves an empty API address (the same origin) out', () => {
  const csp = directives(
    consoleSecurityHeaders({
      api: [''],
      cognito: ['http://127.0.0.1:9229/', 'http://127.0.0.1:9229'],
      documents: ['https://documents.s3.eu-west-1.amazonaws.com/uploads/key?X-Amz-Signature=abc'],
      https: true,
    }).contentSecurityPolicy,
  );
  expect(csp['connect-src']).toEqual([
    "'self'",
    'http://127.0.0.1:9229',
    'https://documents.s3.eu-west-1.amazonaws.com',
  ]);
  expect(
    directives(consoleSecurityHeaders({ api: ['https://api.example.com/prod/'], https: true }).contentSecurityPolicy)[
      'connect-src'
    ],
  ).toEqual(["'self'", 'https://api.example.com']);
});

it('refuses a source that would widen the policy, and keeps a CloudFormation token as written', () => {
  for (const bad of [
    'http://127.0.0.1:1; script-src *',
    'http://a http://b',
    "'unsafe-eval'",
    '*',
    'data:',
    'javascript:alert(1)',
    'ws://127.0.0.1:1',
    'http://a,b',
  ]) {
    expect(() => consoleSecurityHeaders({ cognito: [bad], https: false })).toThrow(/not an http\(s\) origin/);
  }
  // CDK's string form of a token (the region, the bucket's domain), resolved at deploy: kept, and still checked.
  const cognito = `https://cognito-idp.${Aws.REGION}.amazonaws.com`;
  expect(cognito).toMatch(/\$\{Token\[/);
  expect(cspSource(cognito)).toBe(cognito);
  expect(() => cspSource(`${cognito} *`)).toThrow(/not an http\(s\) origin/);
});

it('forbids framing and sniffing, sends the referrer policy, and HSTS only over HTTPS', () => {
  const http = securityHeaderFields(consoleSecurityHeaders(LOCAL));
  expect(http).toEqual({
    'content-security-policy': expect.stringContaining("frame-ancestors 'none'"),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'strict-origin-when-cross-origin',
  });
  expect(consoleSecurityHeaders(LOCAL).strictTransportSecurity).toBeUndefined();

  const https = consoleSecurityHeaders({ ...LOCAL, https: true });
  expect(https.strictTransportSecurity).toEqual({ maxAgeSeconds: HSTS_MAX_AGE_SECONDS, includeSubdomains: true });
  expect(HSTS_MAX_AGE_SECONDS).toBe(31_536_000);
  expect(securityHeaderFields(https)).toEqual({
    ...http,
    'strict-transport-security': 'max-age=31536000; includeSubDomains',
  });
  // The same policy either way: only HSTS differs.
  expect(https.contentSecurityPolicy).toBe(consoleSecurityHeaders(LOCAL).contentSecurityPolicy);
});
