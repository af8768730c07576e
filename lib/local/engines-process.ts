/**
 * The engines (DynamoDB, S3, SQS: lib/local/engines.ts) in a process of their own, started and stopped by the
 * runtime: what `npm start` does by default (LOCAL_ENGINES=process). dynalite's LevelDB reads and writes, s3rver's
 * files, fauxqs and the SigV4 check of every engine call then run on another core than the router and the handlers,
 * which reach them over loopback exactly as before (they always did: the engines are HTTP servers). The load
 * benchmark's profile showed them at about a third of the serving process's CPU (bench/RESULTS.md).
 *
 * The child answers its endpoints over the IPC channel once every engine listens. It stops when asked (a `stop`
 * message), and by itself when the channel closes: a runtime that dies, even by SIGKILL, leaves no engines behind.
 * It ignores SIGINT, which a terminal's Ctrl-C sends the whole process group: the runtime stops it last, after the
 * worker and the handlers that still use it.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import type { EngineEndpoints, EngineOptions, Engines } from './engines';

const CHILD_SCRIPT = join(__dirname, 'engines-child.ts');
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

/** The options of lib/local/engines.ts that cross a process boundary (no callbacks). */
export type EngineProcessOptions = Omit<EngineOptions, 'onNotificationFiltered'>;

/** What the engines process sends its parent over IPC. */
export type EnginesMessage =
  | { readonly kind: 'ready'; readonly endpoints: EngineEndpoints }
  | { readonly kind: 'failed'; readonly message: string }
  | { readonly kind: 'answer'; readonly id: number; readonly value: unknown };

/**
 * What the parent sends the engines process: stop, or a question for the benchmarks (its CPU time so far, in ms;
 * start or stop a CPU profile of it, node:inspector's, which `profile-stop` answers).
 */
export type EnginesCommand =
  | { readonly kind: 'stop' }
  | { readonly kind: 'cpu' | 'profile-start' | 'profile-stop'; readonly id: number };

/** The engines as the child serves them: their endpoints and the child's pid (whose CPU the load benchmark counts). */
export interface EnginesProcess extends Engines {
  readonly pid: number;
  /** The child's CPU time so far (user + system), in ms. */
  cpuMs(): Promise<number>;
  /** Starts a sampling CPU profile of the child; `stopProfile` answers it (a .cpuprofile's JSON). */
  startProfile(): Promise<void>;
  stopProfile(): Promise<unknown>;
}

/**
 * Starts the engines in a child process and resolves with their endpoints once they listen. `onExit` is told if the
 * child exits before it was asked to stop (the runtime cannot serve without it).
 */
export function startEnginesProcess(
  options: EngineProcessOptions,
  onExit?: (code: number | null, signal: NodeJS.Signals | null) => void,
): Promise<EnginesProcess> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = fork(CHILD_SCRIPT, [JSON.stringify(options)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    let tail = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      tail = (tail + chunk.toString()).slice(-4000);
    });
    let stopping = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`The engines process did not start within ${START_TIMEOUT_MS} ms:\n${tail}`));
    }, START_TIMEOUT_MS);
    const onEarlyExit = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      reject(new Error(`The engines process exited (${code ?? signal}) before it started:\n${tail}`));
    };
    child.once('exit', onEarlyExit);
    let nextId = 0;
    const pending = new Map<number, (value: unknown) => void>();
    const ask = (kind: 'cpu' | 'profile-start' | 'profile-stop') =>
      new Promise<unknown>((answer, fail) => {
        if (!child.connected) return fail(new Error('the engines process is not running'));
        nextId += 1;
        pending.set(nextId, answer);
        child.send({ kind, id: nextId } satisfies EnginesCommand);
      });
    child.on('message', (message: EnginesMessage) => {
      if (message.kind === 'answer') {
        pending.get(message.id)?.(message.value);
        pending.delete(message.id);
        return;
      }
      if (message.kind === 'failed') {
        clearTimeout(timer);
        child.off('exit', onEarlyExit);
        child.kill('SIGKILL');
        reject(new Error(message.message));
        return;
      }
      if (message.kind !== 'ready') return;
      clearTimeout(timer);
      child.off('exit', onEarlyExit);
      child.once('exit', (code, signal) => {
        if (!stopping) onExit?.(code, signal);
      });
      resolve({
        ...message.endpoints,
        pid: child.pid as number,
        cpuMs: async () => (await ask('cpu')) as number,
        startProfile: async () => {
          await ask('profile-start');
        },
        stopProfile: () => ask('profile-stop'),
        stop: async () => {
          if (stopping || child.exitCode !== null || child.signalCode !== null) return;
          stopping = true;
          const exited = new Promise<void>((done) => child.once('exit', () => done()));
          const kill = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
          if (child.connected) child.send({ kind: 'stop' } satisfies EnginesCommand);
          else child.kill('SIGTERM');
          await exited;
          clearTimeout(kill);
        },
      });
    });
  });
}
