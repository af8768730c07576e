/**
 * Recording from a flow: tracking returns at once, events reach the sink in batches, a failing sink keeps every event
 * queued until a retry stores it, and bad or reserved events fail in the code that tracked them. Values and texts
 * bounded for payloads (and node outputs) fit their bound whatever they hold, and a built-in event that breaks a
 * rule is the runtime's fault, never a VALIDATION_ERROR.
 */
import fc from 'fast-check';
import { type NewAnalyticsEvent, PAYLOAD_MAX_BYTES } from '#core/analytics/event';
import {
  AnalyticsRecorder,
  boundedValue,
  builtInEventKey,
  EventRecordingError,
  recordBuiltInEvent,
  type TruncatedPreview,
  trackAnalyticsEvent,
  truncatedText,
} from '#core/analytics/track';
import { ValidationError } from '#core/errors';
import type { AnalyticsSink } from '#ports/analytics';

const scope = {
  agentId: '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10',
  environment: 'production' as const,
  sessionId: '5f1d2c9a-7b10-4f0e-9a59-0b5a1a9e8c1f',
};

/** A sink that keeps what it stores, one record per key, and can be told to fail its next writes. */
function memorySink() {
  const stored = new Map<string, NewAnalyticsEvent>();
  const batches: number[] = [];
  let failures = 0;
  const sink: AnalyticsSink & { failNext(n: number): void } = {
    failNext(n) {
      failures = n;
    },
    async write(events) {
      await new Promise((resolve) => setImmediate(resolve));
      if (failures > 0) {
        failures -= 1;
        throw new Error('DynamoDB is unavailable');
      }
      batches.push(events.length);
      let written = 0;
      for (const event of events) {
        if (stored.has(event.eventKey)) continue;
        stored.set(event.eventKey, event);
        written += 1;
      }
      return { written, alreadyStored: events.length - written };
    },
  };
  return { sink, stored, batches };
}

let uuidCount = 0;
const ids = { uuid: () => `uuid-${++uuidCount}` };
const noWait = async () => undefined;

it('returns before anything is written, and flush() writes the queued events in batches', async () => {
  const { sink, stored, batches } = memorySink();
  const recorder = new AnalyticsRecorder(sink, ids, { maxBatchSize: 10, maxDelayMs: 60_000, sleep: noWait });
  for (let i = 0; i < 25; i += 1) trackAnalyticsEvent(recorder, scope, 'checkout', { i });
  expect(stored.size).toBe(0);
  await recorder.flush();
  expect(stored.size).toBe(25);
  expect(batches).toEqual([10, 10, 5]);
  expect(recorder.pending).toBe(0);
  expect([...stored.values()].map((e) => e.payload.i)).toEqual(Array.from({ length: 25 }, (_, i) => i));
});

