/**
 * Schedule triggers. Every minute (EventBridge Scheduler in AWS, a timer in the local runtime) a tick looks at the
 * definitions that hold schedule triggers and runs each trigger whose cron fired, in its time zone, since the last
 * tick. Each fire gets a session id derived from (agent, environment, trigger, fire time), created only if absent,
 * so overlapping or repeated ticks run a fire once. Fires older than the definition's version are not run.
 */
import { createHash } from 'node:crypto';
import type { TriggerNode } from './definition';
import { nodesOf } from './definition';
import type { FlowRuntimeDeps } from './run-context';
import { invoke } from './runtime';
import { firesBetween } from './schedule';

/** How far back a tick looks: a late or missed tick is caught up within this window. */
export const SCHEDULE_LOOKBACK_MS = 5 * 60_000;

export interface TickOutcome {
  readonly fired: number;
  /** Fires another tick already ran. */
  readonly duplicates: number;
  readonly failed: number;
  readonly sessions: readonly { sessionId: string; agentId: string; trigger: string; status: string }[];
}

/** A UUID (version 8 layout) from the fire's identity: the same fire always maps to the same session. */
export function fireSessionId(agentId: string, environment: string, trigger: string, at: Date): string {
  const hex = createHash('sha256').update(`${agentId}#${environment}#${trigger}#${at.toISOString()}`).digest('hex');
  const variant = ((Number.parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export async function runScheduleTick(
  deps: FlowRuntimeDeps,
  now: Date,
  onError: (error: unknown) => void = () => undefined,
): Promise<TickOutcome> {
  let fired = 0;
  let duplicates = 0;
  let failed = 0;
  const sessions: { sessionId: string; agentId: string; trigger: string; status: string }[] = [];
  for (const record of await deps.definitions.listScheduled()) {
    const from = new Date(Math.max(now.getTime() - SCHEDULE_LOOKBACK_MS, Date.parse(record.updatedAt)));
    const triggers = nodesOf(record.definition)
      .map(({ node }) => node)
      .filter((n): n is TriggerNode => n.type === 'trigger' && n.triggerType === 'schedule');
    for (const trigger of triggers) {
      if (!trigger.cronExpression) continue;
      for (const at of firesBetween(trigger.cronExpression, trigger.timezone ?? 'UTC', from, now)) {
        const sessionId = fireSessionId(record.agentId, record.environment, trigger.name, at);
        try {
          const result = await invoke(deps, {
            agentId: record.agentId,
            environment: record.environment,
            organizationId: record.organizationId,
            trigger: { type: 'schedule', name: trigger.name },
            sessionId,
            body: { scheduledAt: at.toISOString() },
            invocationId: `schedule:${sessionId}`,
            createOnly: true,
          });
          if (result.duplicate) duplicates += 1;
          else {
            fired += 1;
            sessions.push({ sessionId, agentId: record.agentId, trigger: trigger.name, status: result.status });
          }
        } catch (error) {
          failed += 1;
          onError(error);
        }
      }
    }
  }
  return { fired, duplicates, failed, sessions };
}
