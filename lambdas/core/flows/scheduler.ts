/**
 * Schedule triggers: the tick. Every minute (EventBridge Scheduler in AWS, a timer in the local runtime) the tick
 * looks at the definitions that hold schedule triggers, works out each trigger's fires (its cron, in its time zone)
 * in the look-back and after the definition was stored, and sends each fire it has not sent yet to the flow
 * runner's queue as one `schedule-fire` message. It runs nothing itself: the flow runner runs each fire
 * (schedule-fire.ts), so one tenant's slow flow never holds up another's fire, and a fire cut off is retried by the
 * queue.
 *
 * What was sent is kept per trigger (ScheduleFireLog: the latest fire time sent), written after the sends, so a fire
 * is sent once by ticks that follow one another; a tick that dies between its sends and that write, or two ticks
 * at once, send some fires twice, which the runner runs once (the fire's session id derives from the fire). A send
 * that fails stops the trigger's sends there: the next tick sends from that fire on. Triggers are handled
 * SCHEDULE_TICK_CONCURRENCY at a time; past its deadline the tick starts no further trigger and the next tick, which
 * looks back SCHEDULE_LOOKBACK_MS, sends what was left.
 */
import { createHash } from 'node:crypto';
import type { DefinitionStore, FlowRunQueue, ScheduleFireLog, ScheduleFireMessage } from '#ports/flows';
import type { TriggerNode } from './definition';
import { nodesOf } from './definition-parts';
import type { AgentDefinitionRecord } from './definition-record';
import { firesBetween } from './schedule';

/**
 * How far back a tick looks: fires a late or failed tick did not send (EventBridge Scheduler late, the tick throttled
 * or failing, DynamoDB or SQS unreachable) are sent by the next tick that runs within this time. A tick only reads
 * one item per trigger that has a fire in it, so the window costs little: 15 minutes.
 */
export const SCHEDULE_LOOKBACK_MS = 15 * 60_000;

/** Triggers a tick works on at once (each: read what was sent, send its new fires in order, record them). */
export const SCHEDULE_TICK_CONCURRENCY = 16;

export interface ScheduleTickDeps {
  readonly definitions: Pick<DefinitionStore, 'listScheduled'>;
  readonly runs: FlowRunQueue;
  readonly scheduleFires: ScheduleFireLog;
}

export interface ScheduleTickOptions {
  /**
   * Told each error: a send or a store that failed (the fire is sent again by the next tick), or a trigger whose cron
   * cannot be read (its fires are not sent).
   */
  readonly onError?: (error: unknown, fire: { agentId: string; trigger: string; scheduledAt?: string }) => void;
  /** No trigger is started at or after this time (epoch ms, the system clock): the next tick takes the rest. */
  readonly deadline?: number;
  /** The system clock the deadline is read on (tests); default Date.now. */
  readonly clock?: () => number;
}

export interface TickOutcome {
  /** Schedule triggers with at least one fire in the look-back. */
  readonly triggers: number;
  /** Messages sent: one per fire not sent before. */
  readonly sent: number;
  /** Fires in the look-back that an earlier tick had sent. */
  readonly alreadySent: number;
  /** Fires whose send failed, or not tried after a failed one: the next tick sends them. */
  readonly failed: number;
  /** Triggers not started before the deadline: the next tick sends their fires. */
  readonly deferred: number;
}

