/**
 * Ports of the flow runtime (lambdas/core/flows): the model behind prompt nodes, routing and tool parameters; the
 * browser behind browserTask nodes; outbound HTTP for HTTP tools and AI-message callbacks; and the stores of agent
 * definitions and sessions. Implementations live in lambdas/adapters.
 */
import { AppError } from '../core/errors';
import type { AgentDefinitionRecord } from '../core/flows/definition-record';
import type { FlowSession } from '../core/flows/session';
import type { Environment } from '../core/knowledge/fields';
import type { ModelMessage } from './model';

// ---------------------------------------------------------------------------------------------------------------
// The model of a flow

/** A prompt node's `llmConfig`: one of three chat-model classes and its optional properties (docs/flows.md). */
export const LLM_CLASS_NAMES = ['ChatBedrockConverse', 'ChatOpenAICompatible', 'ChatOffline'] as const;
export type LlmClassName = (typeof LLM_CLASS_NAMES)[number];

export interface LlmConfig {
  readonly name: LlmClassName;
  readonly properties?: {
    /** Model id (Bedrock model or inference profile id; the OpenAI-compatible server's model name). */
    readonly model?: string;
    readonly temperature?: number;
    readonly maxTokens?: number;
  };
}

/** A parameter a tool declares; the model infers the ones a tool node does not fix. */
export interface ToolParameterSpec {
  readonly type: 'string' | 'number' | 'boolean' | 'object' | 'array';
  readonly description?: string;
  readonly required?: boolean;
}

export interface FlowModelContext {
  /** System text: the agent's instructions and, after a trigger with default retrieval, the retrieved context. */
  readonly system?: string;
  /** The session's conversation so far (user, assistant and system messages), oldest first. */
  readonly messages: readonly ModelMessage[];
}

/** What a tool node asks the model: values for the declared parameters the node does not fix. */
export interface ParameterInferenceRequest {
  readonly toolName: string;
  readonly hint?: string;
  readonly parameters: Readonly<Record<string, ToolParameterSpec>>;
  readonly missing: readonly string[];
  readonly memory: Readonly<Record<string, unknown>>;
}

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
}

/** The model for a prompt node's `llmConfig` (undefined: the default model of the deployment). */
export type FlowModelResolver = (config: LlmConfig | undefined) => FlowModel;

// ---------------------------------------------------------------------------------------------------------------
// Outbound network: browser tasks, HTTP tools, AI-message callbacks

export interface BrowserTaskRequest {
  /** The node's rendered prompt; the driver opens the first http(s) URL in it unless `url` is given. */
  readonly prompt: string;
  readonly url?: string;
  /** The node's model choice (`model` property); drivers without a model ignore it. */
  readonly model?: string;
}

export interface BrowserTaskResult {
  /** The page's final URL, after redirects. */
  readonly url: string;
  /** HTTP status of the main document, null when the browser did not report one. */
  readonly status: number | null;
  readonly title: string;
  /** The page's visible text, whitespace collapsed, at most 20,000 characters. */
  readonly text: string;
}

export interface BrowserDriver {
  readonly name: string;
  /** Rejects with OutboundError (TARGET_REFUSED, BROWSER_UNAVAILABLE, BROWSER_FAILED). */
  run(request: BrowserTaskRequest): Promise<BrowserTaskResult>;
  close(): Promise<void>;
}

export interface OutboundRequest {
  readonly url: string;
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as JSON. */
  readonly body?: unknown;
  readonly timeoutMs?: number;
}

export interface OutboundResponse {
  readonly status: number;
  /** Parsed JSON when the answer is JSON, else its text (at most 1 MB is read). */
  readonly body: unknown;
}

export interface OutboundHttp {
  /**
   * One JSON request to a public target. Rejects with OutboundError: TARGET_REFUSED for a private, loopback or
   * link-local target (unless the deployment allows them), OUTBOUND_FAILED when it cannot be reached or times out.
   * A non-2xx answer resolves; the caller decides.
   */
  request(request: OutboundRequest): Promise<OutboundResponse>;
}

export type OutboundErrorCode = 'TARGET_REFUSED' | 'OUTBOUND_FAILED' | 'BROWSER_UNAVAILABLE' | 'BROWSER_FAILED';

/** A node's outbound call failed; the session fails with this code (never echoed with internal addresses). */
export class OutboundError extends AppError {
  constructor(code: OutboundErrorCode, message: string) {
    super(code === 'TARGET_REFUSED' ? 400 : 502, code, message);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Stores of definitions and sessions

export interface DefinitionStore {
  get(agentId: string, environment: Environment): Promise<AgentDefinitionRecord | undefined>;
  /** Replaces the definition of the environment. */
  put(record: AgentDefinitionRecord): Promise<void>;
  /** Definitions that hold at least one schedule trigger, across all agents (for the scheduler's tick). */
  listScheduled(): Promise<AgentDefinitionRecord[]>;
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
  /** Stores a new session; false (nothing written) when the id is taken. Rejects with SessionTooLargeError. */
  create(session: FlowSession): Promise<boolean>;
  /**
   * Replaces the session only while its stored `version` is `expectedVersion`; false when another write won.
   * Rejects with SessionTooLargeError when its state does not fit (nothing written).
   */
  save(session: FlowSession, expectedVersion: number): Promise<boolean>;
}
