/**
 * The flow runtime: one invocation of an agent. Primary course: a trigger (webhook, app event or schedule) starts a
 * session, or a message resumes one; TRIGGER_EVENT is recorded as `invocation_start` and default retrieval injects
 * its context as a system message; then nodes run one after another, each recorded as `node_execution`, following
 * edges (promptCondition edges decided by the model, stepForward edges by their `when`), jumping across flows, until
 * the flow ends or a humanInTheLoop node pauses it. A failure ends the session `failed` with its code and is recorded
 * as `invocation_error` (its message bounded, its stack only in the service log). The session is written back
 * guarded by its version, so two invocations never interleave; a state too large to store ends it `failed` with
 * SESSION_TOO_LARGE instead of leaving it `running`. Whatever happens, the recorded events are flushed.
 */
import type {
  BrowserDriver,
  DefinitionStore,
  FlowModel,
  FlowModelResolver,
  OutboundHttp,
  SessionStore,
  ToolParameterSpec,
} from '../../ports/flows';
import { SessionTooLargeError } from '../../ports/flows';
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
import {
  type AgentDefinition,
  type EdgeCondition,
  type FlowDefinition,
  type FlowEdge,
  type FlowNode,
  nodesOf,
  type PromptNode,
  type ToolNode,
  type TriggerNode,
} from './definition';
import type { AgentDefinitionRecord } from './definition-record';
import { type PlaceholderScope, renderText, renderValue, valueAtPath } from './placeholders';
import {
  type AiMessage,
  type FlowSession,
  MAX_STORED_AI_MESSAGES,
  MAX_STORED_MESSAGES,
  type SessionMessage,
} from './session';

/** The spec's event names, for agent code and handlers. */
export const AgentEvents = {
  AI_MESSAGE: 'AgentEvents.AI_MESSAGE',
  TRIGGER_EVENT: 'TRIGGER_EVENT',
  ANALYTICS_EVENT: 'ANALYTICS_EVENT',
} as const;

/** Node runs per invocation; a flow that loops longer (a canStayOnNode without a human, say) fails. */
export const MAX_STEPS_PER_INVOCATION = 50;
/** How long an invocation holds its session; one that crashed is taken over after this. */
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
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Told every failed invocation with its error, stack included: the service log (analytics never get a stack). */
  readonly onFailure?: (failure: InvocationFailure, error: unknown) => void;
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
}

export async function invoke(deps: FlowRuntimeDeps, invocation: Invocation): Promise<InvocationResult> {
  const record = await deps.definitions.get(invocation.agentId, invocation.environment);
  if (!record) {
    throw new NotFoundError(
      'DEFINITION_NOT_FOUND',
      `Agent ${invocation.agentId} has no definition in ${invocation.environment}`,
    );
  }
  const trigger = findTrigger(record.definition, invocation.trigger);
  const now = deps.clock.now();
  const claim = await claimSession(deps, record, invocation, trigger, now);
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

/** Runs the claimed session to its end, pause or failure and writes it back, releasing the lease. */
async function run(context: RunContext, claim: Claim): Promise<void> {
  const { deps, session, invocation, trigger } = context;
  const resumeAt = session.status === 'paused' && session.currentNode ? session.currentNode : null;
  session.status = 'running';
  session.error = null;
  try {
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
        resumedNode: resumeAt,
      },
      { invocationId: invocation.invocationId },
    );
    if (claim.refused) throw claim.refused;
    await afterTriggerEvent(context);
    if (resumeAt) await execute(context, { node: resumeAt, phase: 'route' });
    else await execute(context, { node: trigger.name, phase: 'run' });
  } catch (error) {
    fail(context, error);
  }

  session.leaseUntil = null;
  session.updatedAt = deps.clock.now().toISOString();
  session.messages = session.messages.slice(-MAX_STORED_MESSAGES);
  session.aiMessages = session.aiMessages.slice(-MAX_STORED_AI_MESSAGES);
  session.version = claim.version + 1;
  let saved: boolean;
  try {
    saved = await deps.sessions.save(session, claim.version);
  } catch (error) {
    if (!(error instanceof SessionTooLargeError)) throw error;
    saved = await saveWithoutChanges(context, claim.version, error);
  }
  if (!saved) {
    throw new ConflictError('SESSION_BUSY', `Session ${session.sessionId} was changed by another invocation`);
  }
}

/**
 * The state grew too large to store: the session ends `failed` with SESSION_TOO_LARGE and the state as the claim
 * wrote it (this invocation's memory, outputs and messages are dropped), so the lease is released and the next
 * invocation is not refused. False when another invocation has taken the session over meanwhile.
 */
