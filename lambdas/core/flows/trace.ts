/**
 * GET /dashboard/agents/:agentId/sessions/:environment/:sessionId/trace: a session's runs as one ordered list of
 * steps (docs/flows.md, "The trace"), built from the analytics events the runtime recorded for it (the trace feeds
 * analytics and analytics feeds the trace: one record of what happened). Each node run is one step with its input
 * (`node_execution`'s parameters: the rendered prompt, the model, the tool's parameters), its output, its scoped tool
 * calls and browser steps, its run time, the edge taken and why (`node_result`), and the error of the one step that
 * failed. A failure outside any node run (a step limit, a session too large) is a step of its own.
 */
import type { AnalyticsEventRecord } from '#core/analytics/event';
import { MAX_LIMIT } from '#core/analytics/query';
import { NotFoundError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import type { AnalyticsEventReader } from '#ports/analytics';
import type { SessionStore } from '#ports/flows';
import type { Clock } from '#ports/services';
import type { AgentStore } from '#ports/stores';
import type { SessionStatus } from './session';

/** The trace reads at most this many of a session's events, newest first (a session of 50-node runs has ~150 each). */
export const TRACE_MAX_EVENTS = 5 * MAX_LIMIT;

export interface TraceStep {
  /** 1, 2, … in the order the steps ran, across the session's invocations. */
  readonly index: number;
  /** `agentCode`: a call of the agent's code (its trigger handler, docs/agent-code.md), before the run's nodes. */
  readonly kind: 'node' | 'invocation' | 'agentCode';
  /** The node; for an invocation step, the node the run was at (null: none). */
  readonly node: string | null;
  readonly nodeType: string | null;
  readonly displayName: string | null;
  /** `running`: the node started and no result is recorded (in flight, or the run stopped in it). */
  readonly status: 'succeeded' | 'paused' | 'failed' | 'running';
  readonly startedAt: string;
  readonly durationMs: number | null;
  /** The model that answered a prompt node (or drove a browser task): `bedrock-converse:<id>`, `offline`, … */
  readonly model: string | null;
  /**
   * The tokens the node's model calls used (its answer, tool turns, parameters and routing), as the provider
   * reported them; null when no call reported any (the offline model, a tool node without inference).
   */
  readonly tokens: { readonly input: number; readonly output: number } | null;
  /** node_execution's parameters: the rendered prompt and model, the tool's final parameters, the jump target, … */
  readonly input: unknown;
  readonly output: unknown;
  /** A prompt node's scoped tool calls (`tool_call`), in order. */
  readonly toolCalls: readonly Payload[];
  /** A browser task's steps (`browser_step`), in order. */
  readonly browserSteps: readonly Payload[];
  readonly edge: { readonly to: string | null; readonly reason: string } | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

export interface SessionTrace {
  readonly sessionId: string;
  readonly status: SessionStatus;
  readonly steps: readonly TraceStep[];
  /** True when the session has more than TRACE_MAX_EVENTS events: the oldest steps are left out. */
  readonly truncated: boolean;
}

export interface TraceDeps {
  readonly agents: Pick<AgentStore, 'get'>;
  readonly sessions: Pick<SessionStore, 'get'>;
  readonly analytics: AnalyticsEventReader;
  readonly clock: Clock;
}

export async function getSessionTrace(
  deps: TraceDeps,
  caller: Caller,
  agentId: string,
  environment: Environment,
  sessionId: string,
): Promise<SessionTrace> {
  await requireAgent(deps, caller, agentId);
  const session = await deps.sessions.get(agentId, environment, sessionId);
  if (!session) throw new NotFoundError('SESSION_NOT_FOUND', `Session ${sessionId} was not found`);
  const newestFirst: AnalyticsEventRecord[] = [];
  let before: Parameters<AnalyticsEventReader['query']>[0]['before'];
  let truncated = false;
  for (;;) {
    const page = await deps.analytics.query({
      agentId,
      environment,
      sessionId,
      before,
      offset: 0,
      limit: MAX_LIMIT,
      now: deps.clock.now(),
    });
    newestFirst.push(...page.events);
    if (!page.next) break;
    if (newestFirst.length >= TRACE_MAX_EVENTS) {
      truncated = true;
      break;
    }
    before = page.next;
  }
  return { sessionId, status: session.status, steps: traceSteps(newestFirst.reverse()), truncated };
}

type Payload = Record<string, unknown>;
const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** The steps of a session's events, oldest first. */
export function traceSteps(events: readonly AnalyticsEventRecord[]): TraceStep[] {
  const steps: TraceStep[] = [];
  // The node run in progress: a node's tool calls, browser steps and result come after its node_execution.
  let open: { -readonly [K in keyof TraceStep]: TraceStep[K] } | null = null;
  for (const event of events) {
    const payload = (event.payload ?? {}) as Payload;
    const nodeName = text(payload.nodeName);
    switch (event.eventName) {
      case 'node_execution': {
        open = {
          index: steps.length + 1,
          kind: 'node',
          node: nodeName,
          nodeType: text(payload.nodeType),
          displayName: text(payload.displayName),
          status: 'running',
          startedAt: event.created_at,
          durationMs: null,
          model: text(((payload.parameters ?? {}) as Payload).model),
          tokens: null,
          input: payload.parameters ?? null,
          output: null,
          toolCalls: [],
          browserSteps: [],
          edge: null,
          error: null,
        };
        steps.push(open);
        break;
      }
      case 'agent_code_call': {
        const failed = payload.status === 'failed';
        steps.push({
          index: steps.length + 1,
          kind: 'agentCode',
          node: nodeName,
          nodeType: null,
          displayName: text(payload.event),
          status: failed ? 'failed' : 'succeeded',
          startedAt: event.created_at,
          durationMs: typeof payload.durationMs === 'number' ? payload.durationMs : null,
          model: null,
          tokens: null,
          input: null,
          output: payload.answer ?? null,
          toolCalls: [],
          browserSteps: [],
          edge: null,
          error:
            failed && payload.error && typeof payload.error === 'object' ? (payload.error as TraceStep['error']) : null,
        });
        open = null;
        break;
      }
      case 'tool_call':
        if (open && open.node === nodeName) open.toolCalls = [...open.toolCalls, payload];
        break;
      case 'browser_step':
        if (open && open.node === nodeName) open.browserSteps = [...open.browserSteps, payload];
        break;
      case 'node_result': {
        if (!open || open.node !== nodeName) break;
        open.status = payload.status === 'failed' || payload.status === 'paused' ? payload.status : 'succeeded';
        open.durationMs = typeof payload.durationMs === 'number' ? payload.durationMs : null;
        if ('output' in payload) open.output = payload.output;
        open.tokens = tokensOf(payload.tokens);
        if (payload.edge && typeof payload.edge === 'object') open.edge = payload.edge as TraceStep['edge'];
        if (payload.error && typeof payload.error === 'object') open.error = payload.error as TraceStep['error'];
        open = null;
        break;
      }
      case 'invocation_error': {
        const error = { code: text(payload.code) ?? 'INTERNAL_ERROR', message: text(payload.message) ?? '' };
        const last = steps.at(-1);
        // The failure of a node run (or of a call of the agent's code) already says it: the error is that step's.
        if (last?.kind !== 'invocation' && last?.status === 'failed' && last.error?.code === error.code) break;
        steps.push({
          index: steps.length + 1,
          kind: 'invocation',
          node: nodeName,
          nodeType: null,
          displayName: null,
          status: 'failed',
          startedAt: event.created_at,
          durationMs: null,
          model: null,
          tokens: null,
          input: null,
          output: null,
          toolCalls: [],
          browserSteps: [],
          edge: null,
          error,
        });
        open = null;
        break;
      }
      case 'invocation_start':
        // A node started by an earlier invocation that never ended there stays `running`: the run stopped in it.
        open = null;
        break;
      default:
        break;
    }
  }
  return steps;
}

function tokensOf(value: unknown): TraceStep['tokens'] {
  if (value === null || typeof value !== 'object') return null;
  const { input, output } = value as Payload;
  return typeof input === 'number' && typeof output === 'number' ? { input, output } : null;
}
