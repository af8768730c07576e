/**
 * One Powertools Metrics instance per function. Its namespace is the stage's (POWERTOOLS_METRICS_NAMESPACE, set by
 * ServiceFunction); the local runtime and tests fall back to `AgentPlatform/local`. Flushed by `logMetrics` in each
 * handler's middy chain (shared/http.ts, handlers/queue, handlers/scheduled, the authorizer).
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import { handlerVariable } from './environment';
import { logger, SERVICE_NAME_DEFAULT } from './logger';

export const LOCAL_METRICS_NAMESPACE = 'AgentPlatform/local';

export const metrics = new Metrics({
  namespace: handlerVariable('POWERTOOLS_METRICS_NAMESPACE') ?? LOCAL_METRICS_NAMESPACE,
  serviceName: handlerVariable('POWERTOOLS_SERVICE_NAME') ?? SERVICE_NAME_DEFAULT,
  // Most requests emit no metric, which is normal here: that notice is debug, every other warning stays a warning.
  logger: {
    debug: (...args: unknown[]) => logger.debug(String(args[0])),
    info: (...args: unknown[]) => logger.info(String(args[0])),
    error: (...args: unknown[]) => logger.error(String(args[0])),
    warn: (...args: unknown[]) =>
      String(args[0]).startsWith('No application metrics')
        ? logger.debug(String(args[0]))
        : logger.warn(String(args[0])),
  },
});
