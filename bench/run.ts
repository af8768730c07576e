/**
 * `npm run bench [-- id …]`: runs every benchmark of the project (or the named ones), prints each section and,
 * for a full run, writes bench/RESULTS.md. Benchmarks register in BENCHMARKS below.
 *
 * Each benchmark runs in a process of its own (this file again, with `--section <id> <file>`): a local runtime
 * started by one benchmark leaves module state behind (the handlers' AWS clients point at its engines' ports,
 * timers, LanceDB caches), and one benchmark's heap and timers would otherwise weigh on the next one's figures.
 */
// First: the log level, before any module builds a logger.
import '../lib/local/log-level';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyticsBenchmark } from './analytics';
import { costsBenchmark } from './costs';
import { documentListBenchmark } from './document-list';
import { ingestionBenchmark, ingestionMemoryBenchmark } from './ingestion';
import { loadBenchmark } from './load';
import { qualityBenchmark } from './quality';
import { type Benchmark, type BenchSection, renderGoals, renderSection } from './report';
import { retrievalBenchmark } from './retrieval';

const BENCHMARKS: Benchmark[] = [
  analyticsBenchmark,
  documentListBenchmark,
  ingestionBenchmark,
  retrievalBenchmark,
  qualityBenchmark,
  loadBenchmark,
  costsBenchmark,
];

/** Parts of a benchmark above that run only when named (a full run has them within their whole). */
const PARTS: Benchmark[] = [ingestionMemoryBenchmark];

/** Child mode: run one benchmark and write its section as JSON to `file`. */
async function runSection(id: string, file: string): Promise<void> {
  // The benchmarks send bursts through one token: every request is still counted (the limiter's writes are part of
  // each figure), against a limit they do not reach.
  process.env.RATE_LIMIT_PER_SECOND ??= '1000000';
  process.env.RATE_LIMIT_BURST ??= '1000000';
  const benchmark = [...BENCHMARKS, ...PARTS].find((b) => b.id === id);
  if (!benchmark) throw new Error(`unknown benchmark ${id}`);
  writeFileSync(file, JSON.stringify(await benchmark.run()));
}

function runInChild(benchmark: Benchmark, file: string): Promise<BenchSection> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', __filename, '--section', benchmark.id, file], {
      stdio: 'inherit',
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code !== 0) return reject(new Error(`benchmark ${benchmark.id} failed (exit ${code ?? signal})`));
      resolve(JSON.parse(readFileSync(file, 'utf8')) as BenchSection);
    });
  });
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--section') return runSection(args[1], args[2]);
  const selected = args.length ? [...BENCHMARKS, ...PARTS].filter((b) => args.includes(b.id)) : BENCHMARKS;
  if (selected.length === 0) {
    console.error(
      `no benchmark matches ${args.join(', ')}; known: ${[...BENCHMARKS, ...PARTS].map((b) => b.id).join(', ') || 'none'}`,
    );
    process.exit(args.length ? 2 : 0);
  }
  const dir = mkdtempSync(join(tmpdir(), 'aps-bench-'));
  try {
    const sections: BenchSection[] = [];
    for (const benchmark of selected) {
      console.error(`running ${benchmark.id} …`);
      const section = await runInChild(benchmark, join(dir, `${benchmark.id}.json`));
      sections.push(section);
      console.log(`${renderSection(section)}\n`);
    }
    const goals = renderGoals(sections);
    if (goals) console.log(`## Goals\n\n${goals}\n`);
    if (!args.length) {
      const header =
        `# Benchmark results\n\nWritten by \`npm run bench\` on ${new Date().toISOString()} ` +
        `(${cpus().length} cores, ${process.version}); each benchmark in a process of its own.\n`;
      const summary = goals ? `\n## Goals\n\nEach from its row below, in this run.\n\n${goals}\n` : '';
      writeFileSync(
        join(__dirname, 'RESULTS.md'),
        `${header}${summary}\n${sections.map(renderSection).join('\n\n')}\n`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