async function saveWithoutChanges(context: RunContext, version: number, error: SessionTooLargeError): Promise<boolean> {
  const { deps, session } = context;
  const stored = await deps.sessions.get(session.agentId, session.environment, session.sessionId);
  if (!stored || stored.version !== version) return false;
  // A run that had already failed recorded its own invocation_error; this one is the state's, under its own key.
  fail(context, error, session.status === 'failed' ? 'state' : undefined);
  session.memory = stored.memory;
  session.messages = stored.messages;
  session.outputs = stored.outputs;
  session.aiMessages = stored.aiMessages;
  context.produced.length = 0;
  return deps.sessions.save(session, version);
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
    const session = withInput(blank, invocation, at);
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
  const taken: FlowSession = {
    ...existing,
    // A session that crashed while running starts over from the trigger, keeping its memory and messages.
    status: existing.status === 'running' ? 'completed' : existing.status,
    trigger: triggerInfo,
    invocations: existing.invocations + 1,
    leaseUntil,
    updatedAt: at,
  };
  const session = withInput(taken, invocation, at);
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

/** The trigger's payload goes into memory (shallow merge); its message into the conversation. A new object. */
function withInput(session: FlowSession, invocation: Invocation, at: string): FlowSession {
  const message = invocation.message !== undefined && invocation.message !== '';
  return {
    ...session,
    memory: { ...session.memory, ...invocation.body },
    messages: message
      ? [...session.messages, { role: 'user', content: invocation.message ?? '', at }]
      : [...session.messages],
  };
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

type Position = { readonly node: string; readonly phase: 'run' | 'route' };

async function execute(context: RunContext, start: Position): Promise<void> {
  const { session, definition } = context;
  let position: Position | null = start;
  while (position) {
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
      if (outcome === 'pause') {
        session.status = 'paused';
        return;
      }
      if (typeof outcome === 'object') {
        position = { node: outcome.jumpTo, phase: 'run' };
        continue;
      }
    }
    const next = await route(context, located);
    position = next === null ? null : { node: next, phase: 'run' };
  }
  session.status = 'completed';
  session.currentNode = null;
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
    case 'browserTask': {
      const scope = placeholderScope(context, node.name);
      const prompt = renderText(node.prompt, scope);
      const url = node.url === undefined ? undefined : renderText(node.url, scope);
      recordNode(context, node, { prompt, ...(url === undefined ? {} : { url }), model: node.model ?? null });
      const result = await context.deps.browser.run({ prompt, url, model: node.model });
      setOutput(context, node, result);
      return 'next';
    }
  }
}

async function runPrompt(context: RunContext, node: PromptNode): Promise<'next' | 'pause'> {
  const { session, deps } = context;
  const prompt = renderText(node.prompt, placeholderScope(context, node.name));
  const model = deps.models(node.llmConfig);
  recordNode(context, node, { prompt, model: model.name, llmConfig: node.llmConfig ?? null });
  const text = await model.respond(modelContext(context), prompt);
  const at = now(context);
  session.messages.push({ role: 'assistant', content: text, node: node.name, at });
  setOutput(context, node, { response: text });
  if (node.sendAiMessage) await emitAiMessage(context, node, text, model, at);
  return node.humanInTheLoop ? 'pause' : 'next';
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

const BUILT_IN_PARAMETERS: Record<string, Record<string, ToolParameterSpec>> = {
  setMemory: {},
  trackAnalyticsEvent: {
    eventName: { type: 'string', required: true, description: 'name of the custom analytics event' },
    payload: { type: 'object', description: 'event data' },
  },
};

async function runTool(context: RunContext, node: ToolNode): Promise<void> {
  const { session, deps, definition } = context;
  const declared = definition.tools.find((t) => t.name === node.toolName);
  const builtIn = BUILT_IN_PARAMETERS[node.toolName];
  if (!declared && !builtIn) {
    throw new FlowError('TOOL_NOT_FOUND', `Tool ${node.toolName} is not registered for this agent`);
  }
  const specs = declared?.parameters ?? builtIn;
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
  const absent = Object.entries(specs)
    .filter(([key, spec]) => spec.required && parameters[key] === undefined)
    .map(([key]) => key);
  if (absent.length > 0) {
    throw new FlowError(
      'TOOL_PARAMETERS_MISSING',
      `Tool ${node.toolName} needs ${absent.join(', ')}: neither fixed by node ${node.name} nor inferred`,
    );
  }

  let output: unknown;
  if (node.toolName === 'setMemory') {
    session.memory = { ...session.memory, ...parameters };
    output = parameters;
  } else if (node.toolName === 'trackAnalyticsEvent') {
    const { eventName, payload } = parameters;
    if (typeof eventName !== 'string' || (payload !== undefined && (typeof payload !== 'object' || payload === null))) {
      throw new FlowError('TOOL_FAILED', 'trackAnalyticsEvent needs eventName (string) and payload (object)');
    }
    const eventKey = `${context.invocation.invocationId}:${AgentEvents.ANALYTICS_EVENT}:${context.step}`;
    const data = (payload ?? {}) as Record<string, unknown>;
    try {
      trackAnalyticsEvent(deps.recorder, analyticsScope(session), eventName, data, { eventKey });
    } catch (error) {
      // The flow's event breaks a rule: the node failed, not the request that started the flow.
      if (error instanceof ValidationError) throw new FlowError('TOOL_FAILED', `trackAnalyticsEvent: ${error.message}`);
      throw error;
    }
    output = { eventName, recorded: true };
  } else if (declared) {
    const response = await deps.http.request({
      url: declared.url,
      method: declared.method,
      headers: declared.headers,
      body: parameters,
    });
    if (response.status < 200 || response.status >= 300) {
      throw new FlowError('TOOL_FAILED', `Tool ${node.toolName} answered HTTP ${response.status}`);
    }
    output = response.body;
  }
  setOutput(
    context,
    node,
    output !== null && typeof output === 'object' && !Array.isArray(output) ? output : { result: output ?? null },
  );
}

/** What `{tools.<node>.…}` reads: the output as it is up to NODE_OUTPUT_MAX_BYTES, else a truncated preview. */
function setOutput(context: RunContext, node: FlowNode, output: unknown): void {
  context.session.outputs[node.name] = boundedValue(output, NODE_OUTPUT_MAX_BYTES);
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
      .map(({ role, content }: SessionMessage) => ({ role, content })),
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
