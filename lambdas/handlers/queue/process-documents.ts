/**
 * The processing queue's consumer: S3 object-created events and the service's own messages (see
 * core/processing/work.ts). Each record succeeds or fails alone (partial batch response); a failing record is
 * redelivered, and after 3 receives it moves to the dead-letter queue. Documents never stay `uploaded` for good:
 * the watchdog fails what the queue gave up on.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { processingContainer } from '#composition/processing-container';
import { runWork } from '#core/processing/dispatch';
import { parseWork } from '#core/processing/work';
import { logger } from '#shared/logger';
import { observed } from '#shared/observed';
import { tracedUseCase } from '#shared/tracer';

const processor = new BatchProcessor(EventType.SQS);

async function recordHandler(record: SQSRecord): Promise<void> {
  for (const work of parseWork(record.body)) {
    if (work.kind === 'ignore') {
      logger.debug('ignored a queue message', { reason: work.reason, messageId: record.messageId });
      continue;
    }
    try {
      const scope = work.kind === 'message' ? work.message : work;
      const outcome = await tracedUseCase(
        work.kind === 'message' ? work.message.kind : 'process-document',
        { agentId: scope.agentId, environment: 'environment' in scope ? scope.environment : undefined },
        () => runWork(processingContainer, work),
      );
      logger.info('processed', { outcome, work: work.kind === 'message' ? work.message.kind : work.kind });
    } catch (error) {
      logger.warn('processing failed; the message will be redelivered', {
        messageId: record.messageId,
        receiveCount: record.attributes.ApproximateReceiveCount,
        error: error as Error,
      });
      throw error;
    }
  }
}

export const handler = observed(async (event: SQSEvent, context: Context) =>
  processPartialResponse(event, recordHandler, processor, { context }),
);
