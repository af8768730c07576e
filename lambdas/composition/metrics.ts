/** The one OperationalMetrics of this process, on the function's Powertools Metrics (shared/metrics.ts). */
import { PowertoolsMetrics } from '#adapters/metrics/powertools-metrics';
import { metrics } from '#shared/metrics';
import { once } from './once';

export const operationalMetrics = once(() => new PowertoolsMetrics(metrics));
