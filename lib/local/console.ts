/**
 * The web console on the local runtime (docs/console.md): web/dist at `/`, next to the API on the same origin, and
 * `/config.json`, what the console needs to know of this runtime (its Cognito). A browser's navigation to a path
 * of the console (`Accept: text/html`) gets index.html, which routes it; anything else that is not a file of the
 * console goes on to the API's router, so API clients keep its JSON 404 for an unknown path. The API's own prefixes
 * (`/api/`, `/dashboard/`, `/health`) never reach the console.
 */
import { existsSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import sirv from 'sirv';
import type { ConsoleConfig } from '../../web/src/config';
import { WEB_DIST } from './console-build';

// What `/config.json` answers: the console's own type (web/src/config.ts), so runtime and console cannot disagree.
export type { ConsoleConfig } from '../../web/src/config';

const API_PREFIXES = ['/api/', '/dashboard/'];

/** Serves the console; returns false for a request that is the API's. */
export type ConsoleHandler = (request: IncomingMessage, response: ServerResponse) => boolean;

export function consoleHandler(config: ConsoleConfig, dist = WEB_DIST): ConsoleHandler {
  const built = existsSync(join(dist, 'index.html'));
  const files = built ? sirv(dist, { etag: true, dotfiles: false }) : undefined;
  const index = built ? sirv(dist, { single: true, etag: true }) : undefined;
  const configBody = JSON.stringify(config);
  return (request, response) => {
    const method = request.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') return false;
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path === '/health' || API_PREFIXES.some((prefix) => path.startsWith(prefix))) return false;
    if (path === '/config.json') {
      response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      response.end(method === 'HEAD' ? undefined : configBody);
      return true;
    }
    if (!files || !index) return false;
    const wantsPage = String(request.headers.accept ?? '').includes('text/html');
    let handled = true;
    files(request, response, () => {
      handled = false;
    });
    if (handled) return true;
    if (!wantsPage) return false;
    index(request, response, () => {
      response.writeHead(404).end();
    });
    return true;
  };
}
