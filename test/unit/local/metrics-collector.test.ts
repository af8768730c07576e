import { METRIC } from '#ports/metrics';
import { KEPT_MINUTES, MetricsCollector } from '../../../lib/local/metrics-collector';

const START = Date.parse('2026-11-25T10:00:30.000Z');

function collectorAt() {
  let now = START;
  const collector = new MetricsCollector(() => new Date(now));
  return { collector, advance: (ms: number) => (now += ms) };
}

it('keeps a series per metric and dimensions, with totals, extremes and the last report', () => {
  const { collector, advance } = collectorAt();
  collector.count(METRIC.documentsReady);
  collector.count(METRIC.documentsReady, 2);
  collector.count(METRIC.documentsFailed, 1, { errorCode: 'PARSE_ERROR' });
  collector.count(METRIC.documentsFailed, 1, { errorCode: 'EMPTY_DOCUMENT' });
  advance(5_000);
  collector.count(METRIC.documentsFailed, 1, { errorCode: 'EMPTY_DOCUMENT' });
  collector.milliseconds(METRIC.processingDuration, 120);
  collector.milliseconds(METRIC.processingDuration, 40);

  const series = collector.snapshot();
  expect(series.map((s) => [s.name, s.dimensions, s.sum, s.samples])).toEqual([
    ['DocumentsFailed', { errorCode: 'EMPTY_DOCUMENT' }, 2, 2],
    ['DocumentsFailed', { errorCode: 'PARSE_ERROR' }, 1, 1],
    ['DocumentsReady', {}, 3, 2],
    ['ProcessingDuration', {}, 160, 2],
  ]);
  const duration = collector.snapshot(METRIC.processingDuration)[0];
  expect(duration).toMatchObject({ unit: 'Milliseconds', min: 40, max: 120, lastAt: '2026-11-25T10:00:35.000Z' });
  expect(collector.snapshot(METRIC.documentsReady)[0]).toMatchObject({ unit: 'Count', min: 1, max: 2 });
  expect(collector.since.toISOString()).toBe('2026-11-25T10:00:30.000Z');
});

it('sums each minute apart and forgets minutes older than the window, keeping the totals', () => {
  const { collector, advance } = collectorAt();
  collector.count(METRIC.queryResults, 3);
  advance(20_000); // 10:00:50, same minute
  collector.count(METRIC.queryResults, 4);
  advance(60_000); // 10:01:50
  collector.count(METRIC.queryResults, 5);
  expect(collector.snapshot()[0].minutes).toEqual([
    { at: '2026-11-25T10:00:00.000Z', sum: 7, samples: 2 },
    { at: '2026-11-25T10:01:00.000Z', sum: 5, samples: 1 },
  ]);
  advance(KEPT_MINUTES * 60_000); // a day later: both minutes are out of the window
  collector.count(METRIC.queryResults, 1);
  const [series] = collector.snapshot();
  expect(series.minutes.map((m) => m.sum)).toEqual([1]);
  expect([series.sum, series.samples]).toEqual([13, 4]);
});

it('ignores a value that is not a finite number', () => {
  const { collector } = collectorAt();
  collector.milliseconds(METRIC.queryLatency, Number.NaN);
  collector.count(METRIC.queryResults, Number.POSITIVE_INFINITY);
  expect(collector.snapshot()).toEqual([]);
});
