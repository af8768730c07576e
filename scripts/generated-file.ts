/**
 * The command line of a generated file (scripts/web-types.ts, scripts/sdk-types.ts): write it, or with `--check`
 * exit 1 when the committed file differs from what would be generated (a test runs each check). One generation may
 * be kept in several files (the console's and the typed client's API types): each is written, or checked.
 */
import { readFileSync, writeFileSync } from 'node:fs';

export function writeOrCheck(
  files: string | readonly string[],
  generate: () => Promise<string>,
  command: string,
): void {
  const check = process.argv.includes('--check');
  generate()
    .then((generated) => {
      let code = 0;
      for (const file of typeof files === 'string' ? [files] : files) {
        if (!check) {
          writeFileSync(file, generated);
          console.log(`wrote ${file}`);
          continue;
        }
        let committed = '';
        try {
          committed = readFileSync(file, 'utf8');
        } catch {
          // missing: stale
        }
        if (committed === generated) continue;
        console.error(`${file} is stale: run ${command}`);
        code = 1;
      }
      return code;
    })
    .then(
      (code) => process.exit(code),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
}
