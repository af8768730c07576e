/**
 * Recording analytics events from a running flow. `trackAnalyticsEvent()` (agent code) and `recordBuiltInEvent()`
 * (the flow runtime: invocation_start, node_execution, invocation_error) only queue the event and return at once;
 * the recorder writes queued events to the AnalyticsSink in batches, in the background, and `flush()` at the end of
 * an invocation waits for all of them. A failed batch stays queued (nothing is dropped) and is retried; the sink's
 * event keys make a retry that did reach storage harmless. `boundedValue` and `truncatedText` keep what the runtime
 * records (and what it stores as node outputs) within their bounds.
 */

import { ValidationError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import type { AnalyticsSink } from '#ports/analytics';
import type { IdGenerator } from '#ports/services';
import { BUILT_IN_EVENTS, type BuiltInEventName, checkedEvent, type NewAnalyticsEvent } from './event';

export interface RecorderOptions {
  /** Events per sink write (one id allocation per agent, BatchWriteItem calls of 25). Default 100. */
  readonly maxBatchSize?: number;
  /** Longest time a queued event waits before a background write starts. Default 1,000 ms. */
  readonly maxDelayMs?: number;
  /** Attempts per batch before a write is reported as failed (the batch stays queued). Default 3. */
  readonly attempts?: number;
  /** First pause between attempts, doubled each time. Default 100 ms. */
  readonly retryDelayMs?: number;
  /** Told about a background write that failed; `flush()` retries the batch and rejects if it fails again. */
  readonly onBackgroundError?: (error: unknown) => void;
  readonly sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class AnalyticsRecorder {
  private readonly queue: NewAnalyticsEvent[] = [];
  private draining: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The last background write failed: wait for the timer (or flush) instead of retrying on every track call. */
  private backingOff = false;
  private readonly maxBatchSize: number;
  private readonly maxDelayMs: number;
  private readonly attempts: number;
  private readonly retryDelayMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly sink: AnalyticsSink,
    private readonly ids: IdGenerator,
    private readonly options: RecorderOptions = {},
  ) {
    this.maxBatchSize = options.maxBatchSize ?? 100;
    this.maxDelayMs = options.maxDelayMs ?? 1000;
    this.attempts = options.attempts ?? 3;
    this.retryDelayMs = options.retryDelayMs ?? 100;
    this.sleep = options.sleep ?? defaultSleep;
  }

  /** Events queued and not yet stored. */
  get pending(): number {
    return this.queue.length;
  }

  /**
   * Queues one event (checked now, so a bad event fails in the code that made it) and returns its key. Without an
   * `eventKey` a new UUID is used: retries inside this recorder are then idempotent, a re-run of the flow is not.
   */
  record(event: Omit<NewAnalyticsEvent, 'eventKey'> & { readonly eventKey?: string }): string {
    const checked = checkedEvent({ ...event, eventKey: event.eventKey ?? this.ids.uuid() });
    this.queue.push(checked);
    if (this.queue.length >= this.maxBatchSize && !this.draining && !this.backingOff) this.drainInBackground();
    else this.scheduleDrain();
    return checked.eventKey;
  }

  /** Stores everything queued so far. Rejects when a batch still fails after its attempts; it stays queued. */
  async flush(): Promise<void> {
    this.clearTimer();
    while (this.queue.length > 0 || this.draining) await this.drain();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private scheduleDrain(): void {
    this.timer ??= setTimeout(() => this.drainInBackground(), this.maxDelayMs).unref();
  }

  private drainInBackground(): void {
    this.clearTimer();
    this.drain().then(
      () => {
        this.backingOff = false;
      },
      (error: unknown) => {
        this.backingOff = true;
        this.scheduleDrain();
        this.options.onBackgroundError?.(error);
      },
    );
  }

  /** One writer at a time, oldest batch first; a batch leaves the queue only once the sink has stored it. */
  private drain(): Promise<void> {
    if (!this.draining) {
      const run = async () => {
        while (this.queue.length > 0) {
          const batch = this.queue.slice(0, this.maxBatchSize);
          await this.writeWithRetries(batch);
          this.queue.splice(0, batch.length);
        }
      };
      // `finally` runs as a later microtask, so `draining` is always set before it is cleared.
      this.draining = run().finally(() => {
        this.draining = undefined;
      });
    }
    return this.draining;
  }

  private async writeWithRetries(batch: readonly NewAnalyticsEvent[]): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.sink.write(batch);
        return;
      } catch (error) {
        if (attempt >= this.attempts) throw error;
        await this.sleep(this.retryDelayMs * 2 ** (attempt - 1));
      }
    }
  }
}

/** Who the events of one invocation belong to. */
export interface AnalyticsScope {
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId: string;
}

/**
 * Records a custom event from agent code (the spec's ANALYTICS_EVENT). Built-in names are reserved for the runtime.
 * Pass `eventKey` (unique within the agent, e.g. derived from the invocation) to make a re-run of the same work
 * record the event once. Returns the event key.
 */
