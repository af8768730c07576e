/**
 * The agent SDK's event types (packages/agent-sdk/src/generated/events.ts) are what openapi-typescript makes of the
 * schemas the platform builds the events and checks the answers with (lambdas/core/flows/agent-events.ts): a field
 * changed there without `npm run sdk:types` fails here.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

it('has packages/agent-sdk/src/generated/events.ts generated from the current agent event schemas', () => {
  const check = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/sdk-types.ts', '--check'], {
    cwd: resolve(__dirname, '../..'),
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' });
});
