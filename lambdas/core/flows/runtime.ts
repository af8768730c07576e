/**
 * The flow runtime: one invocation of an agent (the nodes themselves: run-nodes.ts; routing: route.ts; what a run
 * carries: run-context.ts). Primary course: a trigger (webhook, app event or schedule) starts a
 * session, or a message resumes one; TRIGGER_EVENT is recorded as `invocation_start` and default retrieval injects
 * its context as a system message; then nodes run one after another, each recorded as `node_execution` (a prompt
 * node with scoped tools lets its model call them, each call recorded as `tool_call`), following edges
 * (promptCondition edges decided by the model, stepForward edges by their `when`), jumping across flows, until the
 * flow ends or a humanInTheLoop node pauses it. A failure ends the session `failed` with its code and is recorded
 * as `invocation_error` (its message bounded, its stack only in the service log). The session is written back
 * guarded by its version, so two invocations never interleave; a state too large to store ends it `failed` with
 * SESSION_TOO_LARGE instead of leaving it `running`. Whatever happens, the recorded events are flushed.
 *
 * A run that outlives its request's budget is handed over (docs/flows.md, "Long runs"): no node starts in the request
 * after the budget, the session is stored with where the run goes on (`run`), a `continue-run` message goes to the
 * flow runner's queue, and `continueRun` takes the session over there and stores it after every node it completes.
 */

import type { FlowRunMessage } from '../../ports/flows';
import { SessionTooLargeError } from '../../ports/flows';
import { METRIC } from '../../ports/metrics';
import { boundedValue, recordBuiltInEvent } from '../analytics/track';
import { ConflictError, NotFoundError } from '../errors';
import {
  type AttachmentScope,
  forgetAttachments,
  loadContextImages,
  receiveAttachments,
  storeAttachments,
} from './attachments';
import { type AgentDefinition, nodesOf, type TriggerNode } from './definition';
import type { AgentDefinitionRecord } from './definition-record';
import { route } from './route';
import {
  analyticsScope,
  FlowError,
  type FlowRuntimeDeps,
  fail,
  type Invocation,
  locate,
  MAX_STEPS_PER_INVOCATION,
  metricsOf,
  now,
  PAYLOAD_PART_MAX_BYTES,
  type RunContext,
  SESSION_LEASE_MS,
  SessionLease,
  type TriggerSelector,
} from './run-context';
import { runNode } from './run-nodes';
import type { AiMessage, FlowSession, MessageAttachment, RunPosition, SessionMessage, SessionRun } from './session';

/** How one request runs its invocation. */
export interface InvocationOptions {
  /**
   * No node starts more than this many milliseconds after the invocation began: the run is handed over to the flow
   * runner (deps.runs) and the result is `running`. Absent (or no deps.runs): the run goes on to its end here.
   */
  readonly budgetMs?: number;
}

export interface InvocationResult {
  readonly sessionId: string;
  readonly status: FlowSession['status'];
  /** Set while paused: the node waiting for a human's message. */
  readonly currentNode: string | null;
  readonly flowName: string | null;
  /** The AI messages this invocation produced. */
  readonly aiMessages: readonly AiMessage[];
  readonly memory: Record<string, unknown>;
  readonly outputs: Record<string, unknown>;
  readonly error: FlowSession['error'];
  /** True when `createOnly` found the session already there and ran nothing. */
  readonly duplicate?: boolean;
}

