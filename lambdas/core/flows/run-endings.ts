/**
 * How a run's session is written back: at its end (`finish`, and `saveWithoutChanges` when its state grew too large
 * to store), at a hand-over to the flow runner (`handOver`), and after every node in the runner (`checkpoint`). Each
 * write is guarded by the session's version: one that lost its lease throws RunLostError and writes nothing.
 */

import { ConflictError } from '#core/errors';
import type { ContinueRunMessage } from '#ports/flows';
import { MAX_RUN_DELAY_SECONDS, SessionTooLargeError } from '#ports/flows';
import { METRIC } from '#ports/metrics';
import { FlowError, fail, metricsOf, now, type RunContext } from './run-context';
import type { RunPosition, SessionRun } from './session';

/** Writes the ended (completed, paused, failed) session back and releases the lease. */
export async function finish(context: RunContext): Promise<void> {
  const { session } = context;
  if (session.run) session.run = { ...session.run, ...runProgress(context), next: null, runner: null };
  let saved: boolean;
  try {
    saved = await context.lease.save(session, null);
  } catch (error) {
    if (!(error instanceof SessionTooLargeError)) throw error;
    saved = await saveWithoutChanges(context, error);
  }
  if (!saved) throw new RunLostError(session.sessionId);
  // Counted as stored: a state too large to store turned a completed run into a failed one just above.
  metricsOf(context).count(METRIC.runs, 1, { status: session.status });
}

/**
 * The state grew too large to store: the session ends `failed` with SESSION_TOO_LARGE and the state as last stored
 * (as the claim wrote it; in the flow runner, as its last checkpoint did), so this invocation's later memory, outputs
 * and messages are dropped, the lease is released and the next invocation is not refused. False when another
 * invocation has taken the session over meanwhile.
 */
async function saveWithoutChanges(context: RunContext, error: SessionTooLargeError): Promise<boolean> {
  const { deps, session } = context;
  const stored = await deps.sessions.get(session.agentId, session.environment, session.sessionId);
  if (!stored || stored.version !== context.lease.version) return false;
  // A run that had already failed recorded its own invocation_error; this one is the state's, under its own key.
  // A checkpoint that did not fit already failed the run with this very code.
  if (session.error?.code !== error.code) fail(context, error, session.status === 'failed' ? 'state' : undefined);
  session.memory = stored.memory;
  session.messages = stored.messages;
  session.outputs = stored.outputs;
  session.aiMessages = stored.aiMessages;
  if (stored.run) session.run = { ...stored.run, next: null, runner: null };
  context.produced.length = 0;
  return context.lease.save(session, null);
}

/** What `session.run` says of the steps so far. */
function runProgress(context: RunContext): Pick<SessionRun, 'step' | 'steps'> {
  return { step: context.step, steps: [...context.steps] };
}

/** The session was taken over by another invocation or runner: this one's lease had run out. Nothing was written. */
export class RunLostError extends ConflictError {
  constructor(sessionId: string) {
    super('SESSION_BUSY', `Session ${sessionId} was changed by another invocation`);
  }
}

/**
 * Past the deadline: the session is stored with where the run goes on (`run.next`, no runner holding it, the lease
 * kept so no other invocation starts meanwhile), then a `continue-run` message goes to the flow runner's queue.
 * Stored first: a runner that gets the message finds the run. A state too large ends the run `failed` here.
 * Stopped by the flow work budget (context.workWaitSeconds): the message is delayed until the budget's window ends
 * (at most SQS's 15 minutes), and the lease lasts that much longer, so no other message on the session starts over.
 */
export async function handOver(context: RunContext, next: RunPosition): Promise<void> {
  const { deps, session, invocation } = context;
  const delaySeconds = Math.min(context.workWaitSeconds, MAX_RUN_DELAY_SECONDS);
  if (!deps.runs) throw new Error('a run was handed over, but this flow runtime has no flow run queue');
  metricsOf(context).count(METRIC.runs, 1, { status: 'handedOver' });
  session.run = {
    invocationId: invocation.invocationId,
    next,
    ...runProgress(context),
    handedOverAt: session.run?.handedOverAt ?? now(context),
    runner: null,
    takeovers: session.run?.takeovers ?? 0,
  };
  let saved: boolean;
  try {
    saved = await context.lease.save(session, context.lease.until(delaySeconds * 1000));
  } catch (error) {
    if (!(error instanceof SessionTooLargeError)) throw error;
    session.run = { ...session.run, next: null };
    saved = await saveWithoutChanges(context, error);
  }
  if (!saved) throw new RunLostError(session.sessionId);
  if (session.run?.next == null) return;
  const message: ContinueRunMessage = {
    kind: 'continue-run',
    agentId: session.agentId,
    environment: session.environment,
    sessionId: session.sessionId,
    invocationId: invocation.invocationId,
  };
  try {
    await deps.runs.send(message, delaySeconds > 0 ? { delaySeconds } : undefined);
  } catch (error) {
    // In a runner, its own message is not deleted and comes back: the next runner takes the run at once.
    if (context.runner) throw error;
    // Nothing would go on with the run: it ends failed, unless a runner took it (the message went out after all).
    const stored = await deps.sessions.get(session.agentId, session.environment, session.sessionId);
    if (stored?.version !== context.lease.version) return;
    const failure = new FlowError(
      'RUN_HANDOFF_FAILED',
      `The run could not be handed over to the flow runner; it stopped before node ${next.node}`,
    );
    fail(context, Object.assign(failure, { cause: error }));
    session.run = { ...session.run, next: null };
    if (!(await context.lease.save(session, null))) session.status = 'running';
  }
}

/**
 * A node stored as done in the flow runner: its events first (a node whose checkpoint is stored never runs again;
 * one that runs again records its events under the same keys), then the session with where the run goes on.
 */
export async function checkpoint(context: RunContext, next: RunPosition): Promise<void> {
  const { session } = context;
  if (!context.runner || !session.run) return;
  session.run = { ...session.run, next, ...runProgress(context) };
  let saved: boolean;
  try {
    await context.deps.recorder.flush();
    saved = await context.lease.save(session, context.lease.until());
  } catch (error) {
    // A state too large fails the run, as at its end; the store or analytics unreachable is no fault of the flow.
    if (error instanceof SessionTooLargeError) throw error;
    throw new CheckpointError(error);
  }
  if (!saved) throw new RunLostError(session.sessionId);
}

/**
 * A checkpoint could not be written (the session store or analytics failing), or the flow work budget not counted
 * before a node: the runner gives the message back instead of failing the run, and the runner that takes it over once
 * the lease ran out goes on from the last checkpoint (the node that was not stored runs again).
 */
export class CheckpointError extends Error {
  constructor(
    override readonly cause: unknown,
    message = 'a checkpoint of the run could not be written',
  ) {
    super(message);
  }
}
