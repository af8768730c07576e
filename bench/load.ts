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
import type { EnginesProcess } from '../lib/local/engines-process';
import { startLocalRuntime } from '../lib/local/runtime';
import { runInChild } from './child-run';
import { type CpuProfile, profileWhile, renderModuleTable, summarize } from './cpu-profile';
import {
  createLoadDataset,
  type LoadDataset,
  type LoadRun,
  type LoadTarget,
  loadFigures,
  measureAlone,
  QUERY_ROUNDS,
  type Seed,
  STEPS,
  seedDocuments,
  sequentialRequests,
  settleAndCheck,
} from './load-driver';
import { type Benchmark, type BenchRow, type BenchSection, loadAverageAfter } from './report';

const SIZE = { uploads: 200, queries: 50 } as const;
const SEEDS = 3;
const ALONE_RUNS = 15;
const TOKEN = 'bench-load-token-0123456789';

/** runLoad in a process of its own (bench/load-client.ts), its result read back. */
function loadInChild(args: {
  target: LoadTarget;
  dataset: LoadDataset;
  seeds: readonly Seed[];
  size: typeof SIZE;
}): Promise<LoadRun> {
  return runInChild<LoadRun>(join(__dirname, 'load-client.ts'), args);
}

async function run(): Promise<BenchSection> {
  const notes = [
    `${SIZE.uploads} upload flows (upload-link → PUT → upload-complete, one small text each) and ${SIZE.queries} query lanes (${QUERY_ROUNDS} queries each, one after another) started at once over loopback; load average before: ${loadavg()[0].toFixed(2)}.`,
  ];
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-load-'));
  const runtime = await startLocalRuntime({
    port: 0,
    dataDir,
    devTokens: TOKEN,
    log: () => {},
    worker: 'process',
    engines: 'process',
  });
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
    const engines = runtime.engines as EnginesProcess;
    // The baseline of the CPU a request costs: the same mix sent one at a time (the worker's calls included, as below).
    const sequentialBefore = { router: process.cpuUsage(), engines: await engines.cpuMs() };
    const sequentialCount = await sequentialRequests(target, await createLoadDataset(target, 'sequential'), seeds, 50);
    const sequentialRouter = process.cpuUsage(sequentialBefore.router);
    await runtime.worker?.idle();
    const sequentialCpuMs =
      (sequentialRouter.user + sequentialRouter.system) / 1000 + ((await engines.cpuMs()) - sequentialBefore.engines);

    // The CPU the runtime spends while the requests run: this process (router, handlers) and the engines' process
    // (dynalite, s3rver, fauxqs, their SigV4 checks); the client runs in a process of its own (bench/load-client.ts).
    const cpuBefore = process.cpuUsage();
    const enginesCpuBefore = await engines.cpuMs();
    await engines.startProfile();
    const { result: load, profile } = await profileWhile(() => loadInChild({ target, dataset, seeds, size: SIZE }));
    const cpu = process.cpuUsage(cpuBefore);
    const enginesCpuMs = (await engines.cpuMs()) - enginesCpuBefore;
    const enginesProfile = (await engines.stopProfile()) as CpuProfile;
    const routerCpuMs = (cpu.user + cpu.system) / 1000;
    const cpuMs = routerCpuMs + enginesCpuMs;
    const modules = summarize(profile);
    const engineModules = summarize(enginesProfile);
    // BENCH_PROFILE_OUT=file keeps both profiles (file.api.cpuprofile, file.engines.cpuprofile: DevTools reads them).
    if (process.env.BENCH_PROFILE_OUT) {
      writeFileSync(`${process.env.BENCH_PROFILE_OUT}.api.cpuprofile`, JSON.stringify(profile));
      writeFileSync(`${process.env.BENCH_PROFILE_OUT}.engines.cpuprofile`, JSON.stringify(enginesProfile));
    }
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
      'The runtime as `npm start` runs it: router and handlers in this process, the engines (dynalite, s3rver, fauxqs) in a process of their own (LOCAL_ENGINES=process), the processing worker in a third (LOCAL_WORKER=process); the load client in a fourth (bench/load-client.ts), so the CPU below is the service’s alone.',
      `While the ${requests} requests ran (${(load.wallMs / 1000).toFixed(1)} s), the router’s process used ${(routerCpuMs / 1000).toFixed(1)} s of CPU and the engines’ ${(enginesCpuMs / 1000).toFixed(1)} s (the worker’s calls to them included): ${(cpuMs / requests).toFixed(1)} ms a request (${(routerCpuMs / requests).toFixed(1)} + ${(enginesCpuMs / requests).toFixed(1)}), ${((cpuMs / load.wallMs) * 100).toFixed(0)} % of one core. Sent at once, the requests queue for the event loops that serve them, so the latency ratios below mostly measure those queues.`,
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
          ...(step === 'query' && p === 'p99'
            ? {
                goal: { measure: 'query p99 under load / alone', of: 'ratio', atMost: 20, source: 'issue 40' } as const,
              }
            : {}),
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
    rows.push({
      name: `CPU per request under the load (router’s and engines’ processes, ${requests} requests)`,
      value: cpuMs / requests,
      unit: 'ms',
      baseline: sequentialCpuMs / sequentialCount,
      baselineName: `the same mix one request at a time (${sequentialCount} requests)`,
      reading: 'lower is better',
      goal: { measure: 'CPU per request under the load benchmark', of: 'value', atMost: 3, source: 'issue 40' },
    });
    const after = [
      renderModuleTable(
        'Where the CPU of the router’s process went while the load ran (a sampling profile, node:inspector, self time by module):',
        modules,
      ),
      renderModuleTable('Where the CPU of the engines’ process went in the same window:', engineModules),
    ].join('\n\n');
    console.error(after);
    return { title: 'Load (local runtime)', notes, rows, after };
  } finally {
    await runtime.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export const loadBenchmark: Benchmark = { id: 'load', run };
