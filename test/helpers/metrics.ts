/** OperationalMetrics that keeps what it is told, for tests of the use cases that report metrics. */
import type { MetricDimensions, MetricName, OperationalMetrics } from '#ports/metrics';

export interface RecordedMetric {
  readonly name: MetricName;
  readonly value: number;
  readonly unit: 'count' | 'milliseconds';
  readonly dimensions: MetricDimensions;
}

export function recordingMetrics(): OperationalMetrics & {
  readonly recorded: RecordedMetric[];
  sum(name: MetricName): number;
  clear(): void;
} {
  const recorded: RecordedMetric[] = [];
  return {
    recorded,
    count: (name, value = 1, dimensions = {}) => {
      recorded.push({ name, value, unit: 'count', dimensions });
    },
    milliseconds: (name, value, dimensions = {}) => {
      recorded.push({ name, value, unit: 'milliseconds', dimensions });
    },
    sum: (name) => recorded.filter((r) => r.name === name).reduce((total, r) => total + r.value, 0),
    clear: () => {
      recorded.length = 0;
    },
  };
}
