/**
 * The proof suites (faults, fuzz, access, load) run in `npm test` at a small size, and at the issue's full size with
 * PROOF_SIZE=full (`npm run test:proof`, or one of `test:faults`, `test:fuzz`, `test:access`, `test:load`).
 */
export const FULL_SIZE = process.env.PROOF_SIZE === 'full';

/** `small` in `npm test`, `full` with PROOF_SIZE=full. */
export function proofSize<T>(small: T, full: T): T {
  return FULL_SIZE ? full : small;
}

/**
 * Prints a suite's figures as a block on stderr, outside jest's console capture, so `npm test` and the closing note
 * can quote them: `[fuzz] 10000 requests: 400 × 9120, 404 × 610, …`.
 */
export function printFigures(suite: string, lines: readonly string[]): void {
  process.stderr.write(`\n${lines.map((line) => `[${suite}${FULL_SIZE ? ', full size' : ''}] ${line}`).join('\n')}\n`);
}
