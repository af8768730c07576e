/**
 * Ports of the flow runtime (lambdas/core/flows): the model behind prompt nodes, routing and tool parameters; the
 * browser behind browserTask nodes; outbound HTTP for HTTP tools and AI-message callbacks; and the stores of agent
 * definitions and sessions. Implementations live in lambdas/adapters.
 */
import { AppError } from '#core/errors';
import type { AgentDefinitionRecord, DefinitionVersionSummary } from '#core/flows/definition-record';
import type { LlmConfig } from '#core/flows/llm-config';
import type { ToolParameterSpec } from '#core/flows/parameters';
import type { FlowSession, SessionStatus } from '#core/flows/session';
import type { Environment } from '#core/knowledge/fields';
import type { ModelMessage, ModelToolCall, ModelToolRound, ModelUsage } from './model';

// ---------------------------------------------------------------------------------------------------------------
// The model of a flow

export { LLM_CLASS_NAMES, type LlmClassName, type LlmConfig } from '#core/flows/llm-config';
export type { ToolParameterSpec } from '#core/flows/parameters';

export interface FlowModelContext {
  /** System text: the agent's instructions and, after a trigger with default retrieval, the retrieved context. */
  readonly system?: string;
  /**
   * The session's conversation so far (user, assistant and system messages), oldest first. A user message carries
   * `images` when the user attached some, for the newest MODEL_CONTEXT_MAX_IMAGES of the conversation.
   */
  readonly messages: readonly ModelMessage[];
  /** Told the tokens of each model call made for this context, when the provider reports them (the node's trace). */
  readonly onUsage?: (usage: ModelUsage) => void;
}

/** What a tool node asks the model: values for the declared parameters the node does not fix. */
export interface ParameterInferenceRequest {
  readonly toolName: string;
  readonly hint?: string;
  readonly parameters: Readonly<Record<string, ToolParameterSpec>>;
  readonly missing: readonly string[];
  readonly memory: Readonly<Record<string, unknown>>;
}

/** A tool a prompt node lets the model call (its `tools`): a declared HTTP tool or a built-in one. */
export interface ScopedTool {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, ToolParameterSpec>>;
  /** setMemory takes any parameter; every other tool only the ones it declares. */
  readonly anyParameters: boolean;
  /** An MCP tool's own JSON schema: the model sees it as it is, and the arguments are checked against it. */
  readonly inputSchema?: Readonly<Record<string, unknown>>;
}

/** What a prompt node with scoped tools asks the model, once per model turn of the node's run. */
export interface ToolTurnRequest {
  /** The node's rendered prompt. */
  readonly prompt: string;
  readonly tools: readonly ScopedTool[];
  /** The calls the model asked for in this node run so far, each round with its results (oldest first). */
  readonly rounds: readonly ModelToolRound[];
  /** The session's memory (the offline model takes parameters from it; a language model reads the prompt). */
  readonly memory: Readonly<Record<string, unknown>>;
}

/** The model either answers (the node's AI message) or asks for one or more tool calls. */
export type ToolTurn =
  | { readonly answer: string }
  | { readonly calls: readonly ModelToolCall[]; readonly text?: string };

