/**
 * The load's client in a process of its own (bench/load.ts, through bench/child-run.ts): runs runLoad with the
 * arguments it is given and answers its LoadRun.
 */
import { childMain } from './child-run';
import { type LoadDataset, type LoadTarget, runLoad, type Seed } from './load-driver';

interface LoadArguments {
  readonly target: LoadTarget;
  readonly dataset: LoadDataset;
  readonly seeds: readonly Seed[];
  readonly size: { readonly uploads: number; readonly queries: number };
}

childMain(({ target, dataset, seeds, size }: LoadArguments) => runLoad(target, dataset, seeds, size));