export async function invoke(
  deps: FlowRuntimeDeps,
  invocation: Invocation,
  options: InvocationOptions = {},
): Promise<InvocationResult> {
  const started = deps.clock.now().getTime();
  const record = await deps.definitions.get(invocation.agentId, invocation.environment);
  if (!record) {
    throw new NotFoundError(
      'DEFINITION_NOT_FOUND',
      `Agent ${invocation.agentId} has no definition in ${invocation.environment}`,
    );
  }
  const trigger = findTrigger(record.definition, invocation.trigger);
  // Attached images are checked (a 400 before anything is written) and stored first: the claim writes the user's
  // message with their references. One that no session came to reference is deleted again.
  const stored = await storeInputImages(deps, invocation);
  const claimed = stored ? { ...invocation, sessionId: stored.scope.sessionId } : invocation;
  const forget = () =>
    stored && deps.attachments
      ? forgetAttachments(deps.attachments.blobs, stored.scope, stored.attachments).catch(() => undefined)
      : undefined;
  const now = deps.clock.now();
  let claim: Claim;
  try {
    claim = await claimSession(deps, record, claimed, trigger, now, stored?.attachments ?? []);
  } catch (error) {
    // SESSION_BUSY is a claim that wrote nothing; after another error a write may have happened all the same, and
    // the lifecycle rule removes what nobody references.
    if (error instanceof ConflictError) await forget();
    throw error;
  }
  if (claim.refused) await forget();
  if (claim.duplicate) return { ...resultOf(claim.session, []), duplicate: true };

  const context: RunContext = {
    deps,
    record,
    definition: record.definition,
    session: claim.session,
    invocation,
    trigger,
    produced: [],
    step: 0,
    attachments: claim.refused ? [] : (stored?.attachments ?? []),
    images: stored?.loaded ?? new Map(),
    steps: [],
    deadline: options.budgetMs !== undefined && deps.runs ? started + options.budgetMs : null,
    runner: null,
    // The stored claim is `running` at its version (claim.session keeps the status it had, for the resume below).
    lease: new SessionLease(deps, { ...claim.session, status: 'running', version: claim.version }),
  };
  let settled = false;
  try {
    await run(context, claim);
    settled = true;
    return resultOf(context.session, context.produced);
  } finally {
    // Whatever threw, what this invocation recorded is written. When something already failed, that error is the
    // one to answer: a flush that fails too leaves its events queued for the recorder's background retry.
    if (settled) await deps.recorder.flush();
    else await deps.recorder.flush().catch(() => undefined);
  }
}

/**
 * Runs the claimed session to its end, pause or failure and writes it back, releasing the lease; or, past the
 * budget, hands it over to the flow runner.
 */
export async function run(context: RunContext, claim: Claim): Promise<void> {
  const { session } = context;
  const resumeAt = session.status === 'paused' && session.currentNode ? session.currentNode : null;
  session.status = 'running';
  session.error = null;
  let next: RunPosition | null = null;
  context.lease.start();
  try {
    next = await runFromTrigger(context, claim, resumeAt);
  } catch (error) {
    fail(context, error);
  } finally {
    context.lease.stop();
  }
  if (next) await handOver(context, next);
  else await finish(context);
}

/** invocation_start, default retrieval, then the nodes from the trigger (or the paused node's routing). */
async function runFromTrigger(context: RunContext, claim: Claim, resumeAt: string | null): Promise<RunPosition | null> {
  const { deps, session, invocation, trigger } = context;
  recordBuiltInEvent(
    deps.recorder,
    analyticsScope(session),
    'invocation_start',
    {
      triggerName: trigger.name,
      triggerType: trigger.triggerType,
      body: boundedValue(invocation.body, PAYLOAD_PART_MAX_BYTES),
      ...(invocation.message === undefined
        ? {}
        : { message: boundedValue(invocation.message, PAYLOAD_PART_MAX_BYTES) }),
      ...(context.attachments.length > 0 ? { attachments: context.attachments } : {}),
      resumedNode: resumeAt,
    },
    { invocationId: invocation.invocationId },
  );
  if (claim.refused) throw claim.refused;
  await loadImages(context);
  await afterTriggerEvent(context);
  return execute(context, resumeAt ? { node: resumeAt, phase: 'route' } : { node: trigger.name, phase: 'run' });
}