export interface FlowModel {
  /** `offline`, `openai-compatible:<model>`, `bedrock-converse:<model id>`: recorded on the session's messages. */
  readonly name: string;
  /** The AI message of a prompt node: `prompt` is the node's rendered instruction. */
  respond(context: FlowModelContext, prompt: string): Promise<string>;
  /**
   * Which `promptCondition` edge holds after the last message: the index into `conditions`, `'stay'` (only when
   * `allowStay`) to remain on the node, or null when none holds.
   */
  chooseCondition(
    context: FlowModelContext,
    request: { readonly conditions: readonly string[]; readonly allowStay: boolean },
  ): Promise<number | 'stay' | null>;
  /**
   * Values for the tool parameters named in `missing`, inferred from the conversation, `memory` and the node's hint.
   * Parameters it cannot infer are left out of the answer.
   */
  inferParameters(context: FlowModelContext, request: ParameterInferenceRequest): Promise<Record<string, unknown>>;
  /**
   * One model turn of a prompt node with scoped tools: its answer, or the calls it asks for. The runtime runs the
   * calls and asks again with their results in `rounds`, until the model answers or TOOL_CALL_LIMIT is reached.
   */
  respondWithTools(context: FlowModelContext, request: ToolTurnRequest): Promise<ToolTurn>;
  /**
   * The next action of a browser task, from the task, the page as it is now and the steps so far. An answer that is
   * no action is `{ action: 'invalid' }`: the step fails and the model is asked again (core/flows/browser-task.ts).
   */
  chooseBrowserAction(context: FlowModelContext, request: BrowserActionRequest): Promise<BrowserChoice>;
}

/** The model for a prompt node's `llmConfig` (undefined: the default model of the deployment). */
export type FlowModelResolver = (config: LlmConfig | undefined) => FlowModel;

// ---------------------------------------------------------------------------------------------------------------
// Browser tasks: the model operates a page, one action per step (core/flows/browser-task.ts)

export const BROWSER_ACTIONS = ['goto', 'click', 'type', 'select', 'press', 'scroll', 'extract', 'done'] as const;
export type BrowserActionName = (typeof BROWSER_ACTIONS)[number];

/** `target` is the `ref` of an element of the last observation. */
export type BrowserAction =
  | { readonly action: 'goto'; readonly url: string }
  | { readonly action: 'click'; readonly target: string }
  /** Replaces the field's text. */
  | { readonly action: 'type'; readonly target: string; readonly text: string }
  /** An option's value or its label. */
  | { readonly action: 'select'; readonly target: string; readonly value: string }
  /** A key (`Enter`, `Tab`, `ArrowDown`, `Control+A`) in the element, or in the page without `target`. */
  | { readonly action: 'press'; readonly key: string; readonly target?: string }
  | { readonly action: 'scroll'; readonly direction: 'up' | 'down' }
  /** Reads the element's text (the page's without `target`): the model gets it with the step. */
  | { readonly action: 'extract'; readonly target?: string }
  | { readonly action: 'done'; readonly answer: string };

/** A model answer that is no action: the step fails with BROWSER_ACTION_INVALID and `reason`. */
export interface InvalidBrowserAction {
  readonly action: 'invalid';
  readonly reason: string;
}
export type BrowserChoice = BrowserAction | InvalidBrowserAction;

/** An element a step may act on: from the page's accessibility tree. */
export interface BrowserElement {
  /** What `target` names; the same element keeps its ref while the page is the same. */
  readonly ref: string;
  readonly role: string;
  /** The accessible name (a label, the button's text). */
  readonly name: string;
  /** A text field's text. */
  readonly value?: string;
  readonly checked?: boolean | 'mixed';
  readonly disabled?: boolean;
  /** The options of a select (their labels), and the selected one. */
  readonly options?: readonly string[];
  readonly selected?: string;
  /** A link's href. */
  readonly url?: string;
}

/** The page as the model sees it before each step, within the budgets of core/flows/browser-task.ts. */
export interface BrowserObservation {
  readonly url: string;
  readonly title: string;
  readonly elements: readonly BrowserElement[];
  /** The visible text, whitespace collapsed. */
  readonly text: string;
  /** Elements or text were left out to stay within the budget. */
  readonly cut: boolean;
}

export interface BrowserStepError {
  readonly code: string;
  readonly message: string;
}

/** A step as the model is told about it on the next ones. */
export interface BrowserHistoryEntry {
  readonly choice: BrowserChoice;
  readonly ok: boolean;
  readonly error?: BrowserStepError;
  /** What `extract` read. */
  readonly extracted?: string;
  /** The page's URL after the step. */
  readonly url: string;
}

