/**
 * `npm start`'s default (LOCAL_WORKER=process): the processing worker and the flow runner in a process of their own,
 * which the runtime starts, starts again when it dies, sends its metrics to, and stops with itself.
 */
import { readFileSync } from 'node:fs';
import { isRunning } from '../../lib/local/data-folder';
import { createDataset, type Dataset, readyDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;

beforeAll(async () => {
  service = await startService({ env: { LOCAL_WORKER: 'process' } });
  call = client(service);
  dataset = await createDataset(call);
});
afterAll(() => service?.stop());

/** The pids of the worker processes the runtime has started so far, in order. */
const workerPids = () => [...service.output().matchAll(/Processing worker (\d+) polling/g)].map((m) => Number(m[1]));

interface ServedSeries {
  readonly name: string;
  readonly sum: number;
}

test('documents are processed by a worker process of its own, whose metrics the runtime serves', async () => {
  const [pid] = workerPids();
  expect(pid).toBeGreaterThan(0);
  expect(pid).not.toBe(service.pid);
  await readyDocument(call, dataset, 'first.txt', 'Processed beside the runtime, not in it.');
  const served = await pollUntil(
    () => call<{ metrics: ServedSeries[] }>('GET', '/dashboard/metrics', { query: { name: 'DocumentsReady' } }),
    (r) => r.body.metrics.reduce((sum, s) => sum + s.sum, 0) >= 1,
  );
  expect(served.body.metrics.reduce((sum, s) => sum + s.sum, 0)).toBe(1);
});

test("the worker runs with the memory settings the benchmark measures (glibc's malloc, --expose-gc)", () => {
  const [pid] = workerPids();
  const environment = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  expect(environment).toEqual(expect.arrayContaining(['MALLOC_ARENA_MAX=2', 'MALLOC_MMAP_THRESHOLD_=131072']));
  expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toContain('--expose-gc');
});

test('a worker killed with SIGKILL is started again, and what was uploaded meanwhile is processed', async () => {
  const [first] = workerPids();
  process.kill(first, 'SIGKILL');
  await pollUntil(
    async () => workerPids(),
    (pids) => pids.length >= 2,
    30_000,
  );
  const pids = workerPids();
  expect(pids).toHaveLength(2);
  expect(isRunning(first)).toBe(false);
  expect(isRunning(pids[1])).toBe(true);
  expect(service.output()).toMatch(/The processing worker exited \(SIGKILL\); starting it again in 1 s/);
  await readyDocument(call, dataset, 'second.txt', 'Processed by the worker started again.');
});

test('the worker stops with the runtime', async () => {
  const pids = workerPids();
  const last = pids[pids.length - 1];
  expect(isRunning(last)).toBe(true);
  await service.stop();
  const gone = await pollUntil(
    async () => isRunning(last),
    (running) => !running,
    15_000,
  );
  expect(gone).toBe(false);
});
