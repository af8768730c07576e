/**
 * The load's client in a process of its own (bench/load.ts): `tsx bench/load-client.ts <in.json> <out.json>` runs
 * runLoad with the arguments in `in.json` and writes its LoadRun to `out.json`. Apart from the runtime, so that the
 * CPU the runtime's processes spend is the service's alone, and the client's sockets and JSON do not queue on the
 * event loop that serves the requests.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { type LoadDataset, type LoadTarget, runLoad, type Seed } from './load-driver';

interface LoadArguments {
  readonly target: LoadTarget;
  readonly dataset: LoadDataset;
  readonly seeds: readonly Seed[];
  readonly size: { readonly uploads: number; readonly queries: number };
}

async function main(): Promise<void> {
  const [input, output] = process.argv.slice(2);
  const { target, dataset, seeds, size } = JSON.parse(readFileSync(input, 'utf8')) as LoadArguments;
  writeFileSync(output, JSON.stringify(await runLoad(target, dataset, seeds, size)));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