export interface BrowserActionRequest {
  /** The node's rendered prompt. */
  readonly task: string;
  readonly observation: BrowserObservation;
  /** The steps of this task so far, oldest first. */
  readonly history: readonly BrowserHistoryEntry[];
  /** Steps the task may still take, this one included. */
  readonly stepsLeft: number;
}

/** One step as the node's output and its `browser_step` event keep it. */
export interface BrowserStep {
  readonly action: BrowserActionName | 'invalid';
  /** The element (`textbox "Name" [ref=e6]`), URL, key or direction the step acted on; null for none. */
  readonly target: string | null;
  readonly ok: boolean;
  readonly error?: BrowserStepError;
  /** The text typed, the option selected (events only, not the node's output). */
  readonly value?: string;
  /** The page's URL after the step. */
  readonly url: string;
  readonly durationMs: number;
}

/** The page of a running task, as the driver gives it to the task loop. */
export interface BrowserPage {
  observe(): Promise<BrowserObservation>;
  /**
   * Does the action (never `done`) by `deadline` (epoch ms). Resolves with what it acted on and, for `extract`, the
   * text read; rejects with an AppError whose code and message become the failed step's error.
   */
  perform(action: Exclude<BrowserAction, { action: 'done' }>, deadline: number): Promise<BrowserActionOutcome>;
  /** The page now: its URL, the status of its main document, its title and visible text (at most 20,000 characters). */
  state(): Promise<BrowserPageState>;
}

export interface BrowserActionOutcome {
  readonly target: string | null;
  readonly extracted?: string;
}

