/**
 * BrowserDriver of the stack's flow functions (BROWSER_DRIVER=lambda): each task runs in the BrowserTask function
 * (lambdas/handlers/browser/browser-task.ts), which has Chromium, invoked synchronously with the task's request; its
 * reply is the task's result, or the error that ended the task before its first step, rethrown here with its code.
 */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { AppError, type ErrorDetail } from '#core/errors';
import { BROWSER_TIME_LIMIT_MS } from '#core/flows/browser-task';
import {
  type BrowserDriver,
  type BrowserTaskRequest,
  type BrowserTaskResult,
  OutboundError,
  type OutboundErrorCode,
} from '#ports/flows';

/** What the BrowserTask function answers: the result, or the error (an AppError's) that ended the task. */
export type BrowserTaskReply =
  | { readonly ok: true; readonly result: BrowserTaskResult }
  | {
      readonly ok: false;
      readonly error: {
        readonly status: number;
        readonly code: string;
        readonly message: string;
        readonly details?: readonly ErrorDetail[];
      };
    };

export interface LambdaBrowserDriverOptions {
  /** The BrowserTask function's name (BROWSER_TASK_FUNCTION). */
  readonly functionName: string;
  readonly client: LambdaClient;
  /** Longest wait for the function's answer. Default: the task's time limit and a minute for Chromium to start. */
  readonly timeoutMs?: number;
}

const OUTBOUND_CODES: ReadonlySet<string> = new Set<OutboundErrorCode>([
  'TARGET_REFUSED',
  'OUTBOUND_FAILED',
  'BROWSER_UNAVAILABLE',
  'BROWSER_FAILED',
]);

export class LambdaBrowserDriver implements BrowserDriver {
  readonly name = 'lambda-browser-task';

  constructor(private readonly options: LambdaBrowserDriverOptions) {}

  async run(request: BrowserTaskRequest): Promise<BrowserTaskResult> {
    let answer: { FunctionError?: string; Payload?: Uint8Array };
    try {
      answer = await this.options.client.send(
        new InvokeCommand({
          FunctionName: this.options.functionName,
          InvocationType: 'RequestResponse',
          Payload: Buffer.from(JSON.stringify(request)),
        }),
        { abortSignal: AbortSignal.timeout(this.options.timeoutMs ?? BROWSER_TIME_LIMIT_MS + 60_000) },
      );
    } catch (error) {
      // Lambda's own refusal (403 no permission, 404 no function, 429 throttled), or no answer: the task never began.
      const { name, $metadata } = (error ?? {}) as { name?: string; $metadata?: { httpStatusCode?: number } };
      const status = $metadata?.httpStatusCode;
      const reason = name === 'TimeoutError' || name === 'AbortError' ? 'it did not answer in time' : name;
      throw unavailable(
        `the BrowserTask function could not be invoked (${status ? `HTTP ${status} ` : ''}${reason ?? 'no answer'})`,
      );
    }
    const text = Buffer.from(answer.Payload ?? new Uint8Array()).toString('utf8');
    if (answer.FunctionError !== undefined) {
      // The function crashed or timed out: its error message may hold internal detail; only its type is told.
      const type = parsedType(text, 'errorType');
      throw new OutboundError(
        'BROWSER_FAILED',
        `The BrowserTask function failed (${answer.FunctionError}${type ? `: ${type}` : ''})`,
      );
    }
    return resultOf(text);
  }

  async close(): Promise<void> {}
}

export function unavailable(reason: string): OutboundError {
  return new OutboundError('BROWSER_UNAVAILABLE', `No browser for this task: ${reason}`);
}

function resultOf(text: string): BrowserTaskResult {
  let reply: BrowserTaskReply;
  try {
    reply = JSON.parse(text) as BrowserTaskReply;
  } catch {
    throw new OutboundError('BROWSER_FAILED', 'The BrowserTask function answered something that is not JSON');
  }
  if (reply?.ok === true && isResult(reply.result)) return reply.result;
  if (reply?.ok === false && typeof reply.error?.code === 'string' && typeof reply.error.message === 'string') {
    const { status, code, message, details } = reply.error;
    if (OUTBOUND_CODES.has(code)) throw new OutboundError(code as OutboundErrorCode, message);
    throw new AppError(typeof status === 'number' ? status : 502, code, message, Array.isArray(details) ? details : []);
  }
  throw new OutboundError('BROWSER_FAILED', 'The BrowserTask function answered without a result');
}

function isResult(value: unknown): value is BrowserTaskResult {
  if (typeof value !== 'object' || value === null) return false;
  const result = value as Record<string, unknown>;
  return (
    typeof result.url === 'string' &&
    typeof result.title === 'string' &&
    typeof result.text === 'string' &&
    Array.isArray(result.steps)
  );
}

function parsedType(text: string, key = 'Type'): string | undefined {
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const type = parsed[key] ?? parsed.__type ?? parsed.code;
    return typeof type === 'string' ? type.replace(/[^\w.:-]/g, '').slice(0, 80) : undefined;
  } catch {
    return undefined;
  }
}
