/**
 * A separate processing worker (`bin/worker.ts`) beside a runtime started with LOCAL_WORKER=off on the same data
 * folder. Spawned as one process (not the tsx launcher, which runs the code in a child of its own), so SIGKILL
 * really kills the worker, mid-batch, as a crash would.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type EngineReader, engineReader } from './knowledge-base-remains';
import { client, startService, type TestService } from './service';

export interface TestWorker {
  readonly pid: number;
  /** Everything the process printed so far. */
  output(): string;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (the worker finishes its batch and stops), SIGKILL after 10 s. */
  stop(): Promise<void>;
}

const ROOT = resolve(__dirname, '..', '..');

/** Starts the worker and resolves once it polls the queue; rejects after `timeoutMs` or if it exits first. */
export async function startWorker(
  dataDir: string,
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<TestWorker> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/worker.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  if (process.env.TEST_SERVICE_LOG) {
    child.stdout?.pipe(process.stderr);
    child.stderr?.pipe(process.stderr);
  }
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  await new Promise<void>((ready, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the worker did not start within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const check = () => {
      if (/Processing worker \d+ polling/.test(output)) {
        clearTimeout(timer);
        ready();
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the worker exited (${code ?? signal}) before it started:\n${output}`));
    });
  });
  const gone = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;
  return {
    pid: child.pid as number,
    output: () => output,
    kill: async () => {
      if (!gone(child)) child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      if (gone(child)) return;
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.kill('SIGTERM');
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * A local runtime that leaves its queues to a worker the test starts and stops (LOCAL_WORKER=off), on a data folder of
 * its own (`<prefix>…` in the temporary folder); a received message comes back after 3 s. `stop` stops the runtime
 * and removes the folder (the test stops its worker first).
 */
export async function startServiceForWorker(
  prefix: string,
): Promise<{ service: TestService; dataDir: string; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const service = await startService({
    dataDir,
    env: { LOCAL_WORKER: 'off', PROCESSING_VISIBILITY_TIMEOUT_SECONDS: '3' },
  });
  return {
    service,
    dataDir,
    stop: async () => {
      await service.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A runtime that leaves its queues to a worker the suite starts and stops, and a reader of its engines. */
export interface ServiceAndWorker {
  readonly service: TestService;
  /** The runtime's first organization's token. */
  readonly call: ReturnType<typeof client>;
  readonly engines: EngineReader;
  /** The runtime's data folder (its engines' files). */
  readonly dataDir: string;
  /** Stops the worker, if one runs: queued work then waits (what callers see meanwhile is checked without a race). */
  stopWorker(): Promise<void>;
  /** Starts a worker, unless one runs. */
  startWorker(): Promise<void>;
}

/**
 * The setup of the suites that stop and start the worker under a job (knowledge base and agent deletion): in
 * beforeAll the runtime (startServiceForWorker), a worker with `workerEnv` and the engines' reader; all gone in afterAll.
 */
export function serviceAndWorker(prefix: string, workerEnv: Record<string, string>): ServiceAndWorker {
  let started: { service: TestService; dataDir: string; stop(): Promise<void> } | undefined;
  let call: ReturnType<typeof client> | undefined;
  let engines: EngineReader | undefined;
  let worker: TestWorker | undefined;
  const ready = () => {
    if (!started || !call || !engines) throw new Error('serviceAndWorker: used before its beforeAll');
    return { ...started, call, engines };
  };
  beforeAll(async () => {
    started = await startServiceForWorker(prefix);
    call = client(started.service);
    worker = await startWorker(started.dataDir, workerEnv);
    engines = engineReader(started.dataDir);
  });
  afterAll(async () => {
    engines?.close();
    await worker?.stop();
    await started?.stop();
  });
  return {
    get service() {
      return ready().service;
    },
    get call() {
      return ready().call;
    },
    get engines() {
      return ready().engines;
    },
    get dataDir() {
      return ready().dataDir;
    },
    async stopWorker() {
      await worker?.stop();
      worker = undefined;
    },
    async startWorker() {
      worker ??= await startWorker(ready().dataDir, workerEnv);
    },
  };
}
