/**
 * Schedule triggers. Every minute (EventBridge Scheduler in AWS, a timer in the local runtime) a tick looks at the
 * definitions that hold schedule triggers and runs each trigger whose cron fired, in its time zone, since the last
 * tick. Each fire gets a session id derived from (agent, environment, trigger, fire time), created only if absent,
 * so overlapping or repeated ticks run a fire once. Fires older than the definition's version are not run.
 *
 * A fire pays for its first node from its organization's flow work budget (work-budget.ts) as any invocation does. One
 * refused is skipped: nothing is written but an `invocation_error` event (RATE_LIMITED) and the log line; as no session
 * holds it, the next ticks of the lookback try it again, so it runs late once the budget has room, or not at all.
 */
import { createHash } from 'node:crypto';
import { type AnalyticsScope, recordBuiltInEvent } from '#core/analytics/track';
import type { TriggerNode } from './definition';
import { nodesOf } from './definition';
import type { FlowRuntimeDeps } from './run-context';
import { invoke } from './runtime';
import { firesBetween } from './schedule';
import { FlowWorkExhaustedError } from './work-budget';

/** How far back a tick looks: a late or missed tick is caught up within this window. */
export const SCHEDULE_LOOKBACK_MS = 5 * 60_000;

export interface TickOutcome {
  readonly fired: number;
  /** Fires another tick already ran. */
  readonly duplicates: number;
  readonly failed: number;
  /** Fires skipped because their organization's flow work budget was used up (tried again by the next ticks). */
  readonly limited: number;
  readonly sessions: readonly { sessionId: string; agentId: string; trigger: string; status: string }[];
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

export async function runScheduleTick(
  deps: FlowRuntimeDeps,
  now: Date,
  onError: (error: unknown) => void = () => undefined,
): Promise<TickOutcome> {
  let fired = 0;
  let duplicates = 0;
  let failed = 0;
  let limited = 0;
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
        const invocationId = fireInvocationId(sessionId);
        try {
          // A fire an earlier tick ran is looked up before the invocation pays for its first node: it costs nothing.
          if (await deps.sessions.get(record.agentId, record.environment, sessionId)) {
            duplicates += 1;
            continue;
          }
          const result = await invoke(deps, {
            agentId: record.agentId,
            environment: record.environment,
            organizationId: record.organizationId,
            trigger: { type: 'schedule', name: trigger.name },
            sessionId,
            body: { scheduledAt: at.toISOString() },
            invocationId,
            createOnly: true,
          });
          if (result.duplicate) duplicates += 1;
          else {
            fired += 1;
            sessions.push({ sessionId, agentId: record.agentId, trigger: trigger.name, status: result.status });
          }
        } catch (error) {
          if (error instanceof FlowWorkExhaustedError) {
            limited += 1;
            await recordSkipped(deps, { agentId: record.agentId, environment: record.environment, sessionId }, error, {
              invocationId,
              triggerName: trigger.name,
              scheduledAt: at.toISOString(),
            }).catch(onError);
          } else failed += 1;
          onError(error);
        }
      }
    }
  }
  return { fired, duplicates, failed, limited, sessions };
}

/**
 * The analytics event of a fire the flow work budget refused, on the session it would have had: once per fire however
 * many ticks it is refused in (the key derives from the fire), apart from the invocation_error of its run if it runs.
 */
async function recordSkipped(
  deps: FlowRuntimeDeps,
  scope: AnalyticsScope,
  error: FlowWorkExhaustedError,
  fire: { invocationId: string; triggerName: string; scheduledAt: string },
): Promise<void> {
  recordBuiltInEvent(
    deps.recorder,
    scope,
    'invocation_error',
    {
      code: error.code,
      message: error.message,
      nodeName: null,
      triggerName: fire.triggerName,
      scheduledAt: fire.scheduledAt,
      retryAfterSeconds: error.verdict.resetSeconds,
    },
    { invocationId: fire.invocationId, step: 'work-budget' },
  );
  await deps.recorder.flush();
}
