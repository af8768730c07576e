/**
 * OperationalMetrics on Powertools Metrics (CloudWatch embedded metric format). A metric without dimensions is
 * buffered and flushed by `logMetrics` at the end of the invocation; one with dimensions is printed at once as a
 * single-metric line, so its dimensions do not leak onto the other metrics of the invocation.
 */
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MetricDimensions, MetricName, OperationalMetrics } from '#ports/metrics';

export class PowertoolsMetrics implements OperationalMetrics {
  constructor(private readonly metrics: Metrics) {}

  count(name: MetricName, value = 1, dimensions?: MetricDimensions): void {
    this.add(name, MetricUnit.Count, value, dimensions);
  }

  milliseconds(name: MetricName, value: number, dimensions?: MetricDimensions): void {
    this.add(name, MetricUnit.Milliseconds, value, dimensions);
  }

  private add(
    name: MetricName,
    unit: (typeof MetricUnit)[keyof typeof MetricUnit],
    value: number,
    dimensions?: MetricDimensions,
  ): void {
    if (!dimensions || Object.keys(dimensions).length === 0) {
      this.metrics.addMetric(name, unit, value);
      return;
    }
    const single = this.metrics.singleMetric();
    for (const [dimension, dimensionValue] of Object.entries(dimensions))
      single.addDimension(dimension, dimensionValue);
    single.addMetric(name, unit, value);
  }
}
