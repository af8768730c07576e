/**
 * The flow runner's side of a schedule fire (docs/flows.md, "Schedules"). Primary course: the `schedule-fire`
 * message the tick sent (scheduler.ts) names a trigger and the minute it fired; the runner stores the fire's session
 * (its id derived from agent, environment, trigger and fire time) as a run handed over at its trigger, with the
 * payload `{ scheduledAt }` and its start still to run, then takes it over as any handed-over run (continue-run.ts):
 * `invocation_start`, default retrieval, then the nodes, stored after each, to the end, a pause, a failure or the
 * runner's deadline (then handed over again).
 *
 * At most once: the session is created only if absent, so a fire delivered twice, or sent by two ticks, finds its
 * session and goes on with it as continue-run does, which does nothing once the run ended. At least once: a failure
 * of the service (the store, the queue) fails the message, which SQS delivers again after its visibility timeout;
 * the next runner takes the run over from its last stored node (or from its start, when none was stored). A fire
 * the organization's flow work budget refuses waits in the queue: its trigger node is handed over with the message
 * delayed until the budget's window ends, as any run the budget stops in the runner.
 */
import type { ScheduleFireMessage } from '#ports/flows';
import { type ContinueRunOptions, type ContinueRunOutcome, continueRun } from './continue-run';
import type { TriggerNode } from './definition';
import { nodesOf } from './definition-parts';
import type { FlowRuntimeDeps } from './run-context';
import { SESSION_LEASE_MS } from './run-context';
import { fireInvocationId, fireSessionId } from './scheduler';
import type { FlowSession } from './session';

export type ScheduleFireOutcome =
  | ContinueRunOutcome
  /** The agent, its definition, or that schedule trigger is gone since the tick sent the fire: nothing to run. */
  | { readonly outcome: 'not-scheduled' };

export async function runScheduleFire(
  deps: FlowRuntimeDeps,
  message: ScheduleFireMessage,
  options: ContinueRunOptions,
): Promise<ScheduleFireOutcome> {
  const { agentId, environment } = message;
  const sessionId = fireSessionId(agentId, environment, message.trigger, new Date(message.scheduledAt));
  const invocationId = fireInvocationId(sessionId);
  if (!(await deps.sessions.get(agentId, environment, sessionId))) {
    const record = await deps.definitions.get(agentId, environment);
    const trigger = record
      ? nodesOf(record.definition)
          .map(({ node }) => node)
          .find(
            (n): n is TriggerNode => n.type === 'trigger' && n.triggerType === 'schedule' && n.name === message.trigger,
          )
      : undefined;
    if (!record || !trigger) return { outcome: 'not-scheduled' };
    const at = deps.clock.now();
    const body = { scheduledAt: message.scheduledAt };
    const queued: FlowSession = {
      agentId,
      environment,
      sessionId,
      organizationId: record.organizationId,
      status: 'running',
      flowName: null,
      currentNode: null,
      memory: { ...body },
      messages: [],
      outputs: {},
      aiMessages: [],
      error: null,
      trigger: { name: trigger.name, type: 'schedule' },
      invocations: 1,
      // Held as a hand-over holds a session: no other invocation starts on it meanwhile. No runner holds it yet, so
      // continueRun takes it at once.
      leaseUntil: new Date(at.getTime() + (deps.leaseMs ?? SESSION_LEASE_MS)).toISOString(),
      run: {
        invocationId,
        next: { node: trigger.name, phase: 'run' },
        step: 0,
        steps: [],
        handedOverAt: at.toISOString(),
        runner: null,
        takeovers: 0,
        start: { body },
      },
      version: 1,
      createdAt: at.toISOString(),
      updatedAt: at.toISOString(),
    };
    // False: another delivery of this fire stored it first; continueRun below runs it once either way.
    await deps.sessions.create(queued);
  }
  return continueRun(deps, { kind: 'continue-run', agentId, environment, sessionId, invocationId }, options);
}
