/**
 * The middy chain of the functions that are not HTTP handlers (queue consumers, scheduled jobs, the authorizer),
 * in the order of shared/http.ts: metrics flushed last, then the log context, then the trace segment (its response
 * not recorded: it may carry what a caller sent).
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { captureClientsWith } from '#composition/clients/capture';
import { logger } from './logger';
import { metrics } from './metrics';
import { tracer } from './tracer';

// Before any SDK client is built (they are built on first use): each AWS call of a worker is an X-Ray subsegment.
captureClientsWith((client) => tracer.captureAWSv3Client(client as never) as typeof client);

/**
 * Event and context stay optional as they were: the local runtime calls the scheduled jobs on a timer with neither
 * (middy then passes `{}` for both).
 */
export function observed<E, R>(
  base: (event: E, context: Context) => Promise<R>,
): (event?: E, context?: Context) => Promise<R> {
  return middy<E, R>(base)
    .use(logMetrics(metrics))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(captureLambdaHandler(tracer, { captureResponse: false })) as unknown as (
    event?: E,
    context?: Context,
  ) => Promise<R>;
}
