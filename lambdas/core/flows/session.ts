/**
 * A session: one conversation of an agent in one environment. It holds `memory`, `messages` and the outputs of the
 * nodes it ran, where it stands (`currentNode` while paused for a human), and the AI messages it produced. Every
 * invocation (a trigger call, a resume) reads it, runs, and writes it back guarded by `version`.
 */
import type { Environment } from '../knowledge/fields';

export const SESSION_STATUSES = ['running', 'paused', 'completed', 'failed'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/** Stored messages are capped (oldest dropped) so a session stays far below DynamoDB's 400 KB item limit. */
export const MAX_STORED_MESSAGES = 50;
export const MAX_STORED_AI_MESSAGES = 50;

export interface SessionMessage {
  readonly role: 'user' | 'assistant' | 'system';
  readonly content: string;
  /** The node that produced an assistant message. */
  readonly node?: string;
  readonly at: string;
}

/** What `AgentEvents.AI_MESSAGE` carried: stored on the session and POSTed to the agent's callback URL. */
export interface AiMessage {
  readonly node: string;
  readonly displayName: string;
  readonly content: string;
  readonly model: string;
  readonly invocationId: string;
  readonly at: string;
  /** The POST to the callback URL: absent when the agent has none. */
  readonly callback?: { readonly delivered: boolean; readonly status?: number; readonly error?: string };
}

export interface SessionError {
  readonly code: string;
  readonly message: string;
  readonly node: string | null;
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
  version: number;
  readonly createdAt: string;
  updatedAt: string;
}
