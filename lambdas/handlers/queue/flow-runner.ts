/**
 * The flow runner: consumes the flow runner's queue, one message per invocation (batch size 1): a `continue-run`
 * goes on with a run a webhook, an app event or a runner handed over (docs/flows.md, "Long runs";
 * core/flows/continue-run.ts), a `schedule-fire` runs one fire of a schedule trigger the schedule tick sent
 * (docs/flows.md, "Schedules"; core/flows/schedule-fire.ts), a `deliver-ai-message` sends an AI message whose
 * delivery failed once more (docs/agent-code.md; core/flows/ai-message-retry.ts). It stops starting nodes RUNNER_RESERVE_MS before the function's timeout and
 * hands the run over to the next runner. A failure of the service itself (the session store unreachable, another
 * runner still holding the run) fails the record, which comes back after the queue's visibility timeout; after five
 * receives it moves to the dead-letter queue. A failing flow is no such failure: it ends the session `failed`.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { flowContainer } from '#composition/flow-container';
import { deliverAiMessageAgain } from '#core/flows/ai-message-retry';
import { continueRun } from '#core/flows/continue-run';
import { runScheduleFire } from '#core/flows/schedule-fire';
import { environment, uuid } from '#core/knowledge/fields';
import type { FlowRunMessage } from '#ports/flows';
import { logger } from '#shared/logger';
import { observed } from '#shared/observed';
import { tracedUseCase } from '#shared/tracer';

/**
 * What the function keeps of its time for the node in flight when its deadline passes: a browser task takes up to
 * 120 s, a prompt node with scoped tools several model and tool calls. A node still running at the timeout is cut,
 * and runs again in the runner that takes the run over once the lease has run out.
 */
export const RUNNER_RESERVE_MS = 5 * 60_000;

const messageSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('continue-run'),
    agentId: uuid,
    environment,
    sessionId: uuid,
    invocationId: z.string().min(1).max(200),
  }),
  z.strictObject({
    kind: z.literal('schedule-fire'),
    agentId: uuid,
    environment,
    trigger: z.string().min(1).max(200),
    scheduledAt: z.iso.datetime(),
  }),
  z.strictObject({
    kind: z.literal('deliver-ai-message'),
    organizationId: z.string().min(1).max(200),
    agentId: uuid,
    environment,
    sessionId: uuid,
    invocationId: z.string().min(1).max(200),
    node: z.string().min(1).max(200),
    messageId: z.string().min(1).max(200),
    target: z.union([
      z.strictObject({ url: z.string().min(1).max(2000) }),
      z.strictObject({ functionArn: z.string().min(1).max(300) }),
    ]),
    agentCode: z.boolean(),
    payload: z.record(z.string(), z.unknown()),
    attempt: z.number().int().min(2).max(100),
  }),
]);

const processor = new BatchProcessor(EventType.SQS);

async function runRecord(record: SQSRecord, context: Context): Promise<void> {
  let message: FlowRunMessage;
  try {
    message = messageSchema.parse(JSON.parse(record.body));
  } catch {
    // Nobody can act on it: dropped rather than retried into the dead-letter queue.
    logger.warn('ignored a flow runner message that is not a continue-run, schedule-fire or deliver-ai-message', {
      messageId: record.messageId,
    });
    return;
  }
  const remaining = context.getRemainingTimeInMillis();
  const deadline = flowContainer.clock.now().getTime() + remaining - Math.min(RUNNER_RESERVE_MS, remaining / 2);
  const scope = { agentId: message.agentId, environment: message.environment };
  const receiveCount = record.attributes.ApproximateReceiveCount;
  if (message.kind === 'deliver-ai-message') {
    const outcome = await tracedUseCase('deliver-ai-message', scope, () =>
      deliverAiMessageAgain(flowContainer, message),
    );
    logger.info('AI message sent again', {
      delivered: outcome.delivered,
      status: outcome.status,
      queued: outcome.queued,
      attempt: message.attempt,
      sessionId: message.sessionId,
      receiveCount,
    });
    return;
  }
  if (message.kind === 'schedule-fire') {
    const outcome = await tracedUseCase('schedule-fire', scope, () =>
      runScheduleFire(flowContainer, message, { deadline }),
    );
    logger.info('schedule fire', {
      ...outcome,
      trigger: message.trigger,
      scheduledAt: message.scheduledAt,
      receiveCount,
    });
    return;
  }
  const outcome = await tracedUseCase('continue-run', scope, () => continueRun(flowContainer, message, { deadline }));
  logger.info('flow run', {
    ...outcome,
    sessionId: message.sessionId,
    invocationId: message.invocationId,
    receiveCount,
  });
}

export const handler = observed(async (event: SQSEvent, context: Context) =>
  processPartialResponse(event, (record: SQSRecord) => runRecord(record, context), processor, { context }),
);
