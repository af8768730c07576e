/**
 * What one invocation of a flow carries from node to node (RunContext), the runtime's dependencies and limits, and
 * the helpers every part of a run uses: the placeholder scope, the model context, the node records, the failure that
 * ends a run, and the lease that holds a session while it runs.
 *
 * Over 400 lines on purpose: these are the one vocabulary of a run that runtime.ts, session-claim.ts, run-endings.ts,
 * continue-run.ts, run-nodes.ts, run-tool.ts and scoped-tools.ts all share; split further, each would import from
 * several small files for the same handful of names.
 */

import {
  type AnalyticsRecorder,
  boundedValue,
  EventRecordingError,
  recordBuiltInEvent,
  truncatedText,
} from '#core/analytics/track';
import { AppError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import type { RetrievalDeps } from '#core/retrieval/retrieve';
import type {
  AgentCodeFunctions,
  BrowserDriver,
  DefinitionStore,
  FlowModelContext,
  FlowModelResolver,
  FlowRunQueue,
  McpClient,
  OutboundHttp,
  SessionStore,
} from '#ports/flows';
import { METRIC, NO_METRICS, type OperationalMetrics } from '#ports/metrics';
import type { ModelImage, ModelMessage, ModelProvider } from '#ports/model';
import type { Clock, IdGenerator } from '#ports/services';
import type { AgentStore } from '#ports/stores';
import type { AttachmentDeps, AttachmentInput } from './attachments';
import type { AgentDefinition, FlowDefinition, FlowNode, TriggerNode } from './definition';
import type { AgentDefinitionRecord } from './definition-record';
import type { PlaceholderScope } from './placeholders';
import {
  type AiMessage,
  type FlowSession,
  MAX_STORED_AI_MESSAGES,
  MAX_STORED_MESSAGES,
  type MessageAttachment,
  type RunStep,
  type SessionMessage,
} from './session';
import type { FlowWorkBudget } from './work-budget';

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
export const PAYLOAD_PART_MAX_BYTES = 8 * 1024;

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

/**
 * What a prompt node's model sees of the run so far (docs/flows.md, "What a prompt node sees"): the newest messages
 * and tool steps whose text fits in this many characters; the older ones are named in the system text by their node
 * and status only. About 6,000 tokens: room for the node's own prompt, tools and answer in any current model.
 */
export const TRANSCRIPT_MAX_CHARS = 24_000;

/** Of a tool step in the transcript, its parameters and its output are each kept up to this size (UTF-8 JSON). */
export const TOOL_STEP_PART_MAX_BYTES = 2 * 1024;

/** How much of the run a prompt node's model sees: its `context` (default `run`). */
export type TranscriptScope = 'run' | 'conversation' | 'none';

/**
 * How long a webhook or app event request may take in all: API Gateway's 29 s integration timeout, less a second to
 * store the session and answer. A node whose bound would end later is handed over before it starts.
 */
export const FLOW_REQUEST_LIMIT_MS = 28_000;

/** Of each browser_step event, the target, the value typed and the error are cut to this many characters. */
export const BROWSER_STEP_TEXT_MAX_CHARS = 1_000;

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
  /** The tools of MCP servers (docs/flows.md, "MCP tools"); without it, calling one fails with TOOL_FAILED. */
  readonly mcp?: McpClient;
  /** Agent code deployed as Lambda functions (docs/agent-code.md); absent: a definition naming one fails to call it. */
  readonly agentCodeFunctions?: AgentCodeFunctions;
  /** The agents' callback secrets, which sign AI-message callbacks (one is made at an agent's first if it has none). */
  readonly agents: Pick<AgentStore, 'get' | 'replaceCallbackSecrets'>;
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
  /**
   * The flow runner's queue, where a run that outlives its request's budget goes on, and an AI message whose delivery
   * failed is sent again (ai-message-retry.ts); absent: runs never hand over, and a failed delivery is not retried.
   */
  readonly runs?: FlowRunQueue;
  /** The waits between an AI message's delivery attempts (default AI_MESSAGE_RETRY_DELAYS_SECONDS). */
  readonly aiMessageRetryDelays?: readonly number[];
  /** The organizations' flow work budget (work-budget.ts): each node and browser second is counted; absent: none. */
  readonly work?: FlowWorkBudget;
  /** Runs, NodeFailures, ModelCalls, ToolCalls, BrowserSteps (ports/metrics.ts); none collected when absent. */
  readonly metrics?: OperationalMetrics;
  /** The session lease's length (default SESSION_LEASE_MS). */
  readonly leaseMs?: number;
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
}

