/**
 * A function of the synthesized stack in a Node 22 process of its own (lambda-child.cjs), started on its first
 * invocation and kept warm as Lambda keeps an execution environment: one invocation at a time, its template
 * timeout enforced (the process is killed and the next invocation starts cold), and every AWS call it makes checked
 * against its role before it leaves the process.
 */
import { type ChildProcess, fork } from 'node:child_process';
import * as path from 'node:path';
import { handlerEntry, lambdaRuntimeEnvironment, NODE22 } from './asset-checks';
import type { TemplateFunction } from './cloud-assembly';
import { AccessDeniedError, type FunctionPermissions } from './iam';

const CHILD = path.join(__dirname, 'lambda-child.cjs');

export class InvocationError extends Error {
  constructor(
    readonly functionId: string,
    readonly errorName: string,
    message: string,
  ) {
    super(`${functionId} failed: ${errorName}: ${message}`);
    this.name = 'InvocationError';
  }
}

interface ChildMessage {
  type: 'ready' | 'load-error' | 'check' | 'result' | 'error';
  id?: number;
  calls?: { action: string; resource: string }[];
  result?: unknown;
  error?: { name: string; message: string; stack: string };
}

export class FunctionHost {
  /** Calls the function's role did not allow: each made its SDK call fail with AccessDenied. */
  readonly denials: AccessDeniedError[] = [];
  /** Invocations so far, cold or warm. */
  invocations = 0;
  private child: ChildProcess | undefined;
  private ready: Promise<void> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private log = '';
  private nextInvocation = 0;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  constructor(
    readonly fn: TemplateFunction,
    private readonly environment: Record<string, string>,
    readonly permissions: FunctionPermissions,
    private readonly nodePath: string,
  ) {}

  /** What the function printed (its CloudWatch log). */
  output(): string {
    return this.log;
  }

  private start(): Promise<void> {
    const { file, exportName } = handlerEntry(this.fn);
    const child = fork(CHILD, [file, exportName], {
      execPath: NODE22,
      // Not the parent's (tsx's --import, jest's flags): Lambda starts the runtime with none.
      execArgv: [],
      cwd: this.fn.assetDirectory,
      env: { ...lambdaRuntimeEnvironment(this.fn, this.nodePath), ...this.environment },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    const append = (chunk: Buffer) => {
      this.log += chunk.toString();
      if (this.log.length > 200_000) this.log = this.log.slice(-100_000);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    return new Promise((resolve, reject) => {
      child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') resolve();
        else if (message.type === 'load-error') {
          reject(new InvocationError(this.fn.logicalId, message.error?.name ?? 'Error', message.error?.message ?? ''));
        } else if (message.type === 'check') void this.answerCheck(child, message);
        else if (message.type === 'result') this.settle(message.id, message.result);
        else if (message.type === 'error') {
          const { name = 'Error', message: text = '' } = message.error ?? {};
          this.settle(message.id, undefined, new InvocationError(this.fn.logicalId, name, text));
        }
      });
      child.on('exit', (code, signal) => {
        this.child = undefined;
        this.ready = undefined;
        const error = new InvocationError(this.fn.logicalId, 'Runtime.ExitError', `exited (${code ?? signal})`);
        reject(error);
        for (const id of [...this.waiting.keys()]) this.settle(id, undefined, error);
      });
    });
  }

  private async answerCheck(child: ChildProcess, message: ChildMessage): Promise<void> {
    const denied = await this.authorize(message.calls ?? []);
    child.send({ type: 'decision', id: message.id, denied });
  }

  /**
   * Checks each (action, resource) of one request against the function's role: the first refusal's message, or
   * undefined when the role allows them all. Every refusal is recorded in `denials`.
   */
  async authorize(calls: readonly { action: string; resource: string }[]): Promise<string | undefined> {
    let denied: string | undefined;
    for (const call of calls) {
      try {
        await this.permissions.check(call.action, call.resource);
      } catch (error) {
        // Whatever went wrong, the caller gets its answer: a refusal (an invocation left waiting would only time out).
        const refusal =
          error instanceof AccessDeniedError
            ? error
            : new AccessDeniedError(this.fn.logicalId, call.action, call.resource, `NotEvaluated (${String(error)})`);
        this.denials.push(refusal);
        denied ??= refusal.message;
      }
    }
    return denied;
  }

  private settle(id: number | undefined, result: unknown, error?: Error): void {
    if (id === undefined) return;
    const waiter = this.waiting.get(id);
    this.waiting.delete(id);
    if (error) waiter?.reject(error);
    else waiter?.resolve(result);
  }

  /** Invokes the function with `event`; invocations of one function run one after another, as in one environment. */
  invoke<T = unknown>(event: unknown): Promise<T> {
    const run = this.queue.then(() => this.invokeNow(event));
    this.queue = run.catch(() => undefined);
    return run as Promise<T>;
  }

  private async invokeNow(event: unknown): Promise<unknown> {
    this.invocations++;
    this.ready ??= this.start();
    await this.ready;
    const child = this.child;
    if (!child) throw new InvocationError(this.fn.logicalId, 'Runtime.ExitError', 'not running');
    const id = this.nextInvocation++;
    const timeoutMs = this.fn.timeoutSeconds * 1000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        this.settle(id, undefined, new InvocationError(this.fn.logicalId, 'Sandbox.Timedout', `after ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      child.send({ type: 'invoke', id, event, deadline: Date.now() + timeoutMs });
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  }
}
