/**
 * `npm run bench [-- id …]`: runs every benchmark of the project (or the named ones), prints each section and
 * writes bench/RESULTS.md. Benchmarks register in BENCHMARKS below.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { analyticsBenchmark } from './analytics';
import { ingestionBenchmark } from './ingestion';
import { loadBenchmark } from './load';
import { type Benchmark, type BenchSection, renderSection } from './report';
import { retrievalBenchmark } from './retrieval';

const BENCHMARKS: Benchmark[] = [analyticsBenchmark, ingestionBenchmark, retrievalBenchmark, loadBenchmark];

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const selected = wanted.length ? BENCHMARKS.filter((b) => wanted.includes(b.id)) : BENCHMARKS;
  if (selected.length === 0) {
    console.error(
      `no benchmark matches ${wanted.join(', ')}; known: ${BENCHMARKS.map((b) => b.id).join(', ') || 'none'}`,
    );
    process.exit(wanted.length ? 2 : 0);
  }
  const sections: BenchSection[] = [];
  for (const benchmark of selected) {
    console.error(`running ${benchmark.id} …`);
    const section = await benchmark.run();
    sections.push(section);
    console.log(`${renderSection(section)}\n`);
  }
  if (!wanted.length) {
    const header = `# Benchmark results\n\nWritten by \`npm run bench\` on ${new Date().toISOString()} (2 cores, ${process.version}).\n`;
    writeFileSync(join(__dirname, 'RESULTS.md'), `${header}\n${sections.map(renderSection).join('\n\n')}\n`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