export function trackAnalyticsEvent(
  recorder: AnalyticsRecorder,
  scope: AnalyticsScope,
  eventName: string,
  payload: Record<string, unknown> = {},
  options: { readonly eventKey?: string } = {},
): string {
  refuseReservedName(eventName);
  return recorder.record({ ...scope, eventName, payload, eventKey: options.eventKey });
}

/** 400 `eventName.reserved` for a built-in name: those are recorded by the runtime alone. */
export function refuseReservedName(eventName: string): void {
  if ((BUILT_IN_EVENTS as readonly string[]).includes(eventName)) {
    throw new ValidationError([
      { field: 'eventName', rule: 'eventName.reserved', message: `eventName ${eventName} is recorded by the runtime` },
    ]);
  }
}

/**
 * A built-in event the runtime could not record (its payload broke an event rule). Deliberately not an AppError: the
 * runtime built the payload, so this is a fault of ours, never the caller's VALIDATION_ERROR.
 */
export class EventRecordingError extends Error {
  constructor(eventName: BuiltInEventName, cause: ValidationError) {
    super(`The built-in event ${eventName} could not be recorded: ${cause.message}`, { cause });
    this.name = 'EventRecordingError';
  }
}

/**
 * Records a built-in event. The key is derived from the invocation, so a retried invocation does not count twice.
 * Throws EventRecordingError when the payload breaks a rule (the runtime bounds each part with `boundedValue`).
 */
export function recordBuiltInEvent(
  recorder: AnalyticsRecorder,
  scope: AnalyticsScope,
  eventName: BuiltInEventName,
  payload: Record<string, unknown>,
  invocationKey: { readonly invocationId: string; readonly step?: string | number },
): string {
  const eventKey = builtInEventKey(invocationKey.invocationId, eventName, invocationKey.step);
  try {
    return recorder.record({ ...scope, eventName, payload, eventKey });
  } catch (error) {
    if (error instanceof ValidationError) throw new EventRecordingError(eventName, error);
    throw error;
  }
}

/**
 * recordBuiltInEvent for an event that is a side note of what it records (a call of the agent's code, a delivery
 * attempt): one whose payload breaks a rule is lost alone, and nothing else fails with it.
 */
export function recordBuiltInEventIfValid(...args: Parameters<typeof recordBuiltInEvent>): void {
  try {
    recordBuiltInEvent(...args);
  } catch (recording) {
    if (!(recording instanceof EventRecordingError)) throw recording;
  }
}

/** `<invocationId>:<eventName>[:<step>]`, e.g. `…:node_execution:3` for the third node the invocation ran. */
export function builtInEventKey(invocationId: string, eventName: BuiltInEventName, step?: string | number): string {
  return step === undefined ? `${invocationId}:${eventName}` : `${invocationId}:${eventName}:${step}`;
}

/** What `boundedValue` keeps of a value too large for its bound. */
export interface TruncatedPreview {
  readonly truncated: true;
  /** UTF-8 size of the whole value as JSON. */
  readonly bytes: number;
  /** The start of that JSON text (so usually not valid JSON itself). */
  readonly preview: string;
}

const utf8 = new TextEncoder();

/**
 * The value as it is when its JSON takes at most `maxBytes` (UTF-8), else a TruncatedPreview whose own JSON fits in
 * `maxBytes` (for any bound above ~64 bytes). The runtime bounds each part of a built-in event's payload with it, so
 * an event always fits PAYLOAD_MAX_BYTES, and each node's output in a session, so one node cannot fill the state.
 */
export function boundedValue(value: unknown, maxBytes: number): unknown {
  const text = JSON.stringify(value) ?? 'null';
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return value;
  // Re-escaping the preview as a JSON string can grow it (every `"` becomes `\"`): shrink until the whole fits.
  let room = maxBytes;
  for (;;) {
    const preview: TruncatedPreview = { truncated: true, bytes, preview: utf8Prefix(text, room) };
    const size = Buffer.byteLength(JSON.stringify(preview), 'utf8');
    if (size <= maxBytes || room === 0) return preview;
    room = Math.max(0, room - (size - maxBytes));
  }
}

/** `text` cut to at most `maxChars` UTF-16 units, ending in `…` when it was cut (never inside a surrogate pair). */
export function truncatedText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${withoutLoneHighSurrogate(text.slice(0, Math.max(0, maxChars - 1)))}…`;
}

/** The longest start of `text` of at most `maxBytes` in UTF-8, whole characters only. */
function utf8Prefix(text: string, maxBytes: number): string {
  const head = withoutLoneHighSurrogate(text.slice(0, maxBytes)); // a character takes at least one byte
  const { read } = utf8.encodeInto(head, new Uint8Array(maxBytes));
  return head.slice(0, read);
}

function withoutLoneHighSurrogate(text: string): string {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text;
}
