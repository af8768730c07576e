/**
 * The shape every benchmark reports in: each figure beside a baseline measured in the same run, and their ratio.
 * `npm run bench` (bench/run.ts) prints all sections and writes bench/RESULTS.md.
 */
import { loadavg } from 'node:os';

export interface BenchRow {
  /** What was measured, e.g. `query sessionId, 100k events`. */
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  /** The same quantity for the baseline, measured in the same run. */
  readonly baseline: number;
  readonly baselineName: string;
  /** How to read value / baseline, e.g. `lower is better` or `goal ≈ 1`. */
  readonly reading?: string;
  /** Goals this row's value or ratio is held to (bench/run.ts lists them all in one table at the top). */
  readonly goal?: BenchGoal | readonly BenchGoal[];
}

/** `value` or `ratio` (value / baseline) of a row, at most or at least `target`. */
export interface BenchGoal {
  /** What the goal measures, as the issue names it. */
  readonly measure: string;
  readonly of: 'value' | 'ratio';
  readonly atMost?: number;
  readonly atLeast?: number;
  /** Where it was set, e.g. `issue 40`. */
  readonly source: string;
}

/** The goals of every section's rows: one table, each with its figure and whether it is met. */
export function renderGoals(sections: readonly BenchSection[]): string | undefined {
  const lines = ['| goal | figure | target | met | section |', '|---|---|---|---|---|'];
  let count = 0;
  for (const section of sections) {
    for (const row of section.rows) {
      const goals: readonly BenchGoal[] = row.goal === undefined ? [] : Array.isArray(row.goal) ? row.goal : [row.goal];
      for (const goal of goals) {
        count += 1;
        const figure = goal.of === 'value' ? row.value : row.baseline === 0 ? Number.NaN : row.value / row.baseline;
        const met =
          (goal.atMost === undefined || figure <= goal.atMost) &&
          (goal.atLeast === undefined || figure >= goal.atLeast);
        const target = [
          goal.atLeast === undefined ? '' : `≥ ${fixed(goal.atLeast)}`,
          goal.atMost === undefined ? '' : `≤ ${fixed(goal.atMost)}`,
        ]
          .filter(Boolean)
          .join(' and ');
        const shown = goal.of === 'value' ? `${fixed(figure)} ${row.unit}` : `${fixed(figure)}×`;
        lines.push(
          `| ${goal.measure} (${goal.source}) | ${shown} | ${target}${goal.of === 'value' ? ` ${row.unit}` : '×'} | ${met ? 'yes' : '**no**'} | ${section.title} |`,
        );
      }
    }
  }
  return count === 0 ? undefined : lines.join('\n');
}

export interface BenchSection {
  readonly title: string;
  readonly notes?: readonly string[];
  readonly rows: readonly BenchRow[];
  /** Markdown printed after the table (e.g. a CPU profile's summary). */
  readonly after?: string;
}

export interface Benchmark {
  /** Short id to run it alone: `npm run bench -- analytics`. */
  readonly id: string;
  run(): Promise<BenchSection>;
}

const fixed = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3));

export function renderSection(section: BenchSection): string {
  const lines = [`## ${section.title}`, ''];
  for (const note of section.notes ?? []) lines.push(`- ${note}`);
  if (section.notes?.length) lines.push('');
  lines.push('| measure | value | baseline | baseline value | ratio | reading |', '|---|---|---|---|---|---|');
  for (const row of section.rows) {
    const ratio = row.baseline === 0 ? 'n/a' : fixed(row.value / row.baseline);
    lines.push(
      `| ${row.name} | ${fixed(row.value)} ${row.unit} | ${row.baselineName} | ${fixed(row.baseline)} ${row.unit} | ${ratio} | ${row.reading ?? ''} |`,
    );
  }
  if (section.after) lines.push('', section.after);
  return lines.join('\n');
}

/** Median of `count` timed runs of `fn`, in milliseconds (after `warmup` untimed runs). */
/** The note every section ends with: the machine's load when it finished. */
export function loadAverageAfter(): string {
  return `Load average after: ${loadavg()[0].toFixed(2)} (2 cores; other processes on the machine count too).`;
}

export async function medianMs(fn: () => Promise<unknown>, count = 15, warmup = 3): Promise<number> {
  for (let i = 0; i < warmup; i += 1) await fn();
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const start = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}
