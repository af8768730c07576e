/**
 * `npm run bench -- load`: the load of issue 7 (200 upload flows and 50 query lanes at once, bench/load-driver.ts,
 * the same as `npm run test:load`) against a local runtime in this process, and each latency beside the same
 * request alone on the idle runtime, measured first in the same run (median of ALONE_RUNS, one after another): the
 * ratio is the cost of concurrency. The load must lose nothing (every request 200, every document ready, found by its
 * word, one record each), or the benchmark fails rather than report figures of a broken run.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalRuntime } from '../lib/local/runtime';
import {
  createLoadDataset,
  type LoadTarget,
  loadFigures,
  measureAlone,
  QUERY_ROUNDS,
  runLoad,
  STEPS,
  seedDocuments,
  settleAndCheck,
} from './load-driver';
import { profileWhile, renderModuleTable, summarize } from './cpu-profile';
import { type Benchmark, type BenchRow, type BenchSection, loadAverageAfter } from './report';

const SIZE = { uploads: 200, queries: 50 } as const;
const SEEDS = 3;
const ALONE_RUNS = 15;
const TOKEN = 'bench-load-token-0123456789';

async function run(): Promise<BenchSection> {
  const notes = [
    `${SIZE.uploads} upload flows (upload-link → PUT → upload-complete, one small text each) and ${SIZE.queries} query lanes (${QUERY_ROUNDS} queries each, one after another) started at once over loopback; load average before: ${loadavg()[0].toFixed(2)}.`,
  ];
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-load-'));
  const runtime = await startLocalRuntime({ port: 0, dataDir, devTokens: TOKEN, log: () => {}, worker: 'process' });
  try {
    const target: LoadTarget = {
      baseUrl: runtime.url,
      token: TOKEN,
      dynamodb: {
        endpoint: runtime.engines.dynamodbEndpoint,
        documentsTable: runtime.engines.tableNames.documents,
        credentials: runtime.engines.credentials,
      },
    };
    const dataset = await createLoadDataset(target, 'load');
    const seeds = await seedDocuments(target, dataset, SEEDS);
    const alone = await measureAlone(
      target,
      { uploads: await createLoadDataset(target, 'alone'), queries: dataset },
      seeds,
      ALONE_RUNS,
    );
    await runtime.worker?.idle();

    // The CPU this process (client, router, handlers, engines: one event loop) spends while the requests run.
    const cpuBefore = process.cpuUsage();
    const { result: load, profile } = await profileWhile(() => runLoad(target, dataset, seeds, SIZE));
    const cpu = process.cpuUsage(cpuBefore);
    const modules = summarize(profile);
    // BENCH_PROFILE_OUT=file.cpuprofile keeps the whole profile (Chrome DevTools and speedscope read it).
    if (process.env.BENCH_PROFILE_OUT) writeFileSync(process.env.BENCH_PROFILE_OUT, JSON.stringify(profile));
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const requests = SIZE.uploads * 3 + load.queries.length;
    const outcome = await settleAndCheck(target, dataset, seeds, load);
    const lost = Object.entries(outcome.problems).filter(([, list]) => list.length > 0);
    if (lost.length > 0) {
      throw new Error(`the load lost something: ${lost.map(([kind, list]) => `${kind}: ${list[0]} (${list.length})`)}`);
    }
    const figures = loadFigures(outcome);
    notes.push(
      `Nothing lost: every request answered 200, all ${SIZE.uploads} documents ready, each found by its own word in one chunk, one record each. Every request answered ${(figures.wallMs / 1000).toFixed(1)} s after the start; the last document ready after ${(figures.allReadyMs / 1000).toFixed(1)} s.`,
      `Max under load: ${STEPS.map((step) => `${step} ${figures.steps[step].max.toFixed(0)} ms`).join(', ')}, upload → ready ${figures.toReady.max.toFixed(0)} ms.`,
      `Baseline: the same requests alone on the idle runtime, measured first: ${ALONE_RUNS} upload flows, each waited until ready, then ${ALONE_RUNS} queries, after 3 of each to warm up; the median. Upload → ready is from upload-link sent to the document's own \`updatedAt\` as it turned ready.`,
      'Client and runtime (router, engines) share this process and its event loop; the processing worker runs in a process of its own, as `npm start` runs it (LOCAL_WORKER=process).',
      `While the ${requests} requests ran (${(load.wallMs / 1000).toFixed(1)} s), this process used ${(cpuMs / 1000).toFixed(1)} s of CPU (${((cpuMs / load.wallMs) * 100).toFixed(0)} % of one core), ${(cpuMs / requests).toFixed(1)} ms a request, the worker's calls to the engines included. Sent at once, they queue for the one event loop that serves them all, so the latency ratios below mostly measure that queue: the last of them cannot answer before about ${(cpuMs / 1000).toFixed(1)} s of that work is done.`,
    );
    const rows: BenchRow[] = [];
    for (const step of STEPS) {
      for (const p of ['p50', 'p99'] as const) {
        rows.push({
          name: `${step} ${p}, ${step === 'query' ? `${figures.steps[step].count} queries` : `${SIZE.uploads} flows`} under load`,
          value: figures.steps[step][p],
          unit: 'ms',
          baseline: alone.steps[step],
          baselineName: `${step} alone, median of ${ALONE_RUNS}`,
          reading: 'lower is better; the ratio is the cost of concurrency',
        });
      }
    }
    for (const p of ['p50', 'p99'] as const) {
      rows.push({
        name: `upload → ready ${p}, ${SIZE.uploads} documents under load`,
        value: figures.toReady[p],
        unit: 'ms',
        baseline: alone.toReady,
        baselineName: `one document alone, median of ${ALONE_RUNS}`,
        reading: 'lower is better; the ratio is the cost of concurrency',
      });
    }
    rows.push({
      name: `documents ready per second, ${SIZE.uploads} at once`,
      value: SIZE.uploads / (figures.allReadyMs / 1000),
      unit: 'docs/s',
      baseline: 1000 / alone.toReady,
      baselineName: 'one after another (1 / upload → ready alone)',
      reading: 'higher is better: what concurrency gains',
    });
    notes.push(loadAverageAfter());
    const after = renderModuleTable(
      'Where the CPU of this process went while the load ran (a sampling profile, node:inspector, self time by module):',
      modules,
    );
    console.error(after);
    return { title: 'Load (local runtime)', notes, rows, after };
  } finally {
    await runtime.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export const loadBenchmark: Benchmark = { id: 'load', run };
