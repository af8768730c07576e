/**
 * Composition root of the schedule tick (core/flows/scheduler.ts): the definitions that hold schedule triggers, what
 * was sent of each trigger (in the rate limits table) and the flow runner's queue. None of the flow runtime: the tick
 * runs no flow, the flow runner runs each fire (flow-container.ts).
 */
import { SqsFlowRunQueue } from '#adapters/queue/sqs-flow-runs';
import { DynamoScheduleFireLog } from '#adapters/store/dynamodb/schedule-fire-log';
import type { ScheduleTickDeps } from '#core/flows/scheduler';
import { config } from '#shared/config';
import { dynamoDocumentClient } from './clients/dynamodb';
import { sqsClient } from './clients/sqs';
import { clock } from './container';
import { definitionStore } from './definition-container';
import { once } from './once';

// The configured endpoint, not the queue URL's host (the local engine's is not resolvable everywhere).
const runQueue = once(() => new SqsFlowRunQueue(sqsClient(), config.flowRunQueueUrl()));
const fireLog = once(() => new DynamoScheduleFireLog(dynamoDocumentClient(), config.tableName('rateLimits')));

export const scheduleContainer = {
  get definitions() {
    return definitionStore();
  },
  get runs() {
    return runQueue();
  },
  get scheduleFires() {
    return fireLog();
  },
  clock,
} satisfies ScheduleTickDeps & { clock: unknown };