it('starts a background write once a batch is full, without being asked', async () => {
  const { sink, stored } = memorySink();
  const recorder = new AnalyticsRecorder(sink, ids, { maxBatchSize: 5, maxDelayMs: 60_000 });
  for (let i = 0; i < 5; i += 1) trackAnalyticsEvent(recorder, scope, 'checkout');
  // Nobody calls flush(): the write must start by itself (maxDelayMs is a minute away).
  for (let i = 0; i < 200 && stored.size < 5; i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(stored.size).toBe(5);
});

it('writes a partial batch after maxDelayMs', async () => {
  const { sink, stored } = memorySink();
  const recorder = new AnalyticsRecorder(sink, ids, { maxBatchSize: 100, maxDelayMs: 10 });
  trackAnalyticsEvent(recorder, scope, 'checkout');
  for (let i = 0; i < 50 && stored.size === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(stored.size).toBe(1);
});

it('keeps every event queued while the sink fails, and stores each once when it recovers', async () => {
  const { sink, stored } = memorySink();
  const errors: unknown[] = [];
  const recorder = new AnalyticsRecorder(sink, ids, {
    maxBatchSize: 4,
    maxDelayMs: 60_000,
    attempts: 2,
    sleep: noWait,
    onBackgroundError: (error) => errors.push(error),
  });
  // Both attempts of the background write started by the 4th event fail; flush() waits for that same write.
  sink.failNext(2);
  for (let i = 0; i < 6; i += 1) trackAnalyticsEvent(recorder, scope, 'checkout', { i });
  await expect(recorder.flush()).rejects.toThrow('DynamoDB is unavailable');
  expect(recorder.pending).toBe(6);
  expect(errors).toHaveLength(1);
  await recorder.flush();
  expect(recorder.pending).toBe(0);
  expect(stored.size).toBe(6);
});

it('retries a failed write within flush() before giving up', async () => {
  const { sink, stored } = memorySink();
  const pauses: number[] = [];
  const recorder = new AnalyticsRecorder(sink, ids, {
    attempts: 3,
    retryDelayMs: 100,
    sleep: async (ms) => {
      pauses.push(ms);
    },
  });
  sink.failNext(2);
  trackAnalyticsEvent(recorder, scope, 'checkout');
  await recorder.flush();
  expect(stored.size).toBe(1);
  expect(pauses).toEqual([100, 200]);
});

it('uses the given eventKey, so tracking the same work twice records it once', async () => {
  const { sink, stored } = memorySink();
  const recorder = new AnalyticsRecorder(sink, ids, { sleep: noWait });
  expect(trackAnalyticsEvent(recorder, scope, 'checkout', { a: 1 }, { eventKey: 'order-17' })).toBe('order-17');
  await recorder.flush();
  trackAnalyticsEvent(recorder, scope, 'checkout', { a: 2 }, { eventKey: 'order-17' });
  await recorder.flush();
  expect([...stored.values()].map((e) => e.payload)).toEqual([{ a: 1 }]);
});

it('records built-in events under keys derived from the invocation', async () => {
  const { sink, stored } = memorySink();
  const recorder = new AnalyticsRecorder(sink, ids, { sleep: noWait });
  for (let attempt = 0; attempt < 2; attempt += 1) {
    recordBuiltInEvent(recorder, scope, 'invocation_start', {}, { invocationId: 'inv-1' });
    recordBuiltInEvent(recorder, scope, 'node_execution', { node: 'greet' }, { invocationId: 'inv-1', step: 1 });
    recordBuiltInEvent(recorder, scope, 'invocation_error', { message: 'boom' }, { invocationId: 'inv-1' });
    await recorder.flush();
  }
  expect([...stored.keys()]).toEqual([
    'inv-1:invocation_start',
    builtInEventKey('inv-1', 'node_execution', 1),
    'inv-1:invocation_error',
  ]);
});

describe('refused at once, in the code that tracks', () => {
  const recorder = new AnalyticsRecorder(memorySink().sink, ids);

  it.each([
    ['a built-in name', () => trackAnalyticsEvent(recorder, scope, 'invocation_start'), 'eventName.reserved'],
    ['an empty name', () => trackAnalyticsEvent(recorder, scope, ''), 'minLength'],
    ['a name with a space', () => trackAnalyticsEvent(recorder, scope, 'add to cart'), 'eventName.format'],
    [
      'a payload over 32 KiB',
      () => trackAnalyticsEvent(recorder, scope, 'big', { text: 'x'.repeat(33 * 1024) }),
      'payload.maxBytes',
    ],
    ['a payload that is an array', () => trackAnalyticsEvent(recorder, scope, 'list', [] as never), 'type'],
    [
      'an environment that does not exist',
      () => trackAnalyticsEvent(recorder, { ...scope, environment: 'prod' as never }, 'checkout'),
      'enum',
    ],
  ])('%s', (_name, track, rule) => {
    let error: unknown;
    try {
      track();
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.map((d) => d.rule)).toEqual([rule]);
    expect(recorder.pending).toBe(0);
  });

  it('a payload that cannot be JSON', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => trackAnalyticsEvent(recorder, scope, 'loop', cyclic)).toThrow(ValidationError);
  });
});

