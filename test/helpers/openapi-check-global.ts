/**
 * The run's frame of the answer check (test/helpers/openapi-check.ts, README, "Tests"): the global setup makes the
 * folder every runtime and handler check of the run records in; the teardown sums what was checked, prints
 * `openapi-check: N answers checked, M violations`, and fails the run with any violation no suite reported (a runtime
 * a suite never stopped).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RUN_DIR_VARIABLE = 'OPENAPI_CHECK_RUN_DIR';

export function setup(): void {
  process.env[RUN_DIR_VARIABLE] = mkdtempSync(join(tmpdir(), 'openapi-check-'));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

/** What the recorders under `dir` checked: answers, violations, and the violations no one reported yet. */
export function checkedUnder(dir: string): { checked: number; violations: number; unreported: string[] } {
  let checked = 0;
  let violations = 0;
  const unreported: string[] = [];
  for (const file of filesUnder(dir)) {
    const name = file.slice(file.lastIndexOf('/') + 1);
    if (/^checked-.+\.json$/.test(name)) {
      const counts = JSON.parse(readFileSync(file, 'utf8')) as { checked: number; violations: number };
      checked += counts.checked;
      violations += counts.violations;
    } else if (/^violations-.+\.jsonl$/.test(name)) {
      unreported.push(
        ...readFileSync(file, 'utf8')
          .split('\n')
          .filter((line) => line.trim()),
      );
    }
  }
  return { checked, violations, unreported };
}

export function teardown(): void {
  const dir = process.env[RUN_DIR_VARIABLE];
  if (!dir) return;
  const { checked, violations, unreported } = checkedUnder(dir);
  rmSync(dir, { recursive: true, force: true });
  console.log(`openapi-check: ${checked} answers checked, ${violations} violations`);
  if (unreported.length > 0) {
    throw new Error(
      `openapi-check: ${unreported.length} violation(s) of a runtime no suite stopped:\n${unreported.join('\n')}`,
    );
  }
}
