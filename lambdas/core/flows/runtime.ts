/**
 * The flow runtime: one invocation of an agent. Primary course: a trigger (webhook, app event or schedule) starts a
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
import type {
  BrowserDriver,
  DefinitionStore,
  FlowModel,
  FlowModelResolver,
  FlowRunMessage,
  FlowRunQueue,
  OutboundHttp,
  ScopedTool,
  SessionStore,
  ToolParameterSpec,
} from '../../ports/flows';
import { SessionTooLargeError } from '../../ports/flows';
import type { ModelImage, ModelProvider, ModelToolCall, ModelToolRound } from '../../ports/model';
import type { Clock, IdGenerator } from '../../ports/services';
import {
  type AnalyticsRecorder,
  boundedValue,
  EventRecordingError,
  recordBuiltInEvent,
  trackAnalyticsEvent,
  truncatedText,
} from '../analytics/track';
import { AppError, ConflictError, NotFoundError, ValidationError } from '../errors';
import type { Environment } from '../knowledge/fields';
import type { RetrievalDeps } from '../retrieval/retrieve';
import {
  type AttachmentDeps,
  type AttachmentInput,
  type AttachmentScope,
  forgetAttachments,
  loadContextImages,
  receiveAttachments,
  storeAttachments,
} from './attachments';
import {
  type AgentDefinition,
  type BrowserTaskNode,
  BUILT_IN_TOOL_PARAMETERS,
  BUILT_IN_TOOLS,
  type EdgeCondition,
  type FlowDefinition,
  type FlowEdge,
  type FlowNode,
  isBuiltInTool,
  nodesOf,
  type PromptNode,
  type ToolNode,
  type TriggerNode,
} from './definition';
import type { AgentDefinitionRecord } from './definition-record';
import { isParameterValueOfType } from './parameters';
import { type PlaceholderScope, renderText, renderValue, valueAtPath } from './placeholders';
import { isRetrievalTool, runRetrievalTool } from './retrieval-tools';
import {
  type AiMessage,
  type FlowSession,
  MAX_STORED_AI_MESSAGES,
  MAX_STORED_MESSAGES,
  type MessageAttachment,
  type RunPosition,
  type RunStep,
  type SessionMessage,
  type SessionRun,
} from './session';

/** The spec's event names, for agent code and handlers. */
export const AgentEvents = {
  AI_MESSAGE: 'AgentEvents.AI_MESSAGE',
  TRIGGER_EVENT: 'TRIGGER_EVENT',
  ANALYTICS_EVENT: 'ANALYTICS_EVENT',
} as const;

/** Node runs per invocation; a flow that loops longer (a canStayOnNode without a human, say) fails. */
export const MAX_STEPS_PER_INVOCATION = 50;
/**
 * How long an invocation holds its session unless it renews the lease (every third of it, while it runs); one that
 * crashed is taken over after this. FlowRuntimeDeps.leaseMs overrides it (FLOW_SESSION_LEASE_MS).
 */
export const SESSION_LEASE_MS = 60_000;
/** Analytics payload parts larger than this (UTF-8 JSON) are recorded as a truncated preview (events hold 32 KiB). */
const PAYLOAD_PART_MAX_BYTES = 8 * 1024;
/**
 * A node output larger than this (UTF-8 JSON) is stored as a truncated preview, so one answer (an HTTP tool may send
 * 1 MB) cannot fill the session's state; a browser task's 20,000 characters of text fit.
 */
export const NODE_OUTPUT_MAX_BYTES = 32 * 1024;
/** Failure messages (session.error, invocation_error) are cut to this many characters: they may embed caller input. */
export const FAILURE_MESSAGE_MAX_CHARS = 1_000;
/**
 * Scoped tool calls one prompt node run may make (refused ones count too). A model answer that asks for more fails
 * the node with TOOL_CALL_LIMIT before any call of that answer runs.
 */
export const TOOL_CALL_LIMIT = 8;
/** Of each scoped call, the node's output keeps the parameters and the result up to these sizes (UTF-8 JSON). */
export const CALL_PARAMETERS_MAX_BYTES = 512;
export const CALL_RESULT_MAX_BYTES = 3 * 1024;
/** A prompt node with scoped tools keeps its answer and its calls, so its output may take twice a node's bound. */
export const PROMPT_WITH_TOOLS_OUTPUT_MAX_BYTES = 2 * NODE_OUTPUT_MAX_BYTES;
/** A browser task keeps the page's text (20,000 characters), its answer and its steps: twice a node's bound too. */
export const BROWSER_TASK_OUTPUT_MAX_BYTES = 2 * NODE_OUTPUT_MAX_BYTES;
/** Of each browser_step event, the target, the value typed and the error are cut to this many characters. */
const BROWSER_STEP_TEXT_MAX_CHARS = 1_000;