/** A UUID (version 8 layout) from the fire's identity: the same fire always maps to the same session. */
export function fireSessionId(agentId: string, environment: string, trigger: string, at: Date): string {
  const hex = createHash('sha256').update(`${agentId}#${environment}#${trigger}#${at.toISOString()}`).digest('hex');
  const variant = ((Number.parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The invocation of a fire: its analytics keys derive from it, so a fire run again records nothing twice. */
export function fireInvocationId(sessionId: string): string {
  return `schedule:${sessionId}`;
}

/** The key of a trigger in the ScheduleFireLog. */
export function scheduleKey(agentId: string, environment: string, trigger: string): string {
  return `${agentId}#${environment}#${trigger}`;
}

interface DueTrigger {
  readonly record: AgentDefinitionRecord;
  readonly trigger: string;
  readonly fires: readonly Date[];
}

/**
 * The schedule triggers of the definitions with their fires in (max(now − look-back, stored at), now], oldest first.
 * A trigger whose cron or time zone cannot be read (stored before a rule changed, a zone the runtime no longer knows)
 * is told to `onError` and left out: the others are due all the same.
 */
export function dueFires(
  records: readonly AgentDefinitionRecord[],
  now: Date,
  onError: NonNullable<ScheduleTickOptions['onError']> = () => undefined,
): DueTrigger[] {
  const due: DueTrigger[] = [];
  for (const record of records) {
    const from = new Date(Math.max(now.getTime() - SCHEDULE_LOOKBACK_MS, Date.parse(record.updatedAt)));
    const triggers = nodesOf(record.definition)
      .map(({ node }) => node)
      .filter((n): n is TriggerNode => n.type === 'trigger' && n.triggerType === 'schedule');
    for (const trigger of triggers) {
      if (!trigger.cronExpression) continue;
      let fires: Date[];
      try {
        fires = firesBetween(trigger.cronExpression, trigger.timezone ?? 'UTC', from, now);
      } catch (error) {
        onError(error, { agentId: record.agentId, trigger: trigger.name });
        continue;
      }
      if (fires.length > 0) due.push({ record, trigger: trigger.name, fires });
    }
  }
  return due;
}

/** One tick at `now`: sends every due fire not sent yet, one message each. */
export async function runScheduleTick(
  deps: ScheduleTickDeps,
  now: Date,
  options: ScheduleTickOptions = {},
): Promise<TickOutcome> {
  const clock = options.clock ?? Date.now;
  const onError = options.onError ?? (() => undefined);
  const due = dueFires(await deps.definitions.listScheduled(), now, onError);
  const counts = { sent: 0, alreadySent: 0, failed: 0, deferred: 0 };

  const sendFires = async ({ record, trigger, fires }: DueTrigger): Promise<void> => {
    const fire = { agentId: record.agentId, trigger };
    const key = scheduleKey(record.agentId, record.environment, trigger);
    let sentThrough: number | null;
    try {
      sentThrough = await deps.scheduleFires.sentThrough(key);
    } catch (error) {
      counts.failed += fires.length;
      onError(error, fire);
      return;
    }
    const fresh = fires.filter((at) => sentThrough === null || at.getTime() > sentThrough);
    counts.alreadySent += fires.length - fresh.length;
    let last: Date | undefined;
    for (const [index, at] of fresh.entries()) {
      const message: ScheduleFireMessage = {
        kind: 'schedule-fire',
        agentId: record.agentId,
        environment: record.environment,
        trigger,
        scheduledAt: at.toISOString(),
      };
      try {
        await deps.runs.send(message);
      } catch (error) {
        // In order: a later fire is not marked sent past one that was not.
        counts.failed += fresh.length - index;
        onError(error, { ...fire, scheduledAt: message.scheduledAt });
        break;
      }
      counts.sent += 1;
      last = at;
    }
    if (!last) return;
    try {
      await deps.scheduleFires.markSent(key, last.getTime());
    } catch (error) {
      // The fires went out; the next tick sends them again and the runner runs each once.
      onError(error, { ...fire, scheduledAt: last.toISOString() });
    }
  };

  // A few triggers at a time, each waiting only for its own sends: no tenant's fires wait for another's.
  let nextIndex = 0;
  const worker = async (): Promise<void> => {
    while (nextIndex < due.length) {
      if (options.deadline !== undefined && clock() >= options.deadline) {
        counts.deferred = due.length - nextIndex;
        nextIndex = due.length;
        return;
      }
      const item = due[nextIndex];
      nextIndex += 1;
      await sendFires(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(SCHEDULE_TICK_CONCURRENCY, due.length) }, worker));
  return { triggers: due.length, ...counts };
}
