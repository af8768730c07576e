/**
 * The web console on the local runtime (docs/console.md): web/dist at `/`, next to the API on the same origin, and
 * `/config.json`, what the console needs to know of this runtime (its Cognito). A browser's navigation to a path
 * of the console (`Accept: text/html`) gets index.html, which routes it; anything else that is not a file of the
 * console goes on to the API's router, so API clients keep its JSON 404 for an unknown path. The API's own prefixes
 * (`/api/`, `/dashboard/`, `/health`) never reach the console. Every answer of the console carries its security
 * headers (`localConsoleHeaders`: a CSP, no framing, nosniff), those CloudFront sends in AWS less HSTS (this is http).
 */
import { existsSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import sirv from 'sirv';
import type { ConsoleConfig } from '../../web/src/config';
import { consoleSecurityHeaders, securityHeaderFields } from '../console-security-headers';
import { WEB_DIST } from './console-build';

// What `/config.json` answers: the console's own type (web/src/config.ts), so runtime and console cannot disagree.
export type { ConsoleConfig } from '../../web/src/config';

const API_PREFIXES = ['/api/', '/dashboard/'];

/** Serves the console; returns false for a request that is the API's. */
export type ConsoleHandler = (request: IncomingMessage, response: ServerResponse) => boolean;

export interface ConsoleHandlerOptions {
  /** The local S3 endpoint an upload's pre-signed URL points at (`EngineEndpoints.s3Endpoint`): the CSP allows it. */
  readonly uploads?: string;
  /** The built console (default web/dist). */
  readonly dist?: string;
}

/**
 * The console's security headers (lib/console-security-headers.ts, CloudFront's too) for this runtime: the page may
 * reach its own origin, cognito-local and the S3 endpoint; no HSTS, the runtime is http.
 */
export function localConsoleHeaders(config: ConsoleConfig, uploads?: string): Record<string, string> {
  return securityHeaderFields(
    consoleSecurityHeaders({
      api: config.apiUrl ? [config.apiUrl] : [],
      cognito: config.cognito?.endpoint ? [config.cognito.endpoint] : [],
      documents: uploads ? [uploads] : [],
      https: false,
    }),
  );
}

export function consoleHandler(config: ConsoleConfig, options: ConsoleHandlerOptions = {}): ConsoleHandler {
  const dist = options.dist ?? WEB_DIST;
  const built = existsSync(join(dist, 'index.html'));
  const files = built ? sirv(dist, { etag: true, dotfiles: false }) : undefined;
  const index = built ? sirv(dist, { single: true, etag: true }) : undefined;
  const configBody = JSON.stringify(config);
  const security = localConsoleHeaders(config, options.uploads);
  // Set before sirv answers (its 304s included, which take no headers of their own), taken back when the request
  // turns out to be the API's: every answer of the console carries them, and only those.
  const secure = (response: ServerResponse) => {
    for (const [name, value] of Object.entries(security)) response.setHeader(name, value);
  };
  const release = (response: ServerResponse) => {
    for (const name of Object.keys(security)) response.removeHeader(name);
  };
  return (request, response) => {
    const method = request.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') return false;
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path === '/health' || API_PREFIXES.some((prefix) => path.startsWith(prefix))) return false;
    if (path === '/config.json') {
      response.writeHead(200, { ...security, 'content-type': 'application/json', 'cache-control': 'no-store' });
      response.end(method === 'HEAD' ? undefined : configBody);
      return true;
    }
    if (!files || !index) return false;
    const wantsPage = String(request.headers.accept ?? '').includes('text/html');
    let handled = true;
    secure(response);
    files(request, response, () => {
      handled = false;
    });
    if (handled) return true;
    if (!wantsPage) {
      release(response);
      return false;
    }
    index(request, response, () => {
      response.writeHead(404).end();
    });
    return true;
  };
}