export interface BrowserPageState {
  /** The page's final URL, after redirects. */
  readonly url: string;
  /** HTTP status of the main document, null when the browser did not report one. */
  readonly status: number | null;
  readonly title: string;
  /** The page's visible text, whitespace collapsed, at most 20,000 characters. */
  readonly text: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Outbound network: browser tasks, HTTP tools, AI-message callbacks

export interface BrowserTaskRequest {
  /** The node's rendered prompt; the driver opens the first http(s) URL in it unless `url` is given. */
  readonly prompt: string;
  readonly url?: string;
  /** The node's `model` property: a model of the deployment's default class, or a class name; absent: the default. */
  readonly model?: string;
  /** The agent's instructions and the conversation, as the flow's other nodes give them to their model. */
  readonly context?: FlowModelContext;
}

/** The node's output (`steps` without their `value`, `url` and `durationMs`) and what its events record. */
export interface BrowserTaskResult extends BrowserPageState {
  /** What the model answered with `done`; null when the task stopped before. */
  readonly answer: string | null;
  readonly steps: readonly BrowserStep[];
  /**
   * Why the task stopped before `done` once the page was open (BROWSER_STEP_LIMIT, a model's error): the node fails
   * with it, its output keeps what the task did.
   */
  readonly failure?: BrowserStepError;
}

export interface BrowserDriver {
  readonly name: string;
  /**
   * Opens the page and lets the task's model operate it. Rejects before any step with an AppError: OutboundError
   * (TARGET_REFUSED, BROWSER_UNAVAILABLE, BROWSER_FAILED) or the model's (MODEL_NOT_CONFIGURED).
   */
  run(request: BrowserTaskRequest): Promise<BrowserTaskResult>;
  close(): Promise<void>;
}

export interface OutboundRequest {
  readonly url: string;
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as JSON. */
  readonly body?: unknown;
  /**
   * A JSON text sent byte for byte instead of `body`: what a signature was computed over (a signed AI-message
   * callback, core/flows/callback-delivery.ts), so no second serialization may differ from it.
   */
  readonly serializedBody?: string;
  readonly timeoutMs?: number;
  /** Answer with the response's headers too (an MCP client reads the content type and the session id). */
  readonly answerHeaders?: boolean;
}

export interface OutboundResponse {
  readonly status: number;
  /** Parsed JSON when the answer is JSON, else its text (at most 1 MB is read). */
  readonly body: unknown;
  /** With `answerHeaders`: the answer's headers, names in lower case (one sent twice: its values joined by ", "). */
  readonly headers?: Readonly<Record<string, string>>;
  /** A text answer was longer than what is read (a JSON one that is fails instead). */
  readonly truncated?: boolean;
}

export interface OutboundHttp {
  /**
   * One JSON request to a public target. Rejects with OutboundError: TARGET_REFUSED for a private, loopback or
   * link-local target (unless the deployment allows them), OUTBOUND_FAILED when it cannot be reached or times out.
   * A non-2xx answer resolves; the caller decides.
   */
  request(request: OutboundRequest): Promise<OutboundResponse>;
}

/**
 * An agent's code deployed as an AWS Lambda function in the customer's account (docs/agent-code.md): invoked
 * synchronously with a function URL event that carries the signed request (its headers and exact body), so the SDK's
 * `lambda` handler verifies it as it would over HTTP. The function's `{ statusCode, body }` is the answer. Rejects
 * with OutboundError OUTBOUND_FAILED when the function cannot be invoked, fails, or does not answer in time ("timed
 * out" in its message).
 */
export interface AgentCodeFunctions {
  /**
   * The local runtime's AGENT_CODE module (adapters/agent-code/module-functions.ts): it is the agent's code whatever
   * the definition names, so calls to an `agentCode.url` come here too.
   */
  readonly servesEveryTarget?: boolean;
  invoke(request: {
    /** The agent whose code it is (the local runtime's module is built with its secrets). */
    readonly organizationId: string;
    readonly agentId: string;
    /** The function's ARN (or, to a module that serves every target, the definition's URL). */
    readonly functionArn: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly body: string;
    readonly timeoutMs: number;
  }): Promise<OutboundResponse>;
}

/** An MCP server as a call of one of its tools reaches it (core/flows/mcp-tools.ts, adapters/network/mcp-client.ts). */
export interface McpServerTarget {
  readonly url: string;
  /** The name of a secret the deployment holds (MCP_SECRETS): its value goes as the bearer token, to its origin only. */
  readonly bearerSecret?: string;
  /** Whose definition names the server: a secret may be held for some organizations only. */
  readonly organizationId: string;
  /** For the whole exchange: initialize, listing or call, each answer read. */
  readonly timeoutMs: number;
}

/** A tool as the server lists it (`tools/list`). */
export interface McpToolInfo {
  readonly name: string;
  readonly description?: string;
  /** A JSON schema of an object: the tool's arguments. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
}

/** A `tools/call` result: the tool's content blocks, its structured content, and whether it failed. */
export interface McpCallResult {
  readonly content: readonly unknown[];
  readonly structuredContent?: Readonly<Record<string, unknown>>;
  readonly isError: boolean;
}

/**
 * A client of MCP servers over Streamable HTTP, every request through the outbound guard. Rejects with OutboundError
 * (TARGET_REFUSED, OUTBOUND_FAILED: unreachable, timed out, an answer over 1 MiB) or McpError (the server answered an
 * error, or no MCP answer; the secret cannot be used).
 */
export interface McpClient {
  listTools(target: McpServerTarget): Promise<McpToolInfo[]>;
  callTool(target: McpServerTarget, name: string, args: Readonly<Record<string, unknown>>): Promise<McpCallResult>;
}

/** An MCP server's failure (TOOL_FAILED) or a bearer secret it cannot be given (MCP_SECRET_UNAVAILABLE). */
export class McpError extends AppError {
  constructor(code: 'TOOL_FAILED' | 'MCP_SECRET_UNAVAILABLE', message: string) {
    super(502, code, message);
  }
}

export type OutboundErrorCode = 'TARGET_REFUSED' | 'OUTBOUND_FAILED' | 'BROWSER_UNAVAILABLE' | 'BROWSER_FAILED';

/** A node's outbound call failed; the session fails with this code (never echoed with internal addresses). */
export class OutboundError extends AppError {
  /** No answer came within the call's time limit (the caller may tell a timeout from other failures by it). */
  readonly timedOut: boolean;

