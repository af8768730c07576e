/**
 * `npm start`: the whole service on this machine, no cloud account needed.
 *   PORT (4000), S3_PORT (4001; upload URLs point here), DATA_DIR (.data), DEV_TOKEN (comma-separated tokens),
 *   LOCAL_WORKER (`process`: the processing worker and flow runner in a child process; `in-process` (or `on`): in this
 *   one; `off`: left to a separate worker, `npm run worker`, bin/worker.ts),
 *   PROCESSING_VISIBILITY_TIMEOUT_SECONDS (60; how long a received processing message stays hidden before it is
 *   delivered again), SCHEDULER_INTERVAL_MS (15000), SCHEDULER_CLOCK_FILE (tests: the scheduler's "now" read from a
 *   file), MAX_UPLOAD_BYTES (most bytes one request may store through the local S3 endpoint; default the larger of
 *   MAX_FILE_BYTES and ZIP_MAX_ARCHIVE_BYTES, 256 MiB), COGNITO (`on`; `off` starts no cognito-local: no people's
  accounts), COGNITO_PORT (a free one), DEV_USER (email:password: that person exists, confirmed), CONSOLE_BUILD
 *   (`on`: the web console is built into web/dist when it is not there; `off` serves whatever is there, or none),
 *   AGENT_CODE (a module run as every definition's agent code, its functionArn or url: docs/agent-code.md),
 *   OPENAPI_CHECK_DIR (tests: every answer checked against the OpenAPI document, violations kept in this folder:
 *   lib/local/openapi-check.ts).
 * The engines' credentials are made at the first start of a DATA_DIR: DATA_DIR/engine-credentials.json.
 */
// First: the log level, before any module builds a logger.
import '../lib/local/log-level';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TickOutcome } from '#core/flows/scheduler';
import { buildConsole, WEB_DIST } from '../lib/local/console-build';
import { defaultMaxUploadBytes } from '../lib/local/engines';
import { startLocalRuntime } from '../lib/local/runtime';

/**
 * SCHEDULER_CLOCK_FILE: the scheduler reads "now" (ISO 8601) from this file on every tick, so a test can move the
 * clock of schedule triggers by hand; a missing or unreadable file means the system clock.
 */
function schedulerClock(path: string | undefined): { now(): Date } | undefined {
  if (!path) return undefined;
  return {
    now: () => {
      try {
        const at = new Date(readFileSync(path, 'utf8').trim());
        return Number.isNaN(at.getTime()) ? new Date() : at;
      } catch {
        return new Date();
      }
    },
  };
}

/**
 * With SCHEDULER_CLOCK_FILE, each tick's outcome is written next to it (`<file>.last-tick`: the "now" it ran at, the
 * fires it sent to the flow runner's queue, those it found sent already, those whose send failed, a sequence number,
 * and the fires sent by every tick so far), so a test knows a tick has run at the clock it set.
 */
function tickRecorder(path: string | undefined): ((now: Date, outcome: TickOutcome) => void) | undefined {
  if (!path) return undefined;
  let sequence = 0;
  let sentTotal = 0;
  return (now, outcome) => {
    const { sent, alreadySent, failed } = outcome;
    sequence += 1;
    sentTotal += sent;
    writeFileSync(
      `${path}.last-tick`,
      JSON.stringify({ sequence, now: now.toISOString(), sent, alreadySent, failed, sentTotal }),
    );
  };
}

function milliseconds(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`${name} must be a whole number of milliseconds (0 = never), got ${raw}`);
    process.exit(2);
  }
  return value;
}

/** LOCAL_WORKER: `process` (default), `in-process` (also `on`, its name before `process` existed), or `off`. */
function workerMode(raw: string | undefined): boolean | 'process' {
  if (raw === undefined || raw === '' || raw === 'process') return 'process';
  if (raw === 'in-process' || raw === 'on') return true;
  if (raw === 'off') return false;
  console.error(`LOCAL_WORKER must be process, in-process or off, got ${raw}`);
  process.exit(2);
}

/** LOCAL_ENGINES: `process` (default: DynamoDB, S3 and SQS in a child process of their own) or `in-process`. */
function enginesMode(raw: string | undefined): 'inline' | 'process' {
  if (raw === undefined || raw === '' || raw === 'process') return 'process';
  if (raw === 'in-process') return 'inline';
  console.error(`LOCAL_ENGINES must be process or in-process, got ${raw}`);
  process.exit(2);
}

function seconds(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 43_200) {
    console.error(`${name} must be a whole number of seconds from 1 to 43200, got ${raw}`);
    process.exit(2);
  }
  return value;
}

function bytes(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) {
    console.error(`${name} must be a whole number of bytes, at least 1, got ${raw}`);
    process.exit(2);
  }
  return value;
}

function port(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    console.error(`${name} must be a port number (0 picks a free one), got ${raw}`);
    process.exit(2);
  }
  return value;
}

async function main(): Promise<void> {
  if (process.env.CONSOLE_BUILD !== 'off' && (await buildConsole({ force: false })) === 'built') {
    console.log(`Built the web console into ${WEB_DIST}`);
  }
  const runtime = await startLocalRuntime({
    port: port('PORT', 4000),
    s3Port: port('S3_PORT', process.env.PORT === '0' ? 0 : 4001),
    dataDir: process.env.DATA_DIR || '.data',
    devTokens: process.env.DEV_TOKEN || undefined,
    worker: workerMode(process.env.LOCAL_WORKER),
    engines: enginesMode(process.env.LOCAL_ENGINES),
    onEnginesExit: () => process.exit(1),
    visibilityTimeoutSeconds: seconds('PROCESSING_VISIBILITY_TIMEOUT_SECONDS', 60),
    maxUploadBytes: bytes('MAX_UPLOAD_BYTES', defaultMaxUploadBytes()),
    scheduleIntervalMs: milliseconds('SCHEDULER_INTERVAL_MS', 15_000),
    scheduleClock: schedulerClock(process.env.SCHEDULER_CLOCK_FILE),
    onScheduleTick: tickRecorder(process.env.SCHEDULER_CLOCK_FILE),
    cognito: process.env.COGNITO !== 'off',
    cognitoPort: port('COGNITO_PORT', 0),
    devUser: process.env.DEV_USER || undefined,
  });
  console.log(`DynamoDB at ${runtime.engines.dynamodbEndpoint}, SQS at ${runtime.engines.sqsEndpoint}`);
  if ('pid' in runtime.engines) console.log(`Engines (DynamoDB, S3, SQS) in process ${runtime.engines.pid}`);
  if (runtime.cognito) {
    const { endpoint, userPoolId, clientId } = runtime.cognito;
    console.log(`Cognito (people's sign-in) at ${endpoint}: user pool ${userPoolId}, app client ${clientId}`);
  }
  console.log(`Agent Platform local runtime listening on ${runtime.url} (S3 at ${runtime.engines.s3Endpoint})`);
  if (existsSync(join(WEB_DIST, 'index.html'))) console.log(`Web console at ${runtime.url}/`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: stopping`);
    await runtime.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error('local runtime failed to start:', error);
  process.exit(1);
});