/** A flow failed at run time; the session ends `failed` with this code. */
export class FlowError extends AppError {
  constructor(code: string, message: string) {
    super(422, code, message);
  }
}

export interface Located {
  readonly flow: FlowDefinition;
  readonly node: FlowNode;
}

export interface RunContext {
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
  /**
   * A node whose own bound (a slow tool) would end after this time is not started: the run is handed over first
   * (runtime.ts, outlivesDeadline). A request's: FLOW_REQUEST_LIMIT_MS after it started; a runner's: its deadline.
   */
  readonly boundedUntil: number | null;
  /** In the flow runner, the runner's id: the session is then stored after every node (a checkpoint). */
  readonly runner: string | null;
  readonly lease: SessionLease;
  /** Nodes already paid for from the flow work budget: the invocation's admission pays its first (work-budget.ts). */
  prepaidNodes: number;
  /** Set when the flow work budget refused the next node: the seconds until it has room, which the hand-over waits. */
  workWaitSeconds: number;
  /**
   * The tokens the model calls of the current node reported (its prompt, tool calls, parameters, routing), for its
   * `node_result`; null until one reports. Reset as each node starts (runtime.ts).
   */
  tokens?: { input: number; output: number } | null;
}

/**
 * The invocation's hold on its session: the version it last wrote, and the lease, renewed every third of its length
 * while a node runs by writing again the state last stored (never the state of a node in flight, so a node is stored
 * only once it completed). Writes go one after another. A write that finds another version means another invocation
 * took the session over after this one's lease ran out: the hold is lost and nothing more is written.
 */
export class SessionLease {
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

