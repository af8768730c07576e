/**
 * The command line of a generated file (scripts/web-types.ts, scripts/sdk-types.ts): write it, or with `--check`
 * exit 1 when the committed file differs from what would be generated (a test runs each check).
 */
import { readFileSync, writeFileSync } from 'node:fs';

export function writeOrCheck(file: string, generate: () => Promise<string>, command: string): void {
  const check = process.argv.includes('--check');
  generate()
    .then((generated) => {
      if (!check) {
        writeFileSync(file, generated);
        console.log(`wrote ${file}`);
        return 0;
      }
      let committed = '';
      try {
        committed = readFileSync(file, 'utf8');
      } catch {
        // missing: stale
      }
      if (committed === generated) return 0;
      console.error(`${file} is stale: run ${command}`);
      return 1;
    })
    .then(
      (code) => process.exit(code),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
}
