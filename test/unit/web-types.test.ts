/**
 * The API types of the console (web/src/generated/api.ts) and of the typed client (clients/typescript/src/generated/
 * api.ts) are what openapi-typescript makes of the service's OpenAPI document now: a route, parameter or body field
 * changed without `npm run web:types` fails here.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

it('has the console’s and the client’s generated/api.ts generated from the current OpenAPI document', () => {
  const check = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/web-types.ts', '--check'], {
    cwd: resolve(__dirname, '../..'),
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' });
});
