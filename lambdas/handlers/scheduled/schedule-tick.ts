/** Every minute (EventBridge Scheduler in AWS, a timer locally): runs due schedule triggers (core/flows/scheduler.ts). */

import { flowContainer } from '#composition/flow-container';
import { runScheduleTick } from '#core/flows/scheduler';
import { logger } from '#shared/logger';
import { observed } from '#shared/observed';
import { tracedUseCase } from '#shared/tracer';

export const handler = observed(async (event?: { now?: string }) => {
  const now = event?.now && !Number.isNaN(Date.parse(event.now)) ? new Date(event.now) : flowContainer.clock.now();
  const outcome = await tracedUseCase('schedule-tick', {}, () =>
    runScheduleTick(flowContainer, now, (error) =>
      logger.error('a schedule trigger could not run', { error: error as Error }),
    ),
  );
  if (outcome.fired || outcome.failed) logger.info('schedule tick', { ...outcome, sessions: undefined });
  return outcome;
});