  constructor(code: OutboundErrorCode, message: string, options: { readonly timedOut?: boolean } = {}) {
    super(code === 'TARGET_REFUSED' ? 400 : 502, code, message);
    this.timedOut = options.timedOut === true;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Stores of definitions and sessions

/**
 * The environment's current definition (what the runtime reads, one item) and its history: the versions it replaced,
 * each kept whole (core/flows/definition-versions.ts).
 */
export interface DefinitionStore {
  /** The current definition. */
  get(agentId: string, environment: Environment): Promise<AgentDefinitionRecord | undefined>;
  /** Replaces the current definition as it is, keeping no history (a direct write: tests, repairs). */
  put(record: AgentDefinitionRecord): Promise<void>;
  /**
   * Stores `record` as the current definition only while the current one is still `previous` (by its version; none
   * when undefined), keeps `previous` in the history and forgets the history's version `forget`, all in one write.
   * False when another write moved the current definition first (nothing written).
   */
  saveVersion(
    record: AgentDefinitionRecord,
    previous: AgentDefinitionRecord | undefined,
    forget?: number,
  ): Promise<boolean>;
  /** A version of the history (never the current one); undefined when it is not kept. */
  getVersion(agentId: string, environment: Environment, version: number): Promise<AgentDefinitionRecord | undefined>;
  /**
   * The history's versions below `before`, newest first, at most `limit` (0 allowed); `more` when older ones
   * follow.
   */
  listVersions(
    agentId: string,
    environment: Environment,
    page: { readonly limit: number; readonly before: number },
  ): Promise<{ versions: DefinitionVersionSummary[]; more: boolean }>;
  /** Definitions that hold at least one schedule trigger, across all agents (for the scheduler's tick). */
  listScheduled(): Promise<AgentDefinitionRecord[]>;
  /**
   * Removes the definition of the environment and its history (the deletion of its agent); nothing to remove is not
   * an error.
   */
  delete(agentId: string, environment: Environment): Promise<void>;
}

/**
 * The session's state (memory, node outputs, messages) does not fit the store even with the oldest messages
 * dropped. Nothing was written; the runtime ends the invocation `failed` with this code.
 */
export class SessionTooLargeError extends AppError {
  constructor(readonly limitBytes: number) {
    super(
      413,
      'SESSION_TOO_LARGE',
      `The session's state (memory and node outputs) would exceed ${limitBytes} bytes; the invocation's changes were not kept`,
    );
  }
}

export interface SessionStore {
  get(agentId: string, environment: Environment, sessionId: string): Promise<FlowSession | undefined>;
  /** Removes up to `limit` sessions of the agent in the environment (the deletion of its agent); how many it removed. */
  deleteSome(agentId: string, environment: Environment, limit: number): Promise<number>;
  /** Stores a new session; false (nothing written) when the id is taken. Rejects with SessionTooLargeError. */
  create(session: FlowSession): Promise<boolean>;
  /**
   * Replaces the session only while its stored `version` is `expectedVersion`; false when another write won.
   * Rejects with SessionTooLargeError when its state does not fit (nothing written).
   */
  save(session: FlowSession, expectedVersion: number): Promise<boolean>;
  /**
   * Sessions of an agent in an environment, newest first (by `createdAt`, then id), with `status` when given, created
   * before the position `before` when given. Reads at most SESSION_LIST_SCAN sessions a call: `next` is where the next
   * call goes on (null: no more), and a page with a rare status can hold fewer than `limit`.
   */
  list(
    agentId: string,
    environment: Environment,
    options: { readonly limit: number; readonly status?: SessionStatus; readonly before?: string },
  ): Promise<{ sessions: SessionSummary[]; next: string | null }>;
}

/** What a list of sessions shows of each. */
export type SessionSummary = Pick<
  FlowSession,
  'sessionId' | 'status' | 'flowName' | 'currentNode' | 'trigger' | 'createdAt' | 'updatedAt'
>;

/** Sessions a list reads at most in one call (a position to go on from is answered past it). */
export const SESSION_LIST_SCAN = 1000;

/** A session's position in the list: `<createdAt>#<sessionId>`. */
export function sessionPosition(session: Pick<FlowSession, 'createdAt' | 'sessionId'>): string {
  return `${session.createdAt}#${session.sessionId}`;
}

// ---------------------------------------------------------------------------------------------------------------
// The queue of the flow runner

/**
 * A run handed over to the flow runner (docs/flows.md, "Long runs"): the session holds where it goes on, so the
 * message names only the session and the invocation. Delivered at least once; the runner does nothing for a
 * message whose invocation is not (or no longer) the session's handed-over run.
 */
export interface ContinueRunMessage {
  readonly kind: 'continue-run';
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId: string;
  readonly invocationId: string;
}

/**
 * One fire of a schedule trigger, sent by the schedule tick (core/flows/scheduler.ts): the trigger and the minute it
 * fired. The runner derives the fire's session from them (core/flows/schedule-fire.ts), so a fire delivered twice,
 * or sent by two ticks, runs once.
 */
export interface ScheduleFireMessage {
  readonly kind: 'schedule-fire';
  readonly agentId: string;
  readonly environment: Environment;
  /** The schedule trigger's node name. */
  readonly trigger: string;
  /** The fire time (ISO 8601, UTC), a whole minute. */
  readonly scheduledAt: string;
}

/** Where a signed callback goes: a URL (POSTed), or the agent's code as a Lambda function (invoked). */
export type CallbackTarget = { readonly url: string } | { readonly functionArn: string };

/**
 * One more attempt at an AI message whose delivery failed (core/flows/ai-message-retry.ts): the signed payload as it
 * was sent, its `webhook-id` and target, and which attempt this is (2 for the first retry).
 */
export interface AiMessageDeliveryMessage {
  readonly kind: 'deliver-ai-message';
  readonly organizationId: string;
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId: string;
  readonly invocationId: string;
  /** The prompt node that produced the message. */
  readonly node: string;
  readonly messageId: string;
  readonly target: CallbackTarget;
  /** The target is the agent's code (a failure is AGENT_CODE_FAILED / _TIMEOUT), not a callbackUrl (CALLBACK_FAILED). */
  readonly agentCode: boolean;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly attempt: number;
}

/** What the flow runner's queue carries. */
export type FlowRunMessage = ContinueRunMessage | ScheduleFireMessage | AiMessageDeliveryMessage;

/** The longest a message can wait before it is delivered: SQS's DelaySeconds allows 0 to 900. */
export const MAX_RUN_DELAY_SECONDS = 900;

export interface FlowRunQueue {
  /**
   * `delaySeconds` (at most MAX_RUN_DELAY_SECONDS): no runner receives the message before; a run the flow work budget
   * stopped waits for its window to end (core/flows/work-budget.ts).
   */
  send(message: FlowRunMessage, options?: { readonly delaySeconds?: number }): Promise<void>;
}

/**
 * What the schedule tick has sent of each schedule trigger (core/flows/scheduler.ts): the latest fire time whose
 * message went out, by trigger (`<agentId>#<environment>#<trigger>`). Fires up to it are not sent again.
 */
export interface ScheduleFireLog {
  /** The latest fire time sent (epoch ms), or null when none is known (never, or forgotten after a day). */
  sentThrough(trigger: string): Promise<number | null>;
  /** Every fire of the trigger up to `atMs` was sent. Never moves back: an earlier time than the stored one is kept. */
  markSent(trigger: string, atMs: number): Promise<void>;
}
