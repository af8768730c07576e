/**
 * A session: one conversation of an agent in one environment. It holds `memory`, `messages` and the outputs of the
 * nodes it ran, where it stands (`currentNode` while paused for a human), and the AI messages it produced. Every
 * invocation (a trigger call, a resume) reads it, runs, and writes it back guarded by `version`.
 */

import type { Environment } from '#core/knowledge/fields';
import type { ImageMediaType } from '#ports/model';

export const SESSION_STATUSES = ['running', 'paused', 'completed', 'failed'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/** Stored messages are capped (oldest dropped) so a session stays far below DynamoDB's 400 KB item limit. */
export const MAX_STORED_MESSAGES = 50;
export const MAX_STORED_AI_MESSAGES = 50;

export interface SessionMessage {
  /** `tool`: a tool node's call and its result, for the prompt nodes after it (docs/flows.md, "What a prompt node sees"). */
  readonly role: 'user' | 'assistant' | 'system' | 'tool';
  readonly content: string;
  /** The node that produced an assistant or tool message. */
  readonly node?: string;
  /** Role `tool`: the tool called, its parameters and its output (each bounded to TOOL_STEP_PART_MAX_BYTES). */
  readonly tool?: { readonly name: string; readonly input: unknown; readonly output: unknown };
  /** Images the user attached to this message: references only, the bytes are in the documents bucket. */
  readonly attachments?: readonly MessageAttachment[];
  readonly at: string;
}

/**
 * An image of a user message by reference (core/flows/attachments.ts): its bytes are the object
 * `attachments/<agentId>/<environment>/<sessionId>/<id>` of the documents bucket, never part of the session item,
 * whose size is bounded. `source` says how it came (inline `data` or a `url`; the URL itself is not kept: it may
 * carry a signature).
 */
export interface MessageAttachment {
  readonly id: string;
  readonly type: 'image';
  readonly mediaType: ImageMediaType;
  /** Its size, decoded. */
  readonly bytes: number;
  readonly source: 'data' | 'url';
}

/** What `AgentEvents.AI_MESSAGE` carried: stored on the session and POSTed to the agent's callback URL. */
export interface AiMessage {
  readonly node: string;
  readonly displayName: string;
  readonly content: string;
  readonly model: string;
  readonly invocationId: string;
  readonly at: string;
  /**
   * Its delivery during the run (to the callback URL, else the agent's code): absent when there is none. `retrying`:
   * it failed and was queued to be sent again (ai-message-retry.ts; the attempts are `ai_message_delivery` events).
   */
  readonly callback?: {
    readonly delivered: boolean;
    readonly status?: number;
    readonly error?: string;
    readonly retrying?: true;
  };
}

export interface SessionError {
  readonly code: string;
  readonly message: string;
  readonly node: string | null;
}

/** Where a run goes on: the node to run next, or the node whose outgoing edges are to be followed next. */
export interface RunPosition {
  readonly node: string;
  readonly phase: 'run' | 'route';
}

/** A node this invocation ran, listed once its output was stored. */
export interface RunStep {
  readonly step: number;
  readonly node: string;
  readonly at: string;
}

/**
 * An invocation that outlived its request's budget and goes on in the flow runner (docs/flows.md, "Long runs"):
 * written at the hand-over, then after every node the runner completes (its checkpoint), so a runner that takes the
 * session over after a crash goes on from the last stored node and never runs a completed one again.
 */
export interface SessionRun {
  readonly invocationId: string;
  /** Where the run goes on; null once it ended (completed, paused or failed). */
  readonly next: RunPosition | null;
  /** Node runs of the invocation so far: MAX_STEPS_PER_INVOCATION counts them across the request and its runners. */
  readonly step: number;
  /** The nodes the invocation ran (request and runners), oldest first. */
  readonly steps: readonly RunStep[];
  readonly handedOverAt: string;
  /** The flow runner that holds the session (a random id per take-over); null: handed over, not taken yet. */
  readonly runner: string | null;
  /**
   * How many times a runner took the run: 1, more after a runner that died or reached its own deadline, or that took
   * it before the flow work budget had room (core/flows/work-budget.ts).
   */
  readonly takeovers: number;
  /**
   * Set while the invocation's start (its `invocation_start` event, default retrieval) is still to run, in the flow
   * runner, with the trigger's payload: a schedule fire (core/flows/schedule-fire.ts). Gone once a runner stored it.
   */
  readonly start?: { readonly body: Record<string, unknown> };
}

export interface FlowSession {
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId: string;
  readonly organizationId: string;
  status: SessionStatus;
  /** The flow and node the session is at: the paused node while `paused`, null once it ended. */
  flowName: string | null;
  currentNode: string | null;
  memory: Record<string, unknown>;
  messages: SessionMessage[];
  /** By node name: `{tools.<NodeName>.<property>}` reads these. */
  outputs: Record<string, unknown>;
  aiMessages: AiMessage[];
  error: SessionError | null;
  /** The trigger of the latest invocation. */
  trigger: { readonly name: string; readonly type: string };
  invocations: number;
  /** While `running`: until when the invocation holds the session; after it another may take over (a crash). */
  leaseUntil: string | null;
  /** Set when the latest invocation was handed over to the flow runner; absent otherwise. */
  run?: SessionRun | null;
  version: number;
  readonly createdAt: string;
  updatedAt: string;
}
