/**
 * Every minute (EventBridge Scheduler in AWS, a timer locally): sends each due fire of the schedule triggers to the
 * flow runner's queue, one `schedule-fire` message per fire (core/flows/scheduler.ts); the flow runner runs them
 * (handlers/queue/flow-runner.ts). `{ now }` in the event sets the tick's time (the local runtime's clock, tests).
 */
import type { Context } from 'aws-lambda';
import { scheduleContainer } from '#composition/schedule-container';
import { runScheduleTick } from '#core/flows/scheduler';
import { logger } from '#shared/logger';
import { observed } from '#shared/observed';
import { tracedUseCase } from '#shared/tracer';

/**
 * What the tick keeps of its time (55 s) for the sends in flight when it stops starting triggers; the triggers it
 * did not start are sent by the next tick.
 */
export const TICK_RESERVE_MS = 10_000;

export const handler = observed(async (event?: { now?: string }, context?: Context) => {
  const now = event?.now && !Number.isNaN(Date.parse(event.now)) ? new Date(event.now) : scheduleContainer.clock.now();
  // Locally the timer calls the handler without a Lambda context: no deadline.
  const remaining =
    typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : undefined;
  const deadline = remaining === undefined ? undefined : Date.now() + remaining - TICK_RESERVE_MS;
  const outcome = await tracedUseCase('schedule-tick', {}, () =>
    runScheduleTick(scheduleContainer, now, {
      deadline,
      onError: (error, fire) =>
        // A send or a store that failed (the next tick sends the fire), or a trigger whose cron cannot be read.
        logger.error('a schedule trigger’s fires were not sent', { ...fire, error: error as Error }),
    }),
  );
  if (outcome.sent || outcome.failed || outcome.deferred) logger.info('schedule tick', { ...outcome });
  return outcome;
});
