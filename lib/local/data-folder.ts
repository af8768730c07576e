/**
 * What a local runtime leaves in its DATA_DIR for other processes: `engines.json` (where its engines answer and their
 * credentials, mode 0600, for a separate worker) and `worker.pid` (one processing worker per data folder).
 */

import { chmodSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makePrivate } from './engine-credentials';
import type { EngineEndpoints } from './engines';

/** The file under DATA_DIR where a running runtime tells a separate worker where its engines answer. */
export const ENGINES_FILE = 'engines.json';

/** What DATA_DIR/engines.json (mode 0600) holds: the engines' endpoints and credentials, and their process. */
export interface EnginesFile extends EngineEndpoints {
  readonly pid: number;
  readonly startedAt: string;
}

export function writeEnginesFile(dataDir: string, engines: EngineEndpoints): void {
  const { dynamodbEndpoint, s3Endpoint, sqsEndpoint, processingQueueUrl, deadLetterQueueUrl, tableNames } = engines;
  const { flowRunQueueUrl, flowRunDeadLetterQueueUrl, webhookQueueUrl, webhookDeadLetterQueueUrl } = engines;
  const file: EnginesFile = {
    dynamodbEndpoint,
    s3Endpoint,
    sqsEndpoint,
    processingQueueUrl,
    deadLetterQueueUrl,
    flowRunQueueUrl,
    flowRunDeadLetterQueueUrl,
    webhookQueueUrl,
    webhookDeadLetterQueueUrl,
    tableNames,
    credentials: { accessKeyId: engines.credentials.accessKeyId, secretAccessKey: engines.credentials.secretAccessKey },
    pid: process.pid,
    startedAt: new Date().toISOString(),
  };
  // Written aside and renamed, so a worker starting at that moment never reads half a file. It holds the
  // credentials: owner-only (chmod too, for a leftover of a crashed start that `mode` would not change).
  const path = join(dataDir, ENGINES_FILE);
  const aside = `${path}.${process.pid}.tmp`;
  writeFileSync(aside, JSON.stringify(file, null, 2), { mode: 0o600 });
  chmodSync(aside, 0o600);
  renameSync(aside, path);
}

export function removeEnginesFile(dataDir: string): void {
  try {
    if (readEnginesFile(dataDir).pid === process.pid) rmSync(join(dataDir, ENGINES_FILE), { force: true });
  } catch {
    // already gone, or another runtime's
  }
}

/** Reads DATA_DIR/engines.json; throws, saying what to do, when there is none or its runtime is gone. */
export function readEnginesFile(dataDir: string): EnginesFile {
  const path = join(resolve(dataDir), ENGINES_FILE);
  let file: EnginesFile;
  try {
    file = JSON.parse(readFileSync(path, 'utf8')) as EnginesFile;
  } catch {
    throw new Error(`${path} not found: start the runtime first (LOCAL_WORKER=off npm start, same DATA_DIR)`);
  }
  makePrivate(path, 0o600);
  if (!isRunning(file.pid)) {
    throw new Error(`${path} names process ${file.pid}, which is not running: start the runtime first`);
  }
  return file;
}

/** Whether a process of that id exists (signal 0 checks without sending anything). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** DATA_DIR/worker.pid: the process that runs the processing worker of that data folder. */
export const WORKER_LOCK_FILE = 'worker.pid';

/**
 * One processing worker per data folder: LanceDB keeps both copies when two processes insert the same new chunks
 * at once (see lambdas/adapters/index/lancedb.ts), so a second worker is refused while the first one's process lives. A worker
 * that died (even by SIGKILL) leaves its file behind; the next one sees its process gone and takes over.
 * Returns the release.
 */
export async function acquireWorkerLock(dataDir: string): Promise<() => void> {
  const path = join(resolve(dataDir), WORKER_LOCK_FILE);
  const mine = String(process.pid);
  for (let attempt = 1; attempt <= 20; attempt++) {
    try {
      writeFileSync(path, mine, { flag: 'wx' });
      return () => {
        try {
          if (readFileSync(path, 'utf8') === mine) rmSync(path, { force: true });
        } catch {
          // already gone
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder = '';
    try {
      holder = readFileSync(path, 'utf8').trim();
    } catch {
      continue; // removed meanwhile: try again
    }
    if (holder === '') {
      await new Promise((wait) => setTimeout(wait, 50)); // being written by a worker starting this very moment
      continue;
    }
    if (holder !== mine && isRunning(Number(holder))) {
      throw new Error(
        `process ${holder} already runs the processing worker of ${resolve(dataDir)} (${path}); one worker per DATA_DIR`,
      );
    }
    rmSync(path, { force: true });
  }
  throw new Error(`could not take ${path}`);
}
