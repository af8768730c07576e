/**
 * A benchmark's client in a process of its own: `runInChild(script, args)` writes `args` to a JSON file, runs
 * `tsx <script> <in.json> <out.json>` and reads back what the script wrote. Apart from the local runtime, so that the
 * CPU the runtime's processes spend is the service's alone, and the client's sockets and JSON do not queue on the
 * event loop that serves the requests (bench/load-client.ts, bench/ingestion-client.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

export function runInChild<Result>(script: string, args: unknown): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-child-'));
  const input = join(dir, 'in.json');
  const output = join(dir, 'out.json');
  writeFileSync(input, JSON.stringify(args));
  return new Promise<Result>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, input, output], { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      try {
        if (code !== 0) return reject(new Error(`${basename(script)} failed (exit ${code ?? signal})`));
        resolve(JSON.parse(readFileSync(output, 'utf8')) as Result);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

/** The child's side: runs `main` on the arguments of in.json and writes its result to out.json; exit 1 on failure. */
export function childMain<Args, Result>(main: (args: Args) => Promise<Result>): void {
  const [input, output] = process.argv.slice(2);
  main(JSON.parse(readFileSync(input, 'utf8')) as Args)
    .then((result) => writeFileSync(output, JSON.stringify(result)))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
