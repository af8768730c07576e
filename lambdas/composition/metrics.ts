/**
 * The one OperationalMetrics of this process, on the function's Powertools Metrics (shared/metrics.ts). The local
 * runtime also hands every value to its collector (`reportMetricsAlsoTo`), which serves them at GET /dashboard/metrics.
 */
import { PowertoolsMetrics } from '#adapters/metrics/powertools-metrics';
import type { OperationalMetrics } from '#ports/metrics';
import { metrics } from '#shared/metrics';
import { once } from './once';

let also: OperationalMetrics | undefined;

/** Every value reported from now on goes to `collector` as well (the local runtime's; one at a time). */
export function reportMetricsAlsoTo(collector: OperationalMetrics | undefined): void {
  also = collector;
}

export const operationalMetrics = once((): OperationalMetrics => {
  const emf = new PowertoolsMetrics(metrics);
  return {
    count(name, value, dimensions) {
      emf.count(name, value, dimensions);
      also?.count(name, value, dimensions);
    },
    milliseconds(name, value, dimensions) {
      emf.milliseconds(name, value, dimensions);
      also?.milliseconds(name, value, dimensions);
    },
  };
});
