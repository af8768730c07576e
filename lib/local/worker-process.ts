/**
 * The processing worker and the flow runner as a process of their own (`bin/worker.ts`), started and stopped by the
 * runtime: what `npm start` does by default (LOCAL_WORKER=process). Extraction, chunking, the index's commits and its
 * BM25 refresh then run beside the process that serves requests instead of on its event loop. The worker finds the
 * engines through DATA_DIR/engines.json, takes the data folder's worker lock, and sends its metrics here over the IPC
 * channel so GET /dashboard/metrics shows them. A worker that dies (a signal, or an exit code other than 0) is started
 * again (after 1 s, doubling to 30 s while it keeps failing); its received messages come back after the queue's
 * visibility timeout.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join, resolve } from 'node:path';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { MetricDimensions, MetricName, OperationalMetrics } from '#ports/metrics';
import { LOCAL_REGION } from './engine-credentials';
import type { EngineEndpoints } from './engines';
import { type QueueWorker, queueDrained } from './queue-worker';

const ROOT = resolve(__dirname, '..', '..');
const WORKER_SCRIPT = join(ROOT, 'bin', 'worker.ts');
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * How the worker's Node process is started: by the runtime here, and by the ingestion benchmark for its stand-in of
 * the worker (bench/ingestion.ts), so that the benchmark measures what the runtime runs (docs/processing.md, "Memory").
 * `--expose-gc`: the index collects a staged write's garbage after each part (lancedb.ts, `collectGarbage`).
 */
export const WORKER_EXEC_ARGV: readonly string[] = ['--expose-gc', '--import', 'tsx'];

/**
 * The worker's environment: `env` with two settings of glibc's malloc, each unless `env` sets it. glibc reads them
 * once, when the process starts, so they must be in the environment the process is started with.
 * - MALLOC_ARENA_MAX=2: glibc gives each thread that allocates at once an arena of its own, up to 8 a core, and keeps
 *   what an arena freed; LanceDB's threads (a part's write, the commit, the BM25 refresh) then left the worker 100 MB
 *   or more above what it used.
 * - MALLOC_MMAP_THRESHOLD_=131072: blocks of 128 KiB or more are mapped on their own and given back to the system when
 *   freed. By default glibc raises that threshold as such blocks are freed (up to 32 MiB), after which LanceDB's
 *   large buffers come from the heap and stay with the process: its commit's buffers were still held when the BM25
 *   refresh came (62 MB more at the peak on a 50 MB text).
 */
export function workerEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', ...env };
}

/** What the worker sends its parent over IPC. */
export type WorkerMessage =
  | { readonly kind: 'ready' }
  | {
      readonly kind: 'metric';
      readonly unit: 'count' | 'milliseconds';
      readonly name: MetricName;
      readonly value: number;
      readonly dimensions?: MetricDimensions;
    };

/** In the worker: its metrics, sent to the runtime that started it (nothing when it was started by hand). */
export function metricsToParent(): OperationalMetrics | undefined {
  const send = process.send?.bind(process);
  if (!send) return undefined;
  const post = (message: WorkerMessage) => {
    if (process.connected) send(message);
  };
  return {
    count: (name, value = 1, dimensions) => post({ kind: 'metric', unit: 'count', name, value, dimensions }),
    milliseconds: (name, value, dimensions) => post({ kind: 'metric', unit: 'milliseconds', name, value, dimensions }),
  };
}

/** In the worker: tells the runtime that started it that it polls the queues. */
export function reportReady(): void {
  process.send?.({ kind: 'ready' } satisfies WorkerMessage);
}

/**
 * Starts the worker process and resolves once it polls the queues (or rejects with what it printed, if it exits or
 * takes longer than a minute). `idle` resolves when the processing queue holds no message, visible or in flight.
 */
export async function startWorkerProcess(options: {
  dataDir: string;
  engines: EngineEndpoints;
  metrics: OperationalMetrics;
  log: (line: string) => void;
}): Promise<QueueWorker> {
  let stopping = false;
  let child: ChildProcess | undefined;
  let restartDelay = 1000;
  let restartTimer: NodeJS.Timeout | undefined;

  const spawnWorker = () =>
    new Promise<ChildProcess>((ready, reject) => {
      const started = fork(WORKER_SCRIPT, [], {
        cwd: ROOT,
        execArgv: [...WORKER_EXEC_ARGV],
        env: workerEnvironment({ ...process.env, DATA_DIR: options.dataDir }),
        stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      });
      // Its stderr is passed on, and the end of it kept for the error of a worker that does not start.
      let tail = '';
      started.stderr?.on('data', (chunk: Buffer) => {
        process.stderr.write(chunk);
        tail = (tail + chunk.toString()).slice(-4000);
      });
      const timer = setTimeout(() => {
        started.kill('SIGKILL');
        reject(new Error(`The processing worker did not start within ${START_TIMEOUT_MS} ms:\n${tail}`));
      }, START_TIMEOUT_MS);
      const onEarlyExit = (code: number | null, signal: NodeJS.Signals | null) => {
        clearTimeout(timer);
        reject(new Error(`The processing worker exited (${code ?? signal}) before it started:\n${tail}`));
      };
      started.once('exit', onEarlyExit);
      started.on('message', (message: WorkerMessage) => {
        if (message.kind === 'ready') {
          clearTimeout(timer);
          started.off('exit', onEarlyExit);
          ready(started);
        } else if (message.kind === 'metric') {
          options.metrics[message.unit](message.name, message.value, message.dimensions);
        }
      });
    });

  const watch = (running: ChildProcess) => {
    running.once('exit', (code, signal) => {
      if (stopping) return;
      child = undefined;
      // Exit code 0: it stopped as asked (Ctrl-C in a terminal reaches it too), so it is not started again.
      if (code === 0) return;
      restartLater(`The processing worker exited (${code ?? signal}); starting it again`);
    });
  };
  /** Logs `why`, then starts the worker again after the current delay, which doubles for the next time. */
  const restartLater = (why: string) => {
    options.log(`${why} in ${restartDelay / 1000} s`);
    restartTimer = setTimeout(restart, restartDelay);
    restartDelay = Math.min(restartDelay * 2, MAX_RESTART_DELAY_MS);
  };
  const restart = () => {
    restartTimer = undefined;
    spawnWorker().then(
      (started) => {
        if (stopping) {
          started.kill('SIGTERM');
          return;
        }
        child = started;
        restartDelay = 1000;
        watch(started);
      },
      (error: Error) => {
        if (!stopping) restartLater(`${error.message.split('\n')[0]}; trying again`);
      },
    );
  };

  child = await spawnWorker();
  watch(child);
  const sqs = new SQSClient({
    endpoint: options.engines.sqsEndpoint,
    region: LOCAL_REGION,
    credentials: { ...options.engines.credentials },
  });
  return {
    idle: () => queueDrained(sqs, options.engines.processingQueueUrl),
    async stop() {
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      const running = child;
      if (running && running.exitCode === null && running.signalCode === null) {
        const exited = new Promise<void>((done) => running.once('exit', () => done()));
        const kill = setTimeout(() => running.kill('SIGKILL'), STOP_TIMEOUT_MS);
        running.kill('SIGTERM');
        await exited;
        clearTimeout(kill);
      }
      sqs.destroy();
    },
  };
}
