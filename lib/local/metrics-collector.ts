/**
 * The local runtime's view of the service's operational metrics: every count and duration the handlers report
 * through the metrics port (the same ones the Powertools adapter prints as EMF lines, and CloudWatch aggregates in
 * AWS) is kept here too, per metric name and dimensions, with its totals since the start and its sums per minute over
 * the last 24 hours. `GET /dashboard/metrics` serves them (lib/local/router.ts; README, "Operating it").
 */
import type { MetricDimensions, MetricName, OperationalMetrics } from '#ports/metrics';

const MINUTE_MS = 60_000;
/** Minutes of per-minute sums kept per series. */
export const KEPT_MINUTES = 24 * 60;

export interface MinuteSum {
  /** Start of the minute (ISO 8601). */
  readonly at: string;
  readonly sum: number;
  readonly samples: number;
}

export interface MetricSeries {
  readonly name: MetricName;
  readonly unit: 'Count' | 'Milliseconds';
  readonly dimensions: MetricDimensions;
  /** Sum of the values since the runtime started. */
  readonly sum: number;
  /** How many values were reported. */
  readonly samples: number;
  readonly min: number;
  readonly max: number;
  readonly lastAt: string;
  /** Per-minute sums, oldest first, only minutes with a value, within the last KEPT_MINUTES. */
  readonly minutes: readonly MinuteSum[];
}

interface Series {
  name: MetricName;
  unit: MetricSeries['unit'];
  dimensions: MetricDimensions;
  sum: number;
  samples: number;
  min: number;
  max: number;
  last: number;
  /** Minute index (epoch minutes) → [sum, samples]. */
  minutes: Map<number, [number, number]>;
}

export class MetricsCollector implements OperationalMetrics {
  private readonly series = new Map<string, Series>();
  readonly since: Date;

  constructor(private readonly now: () => Date = () => new Date()) {
    this.since = now();
  }

  count(name: MetricName, value = 1, dimensions: MetricDimensions = {}): void {
    this.add(name, 'Count', value, dimensions);
  }

  milliseconds(name: MetricName, value: number, dimensions: MetricDimensions = {}): void {
    this.add(name, 'Milliseconds', value, dimensions);
  }

  /** Every series, by name then dimensions; `name` keeps one metric's. */
  snapshot(name?: string): MetricSeries[] {
    const oldest = Math.floor(this.now().getTime() / MINUTE_MS) - KEPT_MINUTES + 1;
    return [...this.series.values()]
      .filter((s) => name === undefined || s.name === name)
      .map((s) => ({
        name: s.name,
        unit: s.unit,
        dimensions: s.dimensions,
        sum: s.sum,
        samples: s.samples,
        min: s.min,
        max: s.max,
        lastAt: new Date(s.last).toISOString(),
        minutes: [...s.minutes.entries()]
          .filter(([minute]) => minute >= oldest)
          .sort(([a], [b]) => a - b)
          .map(([minute, [sum, samples]]) => ({ at: new Date(minute * MINUTE_MS).toISOString(), sum, samples })),
      }))
      .sort((a, b) => compare(a.name, b.name) || compare(keyOf(a.dimensions), keyOf(b.dimensions)));
  }

  private add(name: MetricName, unit: Series['unit'], value: number, dimensions: MetricDimensions): void {
    if (!Number.isFinite(value)) return;
    const key = `${name}\u0000${unit}\u0000${keyOf(dimensions)}`;
    const at = this.now().getTime();
    let series = this.series.get(key);
    if (!series) {
      series = {
        name,
        unit,
        dimensions: { ...dimensions },
        sum: 0,
        samples: 0,
        min: value,
        max: value,
        last: at,
        minutes: new Map(),
      };
      this.series.set(key, series);
    }
    series.sum += value;
    series.samples += 1;
    series.min = Math.min(series.min, value);
    series.max = Math.max(series.max, value);
    series.last = at;
    const minute = Math.floor(at / MINUTE_MS);
    const bucket = series.minutes.get(minute) ?? [0, 0];
    bucket[0] += value;
    bucket[1] += 1;
    series.minutes.set(minute, bucket);
    // Forget minutes that fell out of the window (at most one pass per new minute of this series).
    if (series.minutes.size > KEPT_MINUTES) {
      for (const old of series.minutes.keys()) if (old <= minute - KEPT_MINUTES) series.minutes.delete(old);
    }
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function keyOf(dimensions: MetricDimensions): string {
  return Object.keys(dimensions)
    .sort()
    .map((k) => `${k}=${dimensions[k]}`)
    .join(',');
}