export type DefaultRetrievalRunner = (request: {
  readonly agentId: string;
  readonly environment: Environment;
  readonly organizationId: string;
  readonly query: string;
  readonly memory: Record<string, unknown>;
}) => Promise<string | null>;

export interface FlowRuntimeDeps {
  readonly definitions: DefinitionStore;
  readonly sessions: SessionStore;
  readonly models: FlowModelResolver;
  readonly browser: BrowserDriver;
  readonly http: OutboundHttp;
  readonly recorder: AnalyticsRecorder;
  readonly defaultRetrieval: DefaultRetrievalRunner;
  /** What the built-in retrieval tools read: the knowledge index and the stores of agents and knowledge bases. */
  readonly knowledge: RetrievalDeps;
  /** The model retrieveAndGenerateFromKnowledgeBase answers with (the generate endpoint's); null: extractive. */
  readonly generateModel: ModelProvider | null;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Where images attached to user messages are read from (a URL) and kept; needed only by invocations with some. */
  readonly attachments?: AttachmentDeps;
  /** Told every failed invocation with its error, stack included: the service log (analytics never get a stack). */
  readonly onFailure?: (failure: InvocationFailure, error: unknown) => void;
  /** The flow runner's queue, where a run that outlives its request's budget goes on; absent: runs never hand over. */
  readonly runs?: FlowRunQueue;
  /** The session lease's length (default SESSION_LEASE_MS). */
  readonly leaseMs?: number;
}

/** How one request runs its invocation. */
export interface InvocationOptions {
  /**
   * No node starts more than this many milliseconds after the invocation began: the run is handed over to the flow
   * runner (deps.runs) and the result is `running`. Absent (or no deps.runs): the run goes on to its end here.
   */
  readonly budgetMs?: number;
}

export interface InvocationFailure {
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId: string;
  readonly invocationId: string;
  readonly code: string;
  readonly node: string | null;
}

/** Which trigger an invocation comes through. */
export type TriggerSelector =
  | { readonly type: 'webhook'; readonly name: string }
  | { readonly type: 'app'; readonly appName: string; readonly eventName: string }
  | { readonly type: 'schedule'; readonly name: string };

