/** Scheduled every few minutes (EventBridge in AWS, a timer locally): see core/processing/watchdog.ts. */

import { container } from '#composition/container';
import { processingContainer } from '#composition/processing-container';
import { DEFAULT_GRACE_SECONDS, removeAbandonedUploads } from '#core/knowledge/abandoned-uploads';
import { runWatchdog } from '#core/processing/watchdog';
import { DEFAULT_PROCESSING_TIMEOUT_SECONDS, positiveInteger } from '#shared/config';
import { logger } from '#shared/logger';
import { observed } from '#shared/observed';
import { tracedUseCase } from '#shared/tracer';

/** A document may stay `uploaded` this long before the watchdog steps in (default 15 minutes). */
export function processingTimeoutSeconds(): number {
  return positiveInteger('PROCESSING_TIMEOUT_SECONDS', DEFAULT_PROCESSING_TIMEOUT_SECONDS);
}

export const handler = observed(async () => {
  const report = await tracedUseCase('watchdog', {}, () =>
    runWatchdog(processingContainer, { timeoutSeconds: processingTimeoutSeconds() }),
  );
  if (Object.values(report).some((count) => count > 0)) {
    logger.warn('watchdog acted on stuck documents', { ...report });
  }
  const { removed } = await tracedUseCase('remove-abandoned-uploads', {}, () =>
    removeAbandonedUploads(container, {
      graceSeconds: positiveInteger('ABANDONED_UPLOAD_GRACE_SECONDS', DEFAULT_GRACE_SECONDS),
    }),
  );
  if (removed) logger.info('watchdog removed the objects of uploads nobody completed', { removed });
  return { ...report, abandonedUploadsRemoved: removed };
});
