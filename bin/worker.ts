/**
 * `npm run worker`: the processing worker and the flow runner as a process of their own, beside a runtime started
 * with LOCAL_WORKER=off on the same DATA_DIR (`LOCAL_WORKER=off npm start` in one terminal, `npm run worker` in
 * another). `npm start` runs this same file as its child by default (LOCAL_WORKER=process,
 * lib/local/worker-process.ts), which it then talks to over the IPC channel.
 *
 * It reads the engines' endpoints and credentials from DATA_DIR/engines.json (written by the runtime at start, mode
 * 0600), points the handlers at them as the runtime does, opens the embedded index under DATA_DIR/index, and runs
 * the queue worker and the watchdog: the same code the runtime runs in-process with LOCAL_WORKER=on. It can be
 * killed at any moment (even with SIGKILL) and started again: what it had received comes back after the queue's
 * visibility timeout (PROCESSING_VISIBILITY_TIMEOUT_SECONDS of the runtime, 60 s by default). It stops by itself
 * when the runtime does. The flow runner's queue works the same way (FLOW_RUN_VISIBILITY_TIMEOUT_SECONDS of the
 * runtime, 60 s): a run whose runner was killed goes on from its last stored node once its session's lease ran out
 * (FLOW_SESSION_LEASE_MS, 60 s; docs/flows.md, "Long runs"). Flow settings (OUTBOUND_ALLOW_PRIVATE_NETWORK, the model)
 * come from this process's environment, as for the runtime.
 *   DATA_DIR (.data), PROCESSING_TIMEOUT_SECONDS (900), WATCHDOG_INTERVAL_SECONDS (60), EMBEDDER (as the runtime's),
 *   MAX_FILE_BYTES, ZIP_MAX_ENTRIES, POWERTOOLS_LOG_LEVEL (WARN).
 */
// First: the log level, before any module builds a logger.
import '../lib/local/log-level';
import { reportMetricsAlsoTo } from '#composition/metrics';
import { isRunning } from '../lib/local/data-folder';
import { startSeparateWorker } from '../lib/local/runtime';
import { metricsToParent, reportReady } from '../lib/local/worker-process';

async function main(): Promise<void> {
  const worker = await startSeparateWorker({ dataDir: process.env.DATA_DIR || '.data' });
  console.log(
    `Processing worker ${process.pid} polling ${worker.engines.processingQueueUrl} (runtime ${worker.engines.pid})`,
  );
  console.log(`Flow runner ${process.pid} polling ${worker.engines.flowRunQueueUrl}`);
  // Started by the runtime (LOCAL_WORKER=process): its metrics go to the runtime's GET /dashboard/metrics.
  reportMetricsAlsoTo(metricsToParent());
  reportReady();
  let stopping = false;
  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${reason}: stopping`);
    await worker.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // Its engines live in the runtime's process or in its child, which stops with it: without it nothing is left to poll.
  setInterval(() => {
    if (!isRunning(worker.engines.pid)) void stop(`runtime ${worker.engines.pid} exited`);
  }, 2000).unref();
}

main().catch((error: unknown) => {
  console.error('processing worker failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
