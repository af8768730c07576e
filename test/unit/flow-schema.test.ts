/**
 * The console's properties panel reads web/src/generated/flow-schema.ts, zod's JSON schema of the definition's nodes
 * and edges: a field, enum or description changed in lambdas/core/flows/definition.ts without regenerating fails here.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

it('has web/src/generated/flow-schema.ts generated from the current definition schema', () => {
  const check = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/flow-schema.ts', '--check'], {
    cwd: resolve(__dirname, '../..'),
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' });
});