export interface Invocation {
  readonly agentId: string;
  readonly environment: Environment;
  readonly organizationId: string;
  readonly trigger: TriggerSelector;
  /** Resume (paused) or continue (ended) this session; absent: a new session. */
  readonly sessionId?: string;
  /** A user message: added to the conversation; the query of default retrieval. */
  readonly message?: string;
  /** Images attached to the user's message (docs/flows.md, "Attachments"): checked, stored, then referenced by it. */
  readonly attachments?: readonly AttachmentInput[];
  /** The trigger's payload: merged into memory, recorded with invocation_start. */
  readonly body: Record<string, unknown>;
  /** Unique per invocation; analytics keys derive from it, so a retried write of it does not count twice. */
  readonly invocationId: string;
  /** Only create the session (a schedule fire that may arrive twice): an existing id is a no-op. */
  readonly createOnly?: boolean;
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

/** A flow failed at run time; the session ends `failed` with this code. */
export class FlowError extends AppError {
  constructor(code: string, message: string) {
    super(422, code, message);
  }
}

interface Located {
  readonly flow: FlowDefinition;
  readonly node: FlowNode;
}

interface RunContext {
  readonly deps: FlowRuntimeDeps;
  readonly record: AgentDefinitionRecord;
  readonly definition: AgentDefinition;
  readonly session: FlowSession;
  readonly invocation: Invocation;
  readonly trigger: TriggerNode;
  readonly produced: AiMessage[];
  step: number;
  /** The images this invocation attached to the user's message (references). */
  readonly attachments: readonly MessageAttachment[];
  /** By attachment id: the images the model context shows (the conversation's newest; see loadContextImages). */
  images: ReadonlyMap<string, ModelImage>;
  /** The nodes this invocation ran, for `session.run` (a request's, and every runner's after it). */
  readonly steps: RunStep[];
  /** No node starts at or after this time (epoch ms): the run is handed over. Null: it goes on to its end here. */
  readonly deadline: number | null;
  /** In the flow runner, the runner's id: the session is then stored after every node (a checkpoint). */
  readonly runner: string | null;
  readonly lease: SessionLease;
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
async function run(context: RunContext, claim: Claim): Promise<void> {
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
 * The invocation's hold on its session: the version it last wrote, and the lease, renewed every third of its length
 * while a node runs by writing again the state last stored (never the state of a node in flight, so a node is stored
 * only once it completed). Writes go one after another. A write that finds another version means another invocation
 * took the session over after this one's lease ran out: the hold is lost and nothing more is written.
 */
class SessionLease {
  version: number;
  private stored: FlowSession;
  private writes: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private lost = false;

  constructor(
    private readonly deps: FlowRuntimeDeps,
    stored: FlowSession,
  ) {
    this.version = stored.version;
    this.stored = structuredClone(stored);
  }

  get ms(): number {
    return this.deps.leaseMs ?? SESSION_LEASE_MS;
  }

  until(): string {
    return new Date(this.deps.clock.now().getTime() + this.ms).toISOString();
  }

  start(): void {
    this.timer = setInterval(() => void this.renew().catch(() => undefined), Math.max(100, Math.floor(this.ms / 3)));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Stores the session as it is now, with this lease (null: released). False when the hold was lost. */
  save(session: FlowSession, leaseUntil: string | null): Promise<boolean> {
    return this.serialized(async () => {
      if (this.lost) return false;
      session.leaseUntil = leaseUntil;
      session.updatedAt = this.deps.clock.now().toISOString();
      session.messages = session.messages.slice(-MAX_STORED_MESSAGES);
      session.aiMessages = session.aiMessages.slice(-MAX_STORED_AI_MESSAGES);
      session.version = this.version + 1;
      if (!(await this.deps.sessions.save(session, this.version))) {
        this.lost = true;
        return false;
      }
      this.version += 1;
      this.stored = structuredClone(session);
      return true;
    });
  }

  private renew(): Promise<void> {
    return this.serialized(async () => {
      if (this.lost) return;
      const renewed: FlowSession = { ...this.stored, leaseUntil: this.until(), version: this.version + 1 };
      if (await this.deps.sessions.save(renewed, this.version)) {
        this.version += 1;
        this.stored = renewed;
      } else this.lost = true;
    });
  }

  private serialized<T>(write: () => Promise<T>): Promise<T> {
    const result = this.writes.then(write, write);
    this.writes = result.catch(() => undefined);
    return result;
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
async function checkpoint(context: RunContext, next: RunPosition): Promise<void> {
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

/** Ends the session `failed` with the error's code and a bounded message; records invocation_error without stack. */
function fail(context: RunContext, error: unknown, step?: string): void {
  const { deps, session, invocation } = context;
  const failure = describeFailure(error);
  session.status = 'failed';
  session.error = { code: failure.code, message: failure.message, node: session.currentNode };
  deps.onFailure?.(
    {
      agentId: session.agentId,
      environment: session.environment,
      sessionId: session.sessionId,
      invocationId: invocation.invocationId,
      code: failure.code,
      node: session.currentNode,
    },
    error,
  );
  try {
    recordBuiltInEvent(
      deps.recorder,
      analyticsScope(session),
      'invocation_error',
      { code: failure.code, message: failure.message, nodeName: session.currentNode },
      { invocationId: invocation.invocationId, step },
    );
  } catch (recording) {
    // Bounded as it is, the event should always fit; if it does not, the session still ends failed and is stored.
    if (!(recording instanceof EventRecordingError)) throw recording;
    deps.onFailure?.(
      {
        agentId: session.agentId,
        environment: session.environment,
        sessionId: session.sessionId,
        invocationId: invocation.invocationId,
        code: 'EVENT_NOT_RECORDED',
        node: session.currentNode,
      },
      recording,
    );
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

function now(context: RunContext): string {
  return context.deps.clock.now().toISOString();
}

function locate(definition: AgentDefinition, name: string): Located | undefined {
  for (const flow of definition.flows) {
    const node = flow.nodes.find((n) => n.name === name);
    if (node) return { flow, node };
  }
  return undefined;
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

/** Runs one node; `pause` stops the invocation, `{ jumpTo }` continues at another node (of any flow). */
async function runNode(context: RunContext, { node }: Located): Promise<'next' | 'pause' | { jumpTo: string }> {
  switch (node.type) {
    case 'trigger':
    case 'junction':
      recordNode(context, node, {});
      return 'next';
    case 'jumpToNode': {
      recordNode(context, node, { targetNodeId: node.targetNodeId });
      if (!locate(context.definition, node.targetNodeId)) {
        throw new FlowError(
          'JUMP_TARGET_NOT_FOUND',
          `jumpToNode ${node.name}: targetNodeId ${node.targetNodeId} matches no node in any loaded flow`,
        );
      }
      return { jumpTo: node.targetNodeId };
    }
    case 'promptNode':
      return runPrompt(context, node);
    case 'tool':
      await runTool(context, node);
      return 'next';
    case 'browserTask':
      await runBrowserTaskNode(context, node);
      return 'next';
  }
}

/**
 * A browser task: the driver opens the page and the node's model operates it, one action per step
 * (core/flows/browser-task.ts), wherever the browser runs. Each step is recorded as `browser_step`; the output is
 * `{ answer, url, status, title, text, steps }`. A task that stopped before `done` (BROWSER_STEP_LIMIT, a model that
 * failed) fails the node with that code, its output and its steps kept.
 */
async function runBrowserTaskNode(context: RunContext, node: BrowserTaskNode): Promise<void> {
  const scope = placeholderScope(context, node.name);
  const prompt = renderText(node.prompt, scope);
  const url = node.url === undefined ? undefined : renderText(node.url, scope);
  recordNode(context, node, { prompt, ...(url === undefined ? {} : { url }), model: node.model ?? null });
  const { system, messages } = modelContext(context);
  const result = await context.deps.browser.run({
    prompt,
    url,
    model: node.model,
    // The conversation's text only: its images would not fit the BrowserTask function's request (6 MB).
    context: {
      ...(system === undefined ? {} : { system }),
      messages: messages.map(({ role, content }) => ({ role, content })),
    },
  });
  result.steps.forEach((step, index) => {
    recordBuiltInEvent(
      context.deps.recorder,
      analyticsScope(context.session),
      'browser_step',
      {
        nodeName: node.name,
        stepIndex: index,
        action: step.action,
        target: step.target === null ? null : truncatedText(step.target, BROWSER_STEP_TEXT_MAX_CHARS),
        ...(step.value === undefined ? {} : { value: truncatedText(step.value, BROWSER_STEP_TEXT_MAX_CHARS) }),
        ok: step.ok,
        ...(step.error ? { error: boundedValue(step.error, BROWSER_STEP_TEXT_MAX_CHARS * 2) } : {}),
        url: truncatedText(step.url, BROWSER_STEP_TEXT_MAX_CHARS * 2),
        durationMs: step.durationMs,
      },
      { invocationId: context.invocation.invocationId, step: `${context.step}:${index}` },
    );
  });
  setOutput(
    context,
    node,
    {
      answer: result.answer,
      url: result.url,
      status: result.status,
      title: result.title,
      text: result.text,
      steps: result.steps.map(({ action, target, ok, error }) => ({ action, target, ok, ...(error ? { error } : {}) })),
    },
    BROWSER_TASK_OUTPUT_MAX_BYTES,
  );
  if (result.failure) throw new FlowError(result.failure.code, result.failure.message);
}

async function runPrompt(context: RunContext, node: PromptNode): Promise<'next' | 'pause'> {
  const { session, deps } = context;
  const prompt = renderText(node.prompt, placeholderScope(context, node.name));
  const model = deps.models(node.llmConfig);
  const tools = node.tools ?? [];
  recordNode(context, node, {
    prompt,
    model: model.name,
    llmConfig: node.llmConfig ?? null,
    ...(tools.length > 0 ? { tools } : {}),
  });
  let text: string;
  if (tools.length > 0) {
    const calls: StoredCall[] = [];
    try {
      text = await respondWithTools(context, node, model, prompt, calls);
    } catch (error) {
      // What the calls did (memory written, requests sent) stays visible on the failed session.
      setOutput(context, node, { calls }, PROMPT_WITH_TOOLS_OUTPUT_MAX_BYTES);
      throw error;
    }
    setOutput(context, node, { response: text, calls }, PROMPT_WITH_TOOLS_OUTPUT_MAX_BYTES);
  } else {
    text = await model.respond(modelContext(context), prompt);
    setOutput(context, node, { response: text });
  }
  const at = now(context);
  session.messages.push({ role: 'assistant', content: text, node: node.name, at });
  if (node.sendAiMessage) await emitAiMessage(context, node, text, model, at);
  return node.humanInTheLoop ? 'pause' : 'next';
}

/** A scoped call as `{tools.<PromptNode>.calls.<n>}` reads it (n from 0, in the order the model asked). */
interface StoredCall {
  readonly tool: string;
  readonly parameters: unknown;
  readonly status: 'succeeded' | 'failed' | 'refused';
  readonly result?: unknown;
  readonly error?: { readonly code: string; readonly message: string };
}

/**
 * The model's turns of a prompt node with scoped tools: it answers, or asks for calls; each call runs (or is
 * refused) and its result goes back to it, until it answers. An answer asking for more than TOOL_CALL_LIMIT calls
 * in all fails the node before any of its calls runs.
 */
async function respondWithTools(
  context: RunContext,
  node: PromptNode,
  model: FlowModel,
  prompt: string,
  calls: StoredCall[],
): Promise<string> {
  const tools = (node.tools ?? []).flatMap((name) => scopedTool(context.definition, name) ?? []);
  const rounds: ModelToolRound[] = [];
  for (;;) {
    const turn = await model.respondWithTools(modelContext(context), {
      prompt,
      tools,
      rounds,
      memory: context.session.memory,
    });
    if ('answer' in turn) return turn.answer;
    // Asking for no call is answering (the port's adapters never do it; without this a model could loop forever).
    if (turn.calls.length === 0) return turn.text ?? '';
    if (calls.length + turn.calls.length > TOOL_CALL_LIMIT) {
      throw new FlowError(
        'TOOL_CALL_LIMIT',
        `Prompt node ${node.name}: the model asked for ${turn.calls.length} more tool call(s) after ${calls.length}; a node run makes at most ${TOOL_CALL_LIMIT}`,
      );
    }
    const results: { callId: string; content: unknown }[] = [];
    for (const call of turn.calls) {
      const { stored, forModel } = await scopedCall(context, node, tools, call, calls.length);
      calls.push(stored);
      results.push({ callId: call.id, content: forModel });
    }
    rounds.push({ calls: turn.calls, results, ...(turn.text ? { text: turn.text } : {}) });
  }
}

/**
 * One call the model asked for: refused when the tool is not in the node's scope, failed when its parameters break
 * the tool's declaration or the tool fails (the error is the result the model gets, so it can try otherwise), else
 * run by the same code as a tool node. Recorded as `tool_call`.
 */
async function scopedCall(
  context: RunContext,
  node: PromptNode,
  tools: readonly ScopedTool[],
  call: ModelToolCall,
  index: number,
): Promise<{ stored: StoredCall; forModel: unknown }> {
  const started = context.deps.clock.now().getTime();
  const tool = tools.find((t) => t.name === call.name);
  let status: StoredCall['status'];
  let output: unknown;
  let error: StoredCall['error'];
  if (!tool) {
    status = 'refused';
    error = {
      code: 'TOOL_NOT_IN_SCOPE',
      message: `Tool ${truncatedText(call.name, 100)} is not one of the tools of node ${node.name} (${tools.map((t) => t.name).join(', ')}); it was not called`,
    };
  } else {
    try {
      const parameters = modelParameters(tool, call.input);
      output = await executeTool(context, {
        toolName: tool.name,
        parameters,
        key: `${context.step}:${index}`,
        source: `the model left it out of call ${index} of node ${node.name}`,
      });
      status = 'succeeded';
    } catch (failure) {
      // A fault of ours (not an AppError) is no result to hand the model: it fails the session.
      if (!(failure instanceof AppError)) throw failure;
      status = 'failed';
      error = describeFailure(failure);
    }
  }
  const parameters = call.input ?? null;
  recordBuiltInEvent(
    context.deps.recorder,
    analyticsScope(context.session),
    'tool_call',
    {
      nodeName: node.name,
      callIndex: index,
      tool: truncatedText(call.name, 100),
      parameters: boundedValue(parameters, PAYLOAD_PART_MAX_BYTES),
      status,
      durationMs: Math.max(0, context.deps.clock.now().getTime() - started),
      ...(error ? { error } : {}),
    },
    { invocationId: context.invocation.invocationId, step: `${context.step}:${index}` },
  );
  const stored: StoredCall = {
    tool: truncatedText(call.name, 100),
    parameters: boundedValue(parameters, CALL_PARAMETERS_MAX_BYTES),
    status,
    ...(error ? { error } : { result: boundedValue(output, CALL_RESULT_MAX_BYTES) }),
  };
  return { stored, forModel: error ? { error } : boundedValue(output, NODE_OUTPUT_MAX_BYTES) };
}

/**
 * The model's parameters, checked against the tool's declaration (a tool node's come from its definition, which
 * validation checked): a JSON object, no parameter the tool does not declare (but setMemory takes any), each of its
 * declared type. A null stands for a parameter left out, as models send for optional ones.
 */
function modelParameters(tool: ScopedTool, input: unknown): Record<string, unknown> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new FlowError('TOOL_PARAMETERS_INVALID', `Tool ${tool.name}: the parameters must be a JSON object`);
  }
  const parameters: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, value] of Object.entries(input)) {
    const spec = Object.hasOwn(tool.parameters, name) ? tool.parameters[name] : undefined;
    if (spec === undefined && !tool.anyParameters) problems.push(`${name} is not a parameter of ${tool.name}`);
    else if (value === null && spec !== undefined) continue;
    else if (spec !== undefined && !isParameterValueOfType(value, spec.type))
      problems.push(`${name} must be ${spec.type}`);
    else parameters[name] = value;
  }
  if (problems.length > 0) {
    throw new FlowError('TOOL_PARAMETERS_INVALID', `Tool ${tool.name}: ${truncatedText(problems.join('; '), 500)}`);
  }
  return parameters;
}

/** A tool as the model of a prompt node sees it; undefined when the definition has no such tool. */
function scopedTool(definition: AgentDefinition, name: string): ScopedTool | undefined {
  const declared = definition.tools.find((t) => t.name === name);
  if (declared) {
    return {
      name,
      description: declared.description || `The HTTP tool ${name}`,
      parameters: declared.parameters,
      anyParameters: false,
    };
  }
  if (!isBuiltInTool(name)) return undefined;
  const parameters = BUILT_IN_TOOL_PARAMETERS[name];
  return { name, description: BUILT_IN_TOOLS[name], parameters: parameters ?? {}, anyParameters: parameters === null };
}

/**
 * AgentEvents.AI_MESSAGE: the message is stored on the session (and answered to the caller) and, when the agent
 * has a callback URL, POSTed there. A callback that fails does not fail the flow; the session records it.
 */
async function emitAiMessage(context: RunContext, node: PromptNode, content: string, model: FlowModel, at: string) {
  const { session, deps, definition, invocation } = context;
  const message: AiMessage = {
    node: node.name,
    displayName: node.displayName,
    content,
    model: model.name,
    invocationId: invocation.invocationId,
    at,
  };
  let delivered: AiMessage = message;
  if (definition.callbackUrl) {
    try {
      const response = await deps.http.request({
        url: definition.callbackUrl,
        method: 'POST',
        body: {
          event: AgentEvents.AI_MESSAGE,
          agentId: session.agentId,
          environment: session.environment,
          sessionId: session.sessionId,
          ...message,
        },
      });
      const ok = response.status >= 200 && response.status < 300;
      delivered = { ...message, callback: { delivered: ok, status: response.status } };
    } catch (error) {
      delivered = { ...message, callback: { delivered: false, error: describeFailure(error).message } };
    }
  }
  session.aiMessages.push(delivered);
  context.produced.push(delivered);
}

async function runTool(context: RunContext, node: ToolNode): Promise<void> {
  const { session, deps } = context;
  const tool = scopedTool(context.definition, node.toolName);
  if (!tool) throw new FlowError('TOOL_NOT_FOUND', `Tool ${node.toolName} is not registered for this agent`);
  const specs: Readonly<Record<string, ToolParameterSpec>> = tool.parameters;
  const fixed = renderValue(node.parameters ?? {}, placeholderScope(context, node.name)) as Record<string, unknown>;
  const missing = Object.keys(specs).filter((key) => fixed[key] === undefined);
  let inferred: Record<string, unknown> = {};
  if (missing.length > 0) {
    inferred = await deps.models(undefined).inferParameters(modelContext(context), {
      toolName: node.toolName,
      hint: node.prompt,
      parameters: specs,
      missing,
      memory: session.memory,
    });
  }
  // Fixed values override what the model inferred.
  const parameters: Record<string, unknown> = { ...inferred, ...fixed };
  recordNode(context, node, { toolName: node.toolName, parameters });
  const output = await executeTool(context, {
    toolName: node.toolName,
    parameters,
    key: String(context.step),
    source: `neither fixed by node ${node.name} nor inferred`,
  });
  setOutput(context, node, output);
}

interface ToolExecution {
  readonly toolName: string;
  readonly parameters: Record<string, unknown>;
  /** Unique within the invocation (the step, and the index of a scoped call): keys what the tool records. */
  readonly key: string;
  /** Why a required parameter can be missing, for the message of TOOL_PARAMETERS_MISSING. */
  readonly source: string;
}

/**
 * One tool call, whoever makes it (a tool node, or a prompt node's model): the required-parameter rule, then the
 * built-in's code or the declared HTTP tool through the outbound guard. Its output as a node stores it: a JSON
 * object as it is, anything else as `{ result }`. Fails with an AppError (TOOL_FAILED, TOOL_PARAMETERS_MISSING,
 * TOOL_PARAMETERS_INVALID, TARGET_REFUSED, OUTBOUND_FAILED, KNOWLEDGE_BASE_NOT_FOUND, …).
 */
async function executeTool(context: RunContext, execution: ToolExecution): Promise<Record<string, unknown>> {
  const { session, deps, definition } = context;
  const { toolName, parameters } = execution;
  const tool = scopedTool(definition, toolName);
  if (!tool) throw new FlowError('TOOL_NOT_FOUND', `Tool ${toolName} is not registered for this agent`);
  const absent = Object.entries(tool.parameters)
    .filter(([key, spec]) => spec.required && parameters[key] === undefined)
    .map(([key]) => key);
  if (absent.length > 0) {
    throw new FlowError('TOOL_PARAMETERS_MISSING', `Tool ${toolName} needs ${absent.join(', ')}: ${execution.source}`);
  }

  let output: unknown;
  if (toolName === 'setMemory') {
    session.memory = { ...session.memory, ...parameters };
    output = parameters;
  } else if (toolName === 'trackAnalyticsEvent') {
    const { eventName, payload } = parameters;
    if (typeof eventName !== 'string' || (payload !== undefined && (typeof payload !== 'object' || payload === null))) {
      throw new FlowError('TOOL_FAILED', 'trackAnalyticsEvent needs eventName (string) and payload (object)');
    }
    const eventKey = `${context.invocation.invocationId}:${AgentEvents.ANALYTICS_EVENT}:${execution.key}`;
    const data = (payload ?? {}) as Record<string, unknown>;
    try {
      trackAnalyticsEvent(deps.recorder, analyticsScope(session), eventName, data, { eventKey });
    } catch (error) {
      // The flow's event breaks a rule: the node failed, not the request that started the flow.
      if (error instanceof ValidationError) throw new FlowError('TOOL_FAILED', `trackAnalyticsEvent: ${error.message}`);
      throw error;
    }
    output = { eventName, recorded: true };
  } else if (isRetrievalTool(toolName)) {
    output = await runRetrievalTool(deps, toolName, parameters, {
      organizationId: session.organizationId,
      agentId: session.agentId,
      environment: session.environment,
      memory: session.memory,
    });
  } else {
    const declared = definition.tools.find((t) => t.name === toolName);
    if (!declared) throw new FlowError('TOOL_NOT_FOUND', `Tool ${toolName} is not registered for this agent`);
    const response = await deps.http.request({
      url: declared.url,
      method: declared.method,
      headers: declared.headers,
      body: parameters,
    });
    if (response.status < 200 || response.status >= 300) {
      throw new FlowError('TOOL_FAILED', `Tool ${toolName} answered HTTP ${response.status}`);
    }
    output = response.body;
  }
  return output !== null && typeof output === 'object' && !Array.isArray(output)
    ? (output as Record<string, unknown>)
    : { result: output ?? null };
}

/** What `{tools.<node>.…}` reads: the output as it is up to NODE_OUTPUT_MAX_BYTES, else a truncated preview. */
function setOutput(context: RunContext, node: FlowNode, output: unknown, maxBytes = NODE_OUTPUT_MAX_BYTES): void {
  context.session.outputs[node.name] = boundedValue(output, maxBytes);
}

/**
 * The next node after `from`: promptCondition edges first (the model picks one, or `stay` on a canStayOnNode
 * node), then stepForward edges whose `when` holds, in order, then the first stepForward without `when`. None: the
 * flow ends.
 */
async function route(context: RunContext, { flow, node }: Located): Promise<string | null> {
  const edges = flow.edges.filter((e) => e.from === node.name);
  const prompted = edges.filter((e) => e.type === 'promptCondition');
  if (prompted.length > 0) {
    const allowStay = node.type === 'promptNode' && node.canStayOnNode === true;
    const choice = await context.deps
      .models(node.type === 'promptNode' ? node.llmConfig : undefined)
      .chooseCondition(modelContext(context), { conditions: prompted.map((e) => e.condition ?? ''), allowStay });
    if (choice === 'stay' && allowStay) return node.name;
    if (typeof choice === 'number' && prompted[choice]) return prompted[choice].to;
  }
  const forward = edges.filter((e) => e.type === 'stepForward');
  const scope = placeholderScope(context, node.name);
  const conditional = forward.find((e) => e.when !== undefined && holds(e.when, scope));
  if (conditional) return conditional.to;
  const fallback = forward.find((e: FlowEdge) => e.when === undefined);
  return fallback?.to ?? null;
}

/** A stepForward edge's `when`: numbers compare as numbers, anything else as text. */
export function holds(condition: EdgeCondition, scope: PlaceholderScope): boolean {
  const found = valueAtPath(condition.path, scope);
  const actual = found?.value;
  const exists = actual !== undefined && actual !== null;
  switch (condition.operator) {
    case 'exists':
      return exists;
    case 'notExists':
      return !exists;
    default:
      break;
  }
  if (!exists || condition.value === undefined) return condition.operator === 'notEquals';
  const left = Number(actual);
  const right = Number(condition.value);
  const numeric =
    typeof actual !== 'object' && typeof actual !== 'boolean' && String(actual).trim() !== '' && !Number.isNaN(left);
  const bothNumeric = numeric && String(condition.value).trim() !== '' && !Number.isNaN(right);
  const text = typeof actual === 'object' ? JSON.stringify(actual) : String(actual);
  switch (condition.operator) {
    case 'equals':
      return bothNumeric ? left === right : text === String(condition.value);
    case 'notEquals':
      return bothNumeric ? left !== right : text !== String(condition.value);
    case 'greaterThan':
      return bothNumeric ? left > right : text > String(condition.value);
    case 'lessThan':
      return bothNumeric ? left < right : text < String(condition.value);
  }
}

function placeholderScope(context: RunContext, nodeName: string): PlaceholderScope {
  const { session, definition, trigger } = context;
  const at = context.deps.clock.now();
  return {
    memory: session.memory,
    tools: session.outputs,
    env: definition.variables,
    system: {
      sessionId: session.sessionId,
      agentId: session.agentId,
      environment: session.environment,
      flowName: session.flowName,
      nodeName,
      triggerName: trigger.name,
      triggerType: trigger.triggerType,
      invocationId: context.invocation.invocationId,
      now: at.toISOString(),
      date: at.toISOString().slice(0, 10),
    },
  };
}

/** The model sees the agent's instructions and every system message (retrieved context) as its system text. */
function modelContext(context: RunContext) {
  const messages = context.session.messages;
  const system = [context.definition.instructions, ...messages.filter((m) => m.role === 'system').map((m) => m.content)]
    .filter((text): text is string => text !== undefined && text !== '')
    .join('\n\n');
  return {
    system: system === '' ? undefined : system,
    messages: messages
      .filter((m: SessionMessage) => m.role !== 'system')
      .map(({ role, content, attachments }: SessionMessage) => {
        const images = (attachments ?? []).flatMap((attachment) => context.images.get(attachment.id) ?? []);
        return images.length > 0 ? { role, content, images } : { role, content };
      }),
  };
}

function recordNode(context: RunContext, node: FlowNode, parameters: Record<string, unknown>): void {
  recordBuiltInEvent(
    context.deps.recorder,
    analyticsScope(context.session),
    'node_execution',
    {
      nodeName: node.name,
      nodeType: node.type,
      displayName: node.displayName ?? null,
      parameters: boundedValue(parameters, PAYLOAD_PART_MAX_BYTES),
    },
    { invocationId: context.invocation.invocationId, step: context.step },
  );
}

function analyticsScope(session: FlowSession) {
  return { agentId: session.agentId, environment: session.environment, sessionId: session.sessionId };
}

/**
 * An AppError keeps its code and message (cut to FAILURE_MESSAGE_MAX_CHARS: it may embed a caller's host or
 * value); anything else is an internal error whose text is not shown. The stack goes to `onFailure` only.
 */
function describeFailure(error: unknown): { code: string; message: string } {
  if (error instanceof AppError) {
    return { code: error.code, message: truncatedText(error.message, FAILURE_MESSAGE_MAX_CHARS) };
  }
  return { code: 'INTERNAL_ERROR', message: 'The flow failed with an internal error' };
}
