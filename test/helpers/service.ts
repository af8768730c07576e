/**
 * The service under test: by default `bin/local.ts` (what `npm start` runs) as a child process on free ports with
 * its data in a temporary folder; with TEST_BASE_URL and TEST_TOKENS set, an already running deployment
 * (LocalStack through `npm run test:localstack`, or a local runtime started by hand).
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LocalCredentials } from '../../lib/local/engine-credentials';
import type { PeoplePool } from '../../lib/stack-check/stack-runner';
import { serviceCheckDir, throwViolations } from './openapi-check';

export interface TestService {
  readonly baseUrl: string;
  /** Tokens with every scope, each of its own organization: `tokens[0]` is org A, `tokens[1]` org B. */
  readonly tokens: readonly [string, string];
  readonly dataDir: string | null;
  /** The local runtime's DynamoDB endpoint (tables are named by their logical names); null for a deployment. */
  readonly dynamodbEndpoint: string | null;
  /** The credentials the local runtime's engines check (its DATA_DIR/engines.json); null for a deployment. */
  readonly engineCredentials: LocalCredentials | null;
  /**
   * A deployment's people (TEST_PEOPLE: the user pool, and a person who owns `tokens[0]`'s organization); null where
   * there is none, and for the local runtime, which prints its pool (test/helpers/people.ts).
   */
  readonly people: { pool: PeoplePool; owner: { email: string; password: string } } | null;
  /** The runtime's process id (its memory can be read from /proc); null for a deployment. */
  readonly pid: number | null;
  /** Everything the process printed so far. */
  output(): string;
  stop(): Promise<void>;
  /** SIGKILL: the process dies at once, mid-work, as in a crash. Its data folder stays. */
  kill(): Promise<void>;
}

const ROOT = resolve(__dirname, '..', '..');

export const DEFAULT_TOKENS: [string, string] = ['test-org-a-token-0123456789', 'test-org-b-token-0123456789'];

export async function startService(
  options: { env?: Record<string, string>; dataDir?: string } = {},
): Promise<TestService> {
  if (process.env.TEST_BASE_URL) {
    // A suite that asks for another upload URL lifetime needs a deployment made with it (`-c uploadUrlTtlSeconds`):
    // TEST_BASE_URL_UPLOAD_TTL_<seconds> and TEST_TOKENS_UPLOAD_TTL_<seconds>.
    const ttl = options.env?.UPLOAD_URL_TTL_SECONDS;
    const baseUrl = ttl ? process.env[`TEST_BASE_URL_UPLOAD_TTL_${ttl}`] : process.env.TEST_BASE_URL;
    if (!baseUrl) {
      throw new Error(
        `this suite needs a deployment with -c uploadUrlTtlSeconds=${ttl}: TEST_BASE_URL_UPLOAD_TTL_${ttl}`,
      );
    }
    const tokens = ((ttl ? process.env[`TEST_TOKENS_UPLOAD_TTL_${ttl}`] : process.env.TEST_TOKENS) ?? '').split(',');
    if (tokens.length < 2) throw new Error('TEST_TOKENS must hold two tokens of different organizations');
    return {
      baseUrl: baseUrl.replace(/\/$/, ''),
      tokens: [tokens[0], tokens[1]],
      dataDir: null,
      dynamodbEndpoint: null,
      engineCredentials: null,
      people: process.env.TEST_PEOPLE ? (JSON.parse(process.env.TEST_PEOPLE) as TestService['people']) : null,
      pid: null,
      output: () => '',
      stop: async () => undefined,
      kill: async () => {
        throw new Error('a deployment cannot be killed from a test');
      },
    };
  }
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'aps-test-'));
  // Every answer is checked against the OpenAPI document (test/helpers/openapi-check.ts); stop and kill throw the
  // violations. Set after the suite's environment: no suite can turn it off.
  const checkDir = serviceCheckDir();
  // One process (not the tsx launcher, which runs the code in a child of its own), so SIGKILL really kills it.
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      S3_PORT: '0',
      DATA_DIR: dataDir,
      DEV_TOKEN: DEFAULT_TOKENS.join(','),
      // Suites send bursts (many uploads at once): a limit they do not reach, unless a suite sets its own
      // (test/api/rate-limits.test.ts tests the limits, the defaults included).
      RATE_LIMIT_PER_SECOND: '1000000',
      RATE_LIMIT_BURST: '1000000',
      // The flow work budget likewise (nodes and browser seconds: docs/rate-limits.md, "Flow work"), unless a suite
      // sets its own (test/integration/flow-work.test.ts).
      FLOW_WORK_PER_SECOND: '1000000',
      FLOW_WORK_BURST: '1000000',
      // The same for the per-client limits (test/integration/client-limits.test.ts tests them).
      SIGNUP_LIMIT_PER_5_MINUTES: '1000000',
      FAILED_AUTH_LIMIT_PER_MINUTE: '1000000',
      // No people's accounts unless a suite asks (COGNITO=on): cognito-local is a process of its own, ~100 MB.
      COGNITO: 'off',
      // The console is built by the suites that open it (test/web), not by every runtime that starts.
      CONSOLE_BUILD: 'off',
      // The worker in the runtime's process: one process a runtime, which the suites start by the dozen. The default
      // of `npm start`, a worker process of its own, has its suite (test/integration/worker-process.test.ts).
      LOCAL_WORKER: 'in-process',
      // The engines likewise (`npm start` runs them in a process of their own: test/integration/engines-process.test.ts).
      LOCAL_ENGINES: 'in-process',
      ...options.env,
      OPENAPI_CHECK_DIR: checkDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  if (process.env.TEST_SERVICE_LOG) {
    // Debugging aid: the runtime's own output, as it happens.
    child.stdout?.pipe(process.stderr);
    child.stderr?.pipe(process.stderr);
  }
  const baseUrl = await waitForListening(child, () => output);
  return {
    baseUrl,
    tokens: DEFAULT_TOKENS,
    dataDir,
    dynamodbEndpoint: /DynamoDB at (http:\/\/[^\s,]+)/.exec(output)?.[1] ?? null,
    people: null,
    // Written by the runtime before it says it listens.
    engineCredentials: (
      JSON.parse(readFileSync(join(dataDir, 'engines.json'), 'utf8')) as { credentials: LocalCredentials }
    ).credentials,
    pid: child.pid ?? null,
    output: () => output,
    stop: async () => {
      await stopChild(child);
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
      throwViolations(checkDir, `the local runtime (${baseUrl})`);
    },
    kill: async () => {
      await new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGKILL');
      });
      throwViolations(checkDir, `the local runtime (${baseUrl})`);
    },
  };
}

function waitForListening(child: ChildProcess, output: () => string): Promise<string> {
  return new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`local runtime did not start within 60 s:\n${output()}`));
    }, 60_000);
    const check = () => {
      const match = /listening on (http:\/\/[^\s]+)/.exec(output());
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`local runtime exited with ${code}:\n${output()}`));
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}

export interface ApiResponse<T = Record<string, unknown>> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
}

/** A small JSON client of the service. `token: null` sends no Authorization header. */
export function client(service: TestService, defaultToken: string | null = service.tokens[0]) {
  return async function call<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: {
      token?: string | null;
      body?: unknown;
      query?: Record<string, string>;
      rawBody?: string;
      headers?: Record<string, string>;
    } = {},
  ): Promise<ApiResponse<T>> {
    const url = new URL(service.baseUrl + path);
    for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
    const token = options.token === undefined ? defaultToken : options.token;
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(url, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text, the assertion will show it
    }
    return { status: response.status, body: parsed as T, headers: response.headers };
  };
}
