/**
 * `npm run bundle-sizes`: bundles every route handler and the authorizer with esbuild exactly as the stack does
 * (lib/constructs/service-function.ts BUNDLING), writes them to .bundle-check/, prints each size and fails when one
 * is over the budget. A bundle over budget also lists the inputs that weigh most, to show what to cut.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { build, type Metafile } from 'esbuild';
import { BUNDLING, REPO_ROOT } from '../lib/constructs/service-function';
import { AUTHORIZER, bundledRoutesDefine, ROUTES } from '../lib/routes';

const BUDGET_BYTES = 300 * 1024;
const OUT_DIR = path.join(REPO_ROOT, '.bundle-check');

interface Entry {
  readonly id: string;
  readonly handler: string;
}

interface Result extends Entry {
  readonly bytes: number;
  readonly metafile: Metafile;
}

const entries: Entry[] = [
  ...ROUTES.map(({ id, handler }) => ({ id, handler })),
  { id: 'Authorizer', handler: AUTHORIZER.handler },
];

async function bundle(entry: Entry): Promise<Result> {
  const outfile = path.join(OUT_DIR, entry.id, 'index.js');
  const result = await build({
    entryPoints: [path.join(REPO_ROOT, entry.handler)],
    outfile,
    bundle: true,
    platform: 'node',
    minify: BUNDLING.minify,
    target: BUNDLING.target,
    format: BUNDLING.format === 'esm' ? 'esm' : 'cjs',
    external: BUNDLING.externalModules,
    define: bundledRoutesDefine(entry.handler),
    metafile: true,
    logLevel: 'warning',
  });
  return { ...entry, bytes: fs.statSync(outfile).size, metafile: result.metafile };
}

/** The inputs that contribute most bytes to the output, grouped by npm package (or by file for our own code). */
function heaviestInputs(metafile: Metafile, count: number): [string, number][] {
  const totals = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
      const key = packageMatch ? packageMatch[1] : input;
      totals.set(key, (totals.get(key) ?? 0) + bytesInOutput);
    }
  }
  return [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, count);
}

async function main(): Promise<number> {
  fs.rmSync(OUT_DIR, { recursive: true, force: true });
  const results = await Promise.all(entries.map(bundle));

  const idWidth = Math.max('route id'.length, ...results.map((r) => r.id.length));
  const rows = results.map((r) => {
    const flag = r.bytes > BUDGET_BYTES ? '  OVER BUDGET' : '';
    return `${r.id.padEnd(idWidth)} | ${String(r.bytes).padStart(14)}${flag}`;
  });
  console.log(`${'route id'.padEnd(idWidth)} | ${'bytes minified'.padStart(14)}`);
  console.log(`${'-'.repeat(idWidth)}-|-${'-'.repeat(14)}`);
  for (const row of rows) console.log(row);

  const over = results.filter((r) => r.bytes > BUDGET_BYTES);
  if (over.length === 0) {
    console.log(`\nAll ${results.length} bundles are within ${BUDGET_BYTES} bytes.`);
    return 0;
  }
  console.error(`\n${over.length} of ${results.length} bundles exceed the budget of ${BUDGET_BYTES} bytes.`);
  for (const r of over) {
    const heaviest = heaviestInputs(r.metafile, 5)
      .map(([name, bytes]) => `${name} ${bytes}`)
      .join(', ');
    console.error(`  ${r.id}: ${heaviest}`);
  }
  return 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
