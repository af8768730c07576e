/** A progress bar on a terminal (cli-progress), a line per item elsewhere (a CI log, a pipe); and a worker pool. */
import { Presets, SingleBar } from 'cli-progress';

export interface Progress {
  start(total: number): void;
  done(item: string, outcome: string): void;
  stop(): void;
}

export function progressOn(stream: NodeJS.WriteStream, enabled: boolean): Progress {
  if (!enabled) return { start() {}, done() {}, stop() {} };
  if (stream.isTTY) {
    const bar = new SingleBar(
      { stream, format: ' {bar} {value}/{total} | {item}', hideCursor: true, clearOnComplete: false },
      Presets.shades_classic,
    );
    return {
      start: (total) => bar.start(total, 0, { item: '' }),
      done: (item, outcome) => bar.increment({ item: `${outcome} ${item}` }),
      stop: () => bar.stop(),
    };
  }
  let total = 0;
  let count = 0;
  return {
    start(n) {
      total = n;
    },
    done(item, outcome) {
      count += 1;
      stream.write(`[${count}/${total}] ${outcome} ${item}\n`);
    },
    stop() {},
  };
}

/** Runs `work` on every item, at most `concurrency` at a time. */
export async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next];
      next += 1;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
}
