/** Every minute (EventBridge Scheduler in AWS, a timer locally): runs due schedule triggers (core/flows/scheduler.ts). */

import { flowContainer } from '#composition/flow-container';
import { runScheduleTick } from '#core/flows/scheduler';
import { FlowWorkExhaustedError } from '#core/flows/work-budget';
import { logger } from '#shared/logger';
import { observed } from '#shared/observed';
import { tracedUseCase } from '#shared/tracer';

export const handler = observed(async (event?: { now?: string }) => {
  const now = event?.now && !Number.isNaN(Date.parse(event.now)) ? new Date(event.now) : flowContainer.clock.now();
  const outcome = await tracedUseCase('schedule-tick', {}, () =>
    runScheduleTick(flowContainer, now, (error) =>
      // A fire its organization's flow work budget refused is skipped, not failed: the next ticks try it again.
      error instanceof FlowWorkExhaustedError
        ? logger.warn('a schedule trigger was skipped: its flow work budget is used up', {
            retryAfterSeconds: error.verdict.resetSeconds,
          })
        : logger.error('a schedule trigger could not run', { error: error as Error }),
    ),
  );
  if (outcome.fired || outcome.failed || outcome.limited)
    logger.info('schedule tick', { ...outcome, sessions: undefined });
  return outcome;
});