/** Writes the ended (completed, paused, failed) session back and releases the lease. */
async function finish(context: RunContext): Promise<void> {
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

/** A flow runner holds the session and renews its lease: the message is tried again later (SQS redelivers it). */
export class RunHeldError extends ConflictError {
  constructor(sessionId: string) {
    super('SESSION_BUSY', `Session ${sessionId} is held by a live flow runner; the message is tried again later`);
  }
}

/**
 * Past the deadline: the session is stored with where the run goes on (`run.next`, no runner holding it, the lease
 * kept so no other invocation starts meanwhile), then a `continue-run` message goes to the flow runner's queue.
 * Stored first: a runner that gets the message finds the run. A state too large ends the run `failed` here.
 */
async function handOver(context: RunContext, next: RunPosition): Promise<void> {
  const { deps, session, invocation } = context;
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
    saved = await context.lease.save(session, context.lease.until());
  } catch (error) {
    if (!(error instanceof SessionTooLargeError)) throw error;
    session.run = { ...session.run, next: null };
    saved = await saveWithoutChanges(context, error);
  }
  if (!saved) throw new RunLostError(session.sessionId);
  if (session.run?.next == null) return;
  const message: FlowRunMessage = {
    kind: 'continue-run',
    agentId: session.agentId,
    environment: session.environment,
    sessionId: session.sessionId,
    invocationId: invocation.invocationId,
  };
  try {
    await deps.runs.send(message);
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
 * A checkpoint could not be written (the session store or analytics failing): the runner gives the message back
 * instead of failing the run, and the runner that takes it over once the lease ran out goes on from the last
 * checkpoint (the node that was not stored runs again).
 */
class CheckpointError extends Error {
  constructor(override readonly cause: unknown) {
    super('a checkpoint of the run could not be written');
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
  message: FlowRunMessage,
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
      body: {},
      invocationId: run.invocationId,
    },
    trigger,
    produced: [],
    step: run.step,
    attachments: [],
    images: new Map(),
    steps: [...run.steps],
    deadline: options.deadline,
    runner: run.runner,
    lease: new SessionLease(deps, session),
  };
  let settled = false;
  try {
    let next: RunPosition | null = null;
    context.lease.start();
    try {
      if (!record) {
        throw new NotFoundError('DEFINITION_NOT_FOUND', `Agent ${session.agentId} has no definition any more`);
      }
      await loadImages(context);
      next = await execute(context, run.next);
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

function resultOf(session: FlowSession, produced: readonly AiMessage[]): InvocationResult {
  return {
    sessionId: session.sessionId,
    status: session.status,
    currentNode: session.status === 'paused' ? session.currentNode : null,
    flowName: session.flowName,
    aiMessages: produced,
    memory: session.memory,
    outputs: session.outputs,
    error: session.error,
  };
}

function findTrigger(definition: AgentDefinition, selector: TriggerSelector): TriggerNode {
  const triggers = nodesOf(definition)
    .map(({ node }) => node)
    .filter((n): n is TriggerNode => n.type === 'trigger');
  const found =
    selector.type === 'app'
      ? triggers.find(
          (t) =>
            t.triggerType === 'app' &&
            t.appName === selector.appName &&
            (t.eventName === undefined || t.eventName === selector.eventName),
        )
      : triggers.find((t) => t.triggerType === selector.type && t.name === selector.name);
  if (!found) {
    const what =
      selector.type === 'app'
        ? `no app trigger listens to ${selector.appName} event ${selector.eventName}`
        : `no ${selector.type} trigger is named ${selector.name}`;
    throw new NotFoundError('TRIGGER_NOT_FOUND', `This agent's definition has ${what}`);
  }
  return found;
}

interface Claim {
  readonly session: FlowSession;
  /** The stored version after the claim: the final write is guarded by it. */
  readonly version: number;
  readonly duplicate: boolean;
  /** The input made the state too large: the session was claimed without it and the invocation fails with this. */
  readonly refused?: SessionTooLargeError;
}

/**
 * Takes the session for this invocation: a new one, or the stored one when its id is given and it is not held by
 * a running invocation (a lease that ran out, after a crash, may be taken over). Writes `running` first, guarded
 * by version, so a second invocation of the same session gets 409 instead of interleaving.
 */
async function claimSession(
  deps: FlowRuntimeDeps,
  record: AgentDefinitionRecord,
  invocation: Invocation,
  trigger: TriggerNode,
  now: Date,
  attachments: readonly MessageAttachment[],
): Promise<Claim> {
  const at = now.toISOString();
  const leaseUntil = new Date(now.getTime() + SESSION_LEASE_MS).toISOString();
  const existing = invocation.sessionId
    ? await deps.sessions.get(invocation.agentId, invocation.environment, invocation.sessionId)
    : undefined;
  const triggerInfo = { name: trigger.name, type: trigger.triggerType };
  if (!existing) {
    const blank: FlowSession = {
      agentId: invocation.agentId,
      environment: invocation.environment,
      sessionId: invocation.sessionId ?? deps.ids.uuid(),
      organizationId: record.organizationId,
      status: 'running',
      flowName: null,
      currentNode: null,
      memory: {},
      messages: [],
      outputs: {},
      aiMessages: [],
      error: null,
      trigger: triggerInfo,
      invocations: 1,
      leaseUntil,
      version: 1,
      createdAt: at,
      updatedAt: at,
    };
    const session = withInput(blank, invocation, attachments, at);
    const { written, refused } = await withoutInputIfTooLarge(
      () => deps.sessions.create(session),
      () => deps.sessions.create(blank),
    );
    if (!written) {
      if (invocation.createOnly) {
        const stored = await deps.sessions.get(invocation.agentId, invocation.environment, session.sessionId);
        if (stored) return { session: stored, version: stored.version, duplicate: true };
      }
      throw new ConflictError('SESSION_BUSY', `Session ${session.sessionId} was started by another invocation`);
    }
    return { session: refused ? blank : session, version: 1, duplicate: false, refused };
  }
  if (invocation.createOnly) return { session: existing, version: existing.version, duplicate: true };
  if (existing.status === 'running' && existing.leaseUntil && existing.leaseUntil > at) {
    throw new ConflictError('SESSION_BUSY', `Session ${existing.sessionId} is running another invocation`);
  }
  // The run of an earlier invocation is over for good: a message of its hand-over that comes late finds nothing to run.
  const { run: _over, ...kept } = existing;
  const taken: FlowSession = {
    ...kept,
    // A session that crashed while running starts over from the trigger, keeping its memory and messages.
    status: existing.status === 'running' ? 'completed' : existing.status,
    trigger: triggerInfo,
    invocations: existing.invocations + 1,
    leaseUntil,
    updatedAt: at,
  };
  const session = withInput(taken, invocation, attachments, at);
  const claimed = (s: FlowSession): FlowSession => ({ ...s, status: 'running', version: existing.version + 1 });
  const { written, refused } = await withoutInputIfTooLarge(
    () => deps.sessions.save(claimed(session), existing.version),
    () => deps.sessions.save(claimed(taken), existing.version),
  );
  if (!written) {
    throw new ConflictError('SESSION_BUSY', `Session ${existing.sessionId} is running another invocation`);
  }
  return { session: refused ? taken : session, version: existing.version + 1, duplicate: false, refused };
}

/**
 * Writes the claim with the invocation's input; when that makes the state too large, writes it without (the state
 * as it was, which fit) so the invocation can still end `failed` with SESSION_TOO_LARGE and release its lease.
 */
async function withoutInputIfTooLarge(
  withIt: () => Promise<boolean>,
  withoutIt: () => Promise<boolean>,
): Promise<{ written: boolean; refused?: SessionTooLargeError }> {
  try {
    return { written: await withIt() };
  } catch (error) {
    if (!(error instanceof SessionTooLargeError)) throw error;
    return { written: await withoutIt(), refused: error };
  }
}

/**
 * The trigger's payload goes into memory (shallow merge); its message, with the references of its attached images,
 * into the conversation (images alone make a user message too). A new object.
 */
function withInput(
  session: FlowSession,
  invocation: Invocation,
  attachments: readonly MessageAttachment[],
  at: string,
): FlowSession {
  const content = invocation.message ?? '';
  const message: SessionMessage | undefined =
    attachments.length > 0
      ? { role: 'user', content, attachments, at }
      : content !== ''
        ? { role: 'user', content, at }
        : undefined;
  return {
    ...session,
    memory: { ...session.memory, ...invocation.body },
    messages: message ? [...session.messages, message] : [...session.messages],
  };
}

/** The invocation's images checked and stored under its session (whose id is chosen here for a new one); null: none. */
async function storeInputImages(deps: FlowRuntimeDeps, invocation: Invocation) {
  if (!invocation.attachments?.length) return null;
  if (!deps.attachments) throw new Error('this deployment of the flow runtime has no attachment store');
  const images = await receiveAttachments(deps.attachments.downloads, invocation.attachments);
  const scope: AttachmentScope = {
    agentId: invocation.agentId,
    environment: invocation.environment,
    sessionId: invocation.sessionId ?? deps.ids.uuid(),
  };
  const stored = await storeAttachments(deps.attachments.blobs, scope, images, () => deps.ids.uuid());
  return { scope, ...stored };
}

/** Reads the images the model context shows (the conversation's newest) before any node asks a model. */
async function loadImages(context: RunContext): Promise<void> {
  const { deps, session } = context;
  // The messages first: the schedule tick's function, whose sessions never hold images, has no bucket to build.
  if (!session.messages.some((m) => m.attachments?.length) || !deps.attachments) return;
  context.images = await loadContextImages(
    deps.attachments.blobs,
    session,
    session.messages,
    context.images,
    deps.clock.now(),
  );
}

/** After TRIGGER_EVENT: default retrieval, when the environment has it on, adds its context as a system message. */
async function afterTriggerEvent(context: RunContext): Promise<void> {
  const { session, invocation, deps } = context;
  const query =
    invocation.message?.trim() || (Object.keys(invocation.body).length ? JSON.stringify(invocation.body) : '');
  if (query === '') return;
  const systemMessage = await deps.defaultRetrieval({
    agentId: session.agentId,
    environment: session.environment,
    organizationId: session.organizationId,
    query: query.slice(0, 2000),
    memory: session.memory,
  });
  if (systemMessage) session.messages.push({ role: 'system', content: systemMessage, at: now(context) });
}

/**
 * Runs from `start` until the flow ends or pauses (null), or until the deadline passes before a node starts: then
 * the position to go on from. In the flow runner each step is stored as it completes (checkpoint).
 */
async function execute(context: RunContext, start: RunPosition): Promise<RunPosition | null> {
  const { session, definition } = context;
  let position: RunPosition | null = start;
  while (position) {
    if (context.deadline !== null && context.deps.clock.now().getTime() >= context.deadline) return position;
    const located = locate(definition, position.node);
    if (!located) {
      throw new FlowError('NODE_NOT_FOUND', `Node ${position.node} is not in this agent's definition any more`);
    }
    session.flowName = located.flow.name;
    session.currentNode = located.node.name;
    if (position.phase === 'run') {
      context.step += 1;
      if (context.step > MAX_STEPS_PER_INVOCATION) {
        throw new FlowError(
          'STEP_LIMIT_EXCEEDED',
          `The invocation ran ${MAX_STEPS_PER_INVOCATION} nodes without ending or pausing`,
        );
      }
      const outcome = await runNode(context, located);
      context.steps.push({ step: context.step, node: located.node.name, at: now(context) });
      if (outcome === 'pause') {
        session.status = 'paused';
        return null;
      }
      if (typeof outcome === 'object') {
        position = { node: outcome.jumpTo, phase: 'run' };
        await checkpoint(context, position);
        continue;
      }
      // Routing asks the model here: the node is stored as done first, so that question is all that can run again.
      if (located.flow.edges.some((e) => e.from === located.node.name && e.type === 'promptCondition')) {
        await checkpoint(context, { node: located.node.name, phase: 'route' });
      }
    }
    const next = await route(context, located);
    position = next === null ? null : { node: next, phase: 'run' };
    if (position) await checkpoint(context, position);
  }
  session.status = 'completed';
  session.currentNode = null;
  return null;
}