it('stores the payload as plain JSON (dates become strings, undefined disappears)', async () => {
  const { sink, stored } = memorySink();
  const recorder = new AnalyticsRecorder(sink, ids, { sleep: noWait });
  trackAnalyticsEvent(recorder, scope, 'checkout', { at: new Date(0), gone: undefined, n: 1 });
  await recorder.flush();
  expect([...stored.values()][0].payload).toEqual({ at: '1970-01-01T00:00:00.000Z', n: 1 });
});

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

describe('boundedValue', () => {
  it('returns a value whose JSON fits the bound as it is', () => {
    const value = { status: 'shipped', items: [1, 2, 3] };
    expect(boundedValue(value, jsonBytes(value))).toBe(value);
  });

  it('turns a value over the bound into a preview of its JSON that fits, counting UTF-8 bytes', () => {
    // 3,000 characters but 9,000 bytes: a bound counted in characters would let it through.
    const value = { text: '€'.repeat(3_000) };
    const bounded = boundedValue(value, 4_096) as TruncatedPreview;
    expect(bounded.truncated).toBe(true);
    expect(bounded.bytes).toBe(jsonBytes(value));
    expect(JSON.stringify(value).startsWith(bounded.preview)).toBe(true);
    expect(bounded.preview.length).toBeGreaterThan(1_000);
    expect(jsonBytes(bounded)).toBeLessThanOrEqual(4_096);
  });

  it('keeps the preview within the bound for any content, quotes, backslashes and control characters included', () => {
    // Strings of any code points (lone surrogates too) and JSON documents, mostly larger than their bound.
    const values = fc.oneof(
      fc.string({ unit: 'binary', minLength: 20, maxLength: 4_000, size: 'max' }),
      fc.array(fc.string({ unit: 'binary', maxLength: 200 }), { minLength: 5, maxLength: 40, size: 'max' }),
      fc.jsonValue({ maxDepth: 4 }),
    );
    let truncated = 0;
    fc.assert(
      fc.property(values, fc.integer({ min: 64, max: 2_048 }), (value, maxBytes) => {
        const bounded = boundedValue(value, maxBytes);
        expect(jsonBytes(bounded)).toBeLessThanOrEqual(maxBytes);
        if (bounded !== value) {
          const { preview, bytes } = bounded as TruncatedPreview;
          expect(bytes).toBe(jsonBytes(value));
          expect(JSON.stringify(value).startsWith(preview)).toBe(true);
          truncated += 1;
        }
      }),
      { numRuns: 300 },
    );
    expect(truncated).toBeGreaterThan(100);
    // Each of these characters takes 2 to 6 bytes as JSON, and again more once the preview is escaped.
    const hostile = { text: '"\\\u0001€'.repeat(20_000) };
    const bounded = boundedValue(hostile, 8_192) as TruncatedPreview;
    expect(jsonBytes(bounded)).toBeLessThanOrEqual(8_192);
    expect(bounded.preview.length).toBeGreaterThan(2_000);
  });
});

describe('truncatedText', () => {
  it('leaves a text within the bound alone and cuts a longer one to the bound, ending in an ellipsis', () => {
    expect(truncatedText('short', 1_000)).toBe('short');
    const cut = truncatedText(`The host ${'a'.repeat(40_000)} could not be resolved`, 1_000);
    expect(cut).toHaveLength(1_000);
    expect(cut.startsWith('The host aaa')).toBe(true);
    expect(cut.endsWith('…')).toBe(true);
  });

  it('never leaves half of a surrogate pair', () => {
    const cut = truncatedText('😀'.repeat(10), 6);
    expect(cut).toBe('😀😀…');
  });
});

it('reports a built-in event that breaks a rule as the runtime’s fault, never as a VALIDATION_ERROR', () => {
  const recorder = new AnalyticsRecorder(memorySink().sink, ids);
  let error: unknown;
  try {
    recordBuiltInEvent(
      recorder,
      scope,
      'invocation_error',
      { message: `The host ${'a'.repeat(PAYLOAD_MAX_BYTES)} could not be resolved` },
      { invocationId: 'inv-2' },
    );
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(EventRecordingError);
  expect(error).not.toBeInstanceOf(ValidationError);
  expect(recorder.pending).toBe(0);
});
