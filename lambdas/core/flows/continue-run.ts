/**
 * The flow runner's side of a run handed over by a request (docs/flows.md, "Long runs"). Primary course: the
 * `continue-run` message names a session whose run goes on; the runner takes the session (at once when no runner holds
 * it, or once the lease of the one that did ran out), runs from `run.next`, storing the session after every node, to
 * the end, a pause, a failure, or its own deadline, when it hands the run over again. A schedule fire is such a run
 * from its trigger, stored by the runner itself (schedule-fire.ts): its start (`run.start`: invocation_start, default
 * retrieval) runs here first.
 */

import { ConflictError, NotFoundError } from '#core/errors';
import type { ContinueRunMessage } from '#ports/flows';
import type { AgentDefinition, TriggerNode } from './definition';
import { nodesOf } from './definition-parts';
import type { AgentDefinitionRecord } from './definition-record';
import { type FlowRuntimeDeps, fail, type RunContext, SESSION_LEASE_MS, SessionLease } from './run-context';
import { CheckpointError, finish, handOver, RunLostError } from './run-endings';
import { afterTriggerEvent, execute, recordInvocationStart } from './runtime';
import type { FlowSession, RunPosition, SessionRun } from './session';
import { loadImages } from './session-claim';

/** A flow runner holds the session and renews its lease: the message is tried again later (SQS redelivers it). */
export class RunHeldError extends ConflictError {
  constructor(sessionId: string) {
    super('SESSION_BUSY', `Session ${sessionId} is held by a live flow runner; the message is tried again later`);
  }
}

export interface ContinueRunOptions {
  /** No node starts at or after this time (epoch ms): the run is handed over to the next runner. */
  readonly deadline: number;
  /** How long to wait for another runner's lease to end before the message is tried again later (default a lease). */
  readonly maxWaitMs?: number;
}

export type ContinueRunOutcome =
  | { readonly outcome: 'ended'; readonly status: FlowSession['status']; readonly takeovers: number }
  | { readonly outcome: 'handed-over'; readonly takeovers: number }
  /** The message's run is not (or no longer) the session's: it ended, or another invocation started over. */
  | { readonly outcome: 'nothing-to-run' }
  /** Another runner or invocation took the session over while this one ran (its lease had run out). */
  | { readonly outcome: 'lost' };

/**
 * The flow runner's side of a hand-over: takes the session (at once when no runner holds it, or when the lease of
 * the one that did ran out: it died), then runs from `run.next`, storing the session after every node, to the end,
 * a pause, a failure, or its own deadline (then hands over again). Rejects with RunHeldError while a live runner
 * holds the run, so the message comes back later.
 */
export async function continueRun(
  deps: FlowRuntimeDeps,
  message: ContinueRunMessage,
  options: ContinueRunOptions,
): Promise<ContinueRunOutcome> {
  const leaseMs = deps.leaseMs ?? SESSION_LEASE_MS;
  const waitUntil = Math.min(deps.clock.now().getTime() + (options.maxWaitMs ?? leaseMs), options.deadline);
  for (;;) {
    const session = await deps.sessions.get(message.agentId, message.environment, message.sessionId);
    const run = session?.run;
    if (!session || !run?.next || run.invocationId !== message.invocationId || session.status !== 'running') {
      return { outcome: 'nothing-to-run' };
    }
    const at = deps.clock.now();
    const leaseEnd = session.leaseUntil ? Date.parse(session.leaseUntil) : 0;
    if (run.runner !== null && leaseEnd > at.getTime()) {
      // A runner holds it and renews its lease while it lives: wait for the lease to end, within bounds.
      if (leaseEnd >= waitUntil) throw new RunHeldError(session.sessionId);
      await new Promise((resolve) => setTimeout(resolve, leaseEnd - at.getTime() + 50));
      continue;
    }
    const taken: FlowSession = {
      ...session,
      run: { ...run, runner: deps.ids.uuid(), takeovers: run.takeovers + 1 },
      leaseUntil: new Date(at.getTime() + leaseMs).toISOString(),
      updatedAt: at.toISOString(),
      version: session.version + 1,
    };
    // Another runner (a duplicate message) or invocation wrote first: look again.
    if (!(await deps.sessions.save(taken, session.version))) continue;
    return runTaken(deps, taken, options);
  }
}

async function runTaken(
  deps: FlowRuntimeDeps,
  session: FlowSession,
  options: ContinueRunOptions,
): Promise<ContinueRunOutcome> {
  const run = session.run as SessionRun & { next: RunPosition; runner: string };
  // A run whose start is still to run here: a schedule fire (schedule-fire.ts), with its trigger's payload.
  const start = run.start;
  const record = await deps.definitions.get(session.agentId, session.environment);
  const definition: AgentDefinition = record?.definition ?? { flows: [], tools: [], variables: {} };
  const trigger =
    nodesOf(definition)
      .map(({ node }) => node)
      .find((n): n is TriggerNode => n.type === 'trigger' && n.name === session.trigger.name) ??
    ({ name: session.trigger.name, type: 'trigger', triggerType: session.trigger.type } as TriggerNode);
  const context: RunContext = {
    deps,
    record: record as AgentDefinitionRecord,
    definition,
    session,
    invocation: {
      agentId: session.agentId,
      environment: session.environment,
      organizationId: session.organizationId,
      trigger: { type: 'webhook', name: session.trigger.name },
      sessionId: session.sessionId,
      body: start?.body ?? {},
      invocationId: run.invocationId,
    },
    trigger,
    produced: [],
    step: run.step,
    attachments: [],
    images: new Map(),
    steps: [...run.steps],
    deadline: options.deadline,
    boundedUntil: options.deadline,
    runner: run.runner,
    lease: new SessionLease(deps, session),
    // Every node of a runner is paid for as it starts (a refused one hands the run over again, delayed).
    prepaidNodes: 0,
    workWaitSeconds: 0,
  };
  let settled = false;
  try {
    let next: RunPosition | null = null;
    context.lease.start();
    try {
      if (start) {
        // Stored with the first write of this runner (a checkpoint, a hand-over or the end); a runner that died
        // before it stored nothing of the start, and the next one runs it again under the same event keys.
        const { start: _begun, ...begun } = run;
        session.run = begun;
      }
      if (!record) {
        throw new NotFoundError('DEFINITION_NOT_FOUND', `Agent ${session.agentId} has no definition any more`);
      }
      await loadImages(context);
      let goOn = true;
      if (start) {
        recordInvocationStart(context, null);
        // The trigger handler may stop the run before its first node.
        goOn = await afterTriggerEvent(context);
      }
      next = goOn ? await execute(context, run.next) : null;
    } catch (error) {
      if (error instanceof RunLostError) return { outcome: 'lost' };
      if (error instanceof CheckpointError) throw error.cause;
      fail(context, error);
    }
    context.lease.stop();
    const takeovers = session.run?.takeovers ?? run.takeovers;
    if (next) {
      await handOver(context, next);
      settled = true;
      return session.run?.next
        ? { outcome: 'handed-over', takeovers }
        : { outcome: 'ended', status: session.status, takeovers };
    }
    await finish(context);
    settled = true;
    return { outcome: 'ended', status: session.status, takeovers };
  } catch (error) {
    if (error instanceof RunLostError) return { outcome: 'lost' };
    throw error;
  } finally {
    context.lease.stop();
    if (settled) await deps.recorder.flush();
    else await deps.recorder.flush().catch(() => undefined);
  }
}