  /** A lease from now; `waitMs` more for a run that is handed over to wait (the flow work budget). */
  until(waitMs = 0): string {
    return new Date(this.deps.clock.now().getTime() + waitMs + this.ms).toISOString();
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

/** Ends the session `failed` with the error's code and a bounded message; records invocation_error without stack. */
export function fail(context: RunContext, error: unknown, step?: string): void {
  const { deps, session, invocation } = context;
  const failure = describeFailure(error);
  (deps.metrics ?? NO_METRICS).count(METRIC.nodeFailures, 1, { errorCode: failure.code });
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

export function now(context: RunContext): string {
  return context.deps.clock.now().toISOString();
}

export function locate(definition: AgentDefinition, name: string): Located | undefined {
  for (const flow of definition.flows) {
    const node = flow.nodes.find((n) => n.name === name);
    if (node) return { flow, node };
  }
  return undefined;
}

/** What `{tools.<node>.…}` reads: the output as it is up to NODE_OUTPUT_MAX_BYTES, else a truncated preview. */
export function setOutput(
  context: RunContext,
  node: FlowNode,
  output: unknown,
  maxBytes = NODE_OUTPUT_MAX_BYTES,
): void {
  context.session.outputs[node.name] = boundedValue(output, maxBytes);
}

export function placeholderScope(context: RunContext, nodeName: string): PlaceholderScope {
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

/**
 * What the model sees: the agent's instructions and every system message (retrieved context) as its system text,
 * and the run's transcript as messages: the user's messages, the AI messages, and (`run`, the default) each earlier
 * tool node's call and result as a `tool` message. Newest first within TRANSCRIPT_MAX_CHARS; the older entries are
 * listed in the system text by their node and status. `conversation` leaves tool steps out; `none` the transcript.
 */
export function modelContext(context: RunContext, scope: TranscriptScope = 'run'): FlowModelContext {
  const messages = context.session.messages;
  const systemTexts = [
    context.definition.instructions,
    ...messages.filter((m) => m.role === 'system').map((m) => m.content),
  ];
  const entries =
    scope === 'none' ? [] : messages.filter((m) => m.role !== 'system' && (scope === 'run' || m.role !== 'tool'));
  let used = 0;
  let first = entries.length;
  while (first > 0) {
    const size = entries[first - 1].content.length;
    // The newest entry is always seen, whatever its size (a user message is bounded where it is received).
    if (first < entries.length && used + size > TRANSCRIPT_MAX_CHARS) break;
    used += size;
    first -= 1;
  }
  if (first > 0) {
    const older = entries.slice(0, first).map((m) => {
      if (m.role === 'tool') return `${m.node ?? 'a tool node'} (tool ${m.tool?.name ?? '?'}, ok)`;
      if (m.role === 'assistant') return `${m.node ?? 'a prompt node'} (AI message)`;
      return 'a user message';
    });
    systemTexts.push(`Earlier in this conversation, not shown here: ${older.join('; ')}.`);
  }
  const system = systemTexts.filter((text): text is string => text !== undefined && text !== '').join('\n\n');
  return {
    system: system === '' ? undefined : system,
    onUsage: ({ inputTokens, outputTokens }) => {
      const tokens = context.tokens ?? { input: 0, output: 0 };
      tokens.input += inputTokens;
      tokens.output += outputTokens;
      context.tokens = tokens;
    },
    messages: entries.slice(first).map((m: SessionMessage, index): ModelMessage => {
      if (m.role === 'tool') {
        const call = {
          id: `tool_step_${first + index}`,
          name: m.tool?.name ?? 'tool',
          input: m.tool?.input ?? {},
        };
        return { role: 'tool', content: m.content, toolStep: { call, result: m.tool?.output ?? null } };
      }
      const images = (m.attachments ?? []).flatMap((attachment) => context.images.get(attachment.id) ?? []);
      return images.length > 0 ? { role: m.role, content: m.content, images } : { role: m.role, content: m.content };
    }),
  };
}

/**
 * A tool node's call and result, kept in the session's messages for the prompt nodes after it: parameters and
 * output each bounded to TOOL_STEP_PART_MAX_BYTES, and said in words for a model that reads only text.
 */
export function recordToolStep(
  context: RunContext,
  node: FlowNode,
  toolName: string,
  input: Record<string, unknown>,
  output: unknown,
): void {
  const tool = {
    name: toolName,
    input: boundedValue(input, TOOL_STEP_PART_MAX_BYTES),
    output: boundedValue(output, TOOL_STEP_PART_MAX_BYTES),
  };
  context.session.messages.push({
    role: 'tool',
    content: `Tool node ${node.name} called ${toolName} with ${JSON.stringify(tool.input)}; it answered ${JSON.stringify(tool.output)}`,
    node: node.name,
    tool,
    at: now(context),
  });
}

export function recordNode(context: RunContext, node: FlowNode, parameters: Record<string, unknown>): void {
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

/**
 * `node_result`: how a node ended, for its trace (docs/flows.md, "The trace"): succeeded, paused or failed, its run
 * time, its output as stored (bounded), the edge taken and why, and the error of the one that failed.
 */
export function recordNodeResult(
  context: RunContext,
  node: FlowNode,
  result: {
    readonly status: 'succeeded' | 'paused' | 'failed';
    readonly durationMs: number;
    /** Whether the node stored an output in this run (a failed node may have stored none). */
    readonly output: boolean;
    readonly edge?: { readonly to: string | null; readonly reason: string };
    readonly error?: unknown;
  },
): void {
  const tokens = context.tokens;
  recordBuiltInEvent(
    context.deps.recorder,
    analyticsScope(context.session),
    'node_result',
    {
      nodeName: node.name,
      nodeType: node.type,
      status: result.status,
      durationMs: result.durationMs,
      ...(tokens ? { tokens: { input: tokens.input, output: tokens.output } } : {}),
      ...(result.output ? { output: boundedValue(context.session.outputs[node.name], PAYLOAD_PART_MAX_BYTES) } : {}),
      ...(result.edge ? { edge: result.edge } : {}),
      ...(result.error === undefined ? {} : { error: describeFailure(result.error) }),
    },
    { invocationId: context.invocation.invocationId, step: context.step },
  );
}

export function analyticsScope(session: FlowSession) {
  return { agentId: session.agentId, environment: session.environment, sessionId: session.sessionId };
}

/**
 * An AppError keeps its code and message (cut to FAILURE_MESSAGE_MAX_CHARS: it may embed a caller's host or
 * value); anything else is an internal error whose text is not shown. The stack goes to `onFailure` only.
 */
export function describeFailure(error: unknown): { code: string; message: string } {
  if (error instanceof AppError) {
    return { code: error.code, message: truncatedText(error.message, FAILURE_MESSAGE_MAX_CHARS) };
  }
  return { code: 'INTERNAL_ERROR', message: 'The flow failed with an internal error' };
}

/** The metrics of a run (ports/metrics.ts), or none when the runtime was given no sink. */
export function metricsOf(context: RunContext): OperationalMetrics {
  return context.deps.metrics ?? NO_METRICS;
}
