/**
 * The flow runtime: one invocation of an agent (the nodes themselves: run-nodes.ts; routing: route.ts; what a run
 * carries: run-context.ts; claiming the session: session-claim.ts; writing it back: run-endings.ts; the flow runner's
 * side: continue-run.ts). Primary course: a trigger (webhook, app event or schedule) starts a
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
 *
 * Every node is paid for from the organization's flow work budget (work-budget.ts): the invocation pays its first
 * before anything is written (refused: 429), each further node before it starts. A node the budget refuses is handed
 * over too, the queue message delayed until the budget's window ends; without a run queue the run fails.
 */

import { boundedValue, recordBuiltInEvent } from '#core/analytics/track';
import { ConflictError, NotFoundError } from '#core/errors';
import { callTriggerHandler } from './agent-code';
import { forgetAttachments } from './attachments';
import type { AgentDefinition, FlowNode, TriggerNode } from './definition';
import { nodesOf } from './definition-parts';
import { type EdgeTaken, routeWithReason } from './route';
import {
  analyticsScope,
  FLOW_REQUEST_LIMIT_MS,
  FlowError,
  type FlowRuntimeDeps,
  fail,
  type Invocation,
  locate,
  MAX_STEPS_PER_INVOCATION,
  now,
  PAYLOAD_PART_MAX_BYTES,
  type RunContext,
  recordNodeResult,
  SessionLease,
  type TriggerSelector,
} from './run-context';
import { CheckpointError, checkpoint, finish, handOver } from './run-endings';
import { nodeBoundMs, runNode } from './run-nodes';
import type { AiMessage, FlowSession, RunPosition } from './session';
import { type Claim, claimSession, loadImages, storeInputImages } from './session-claim';
import { FlowWorkExhaustedError, spendFlowWork, workBudgetText } from './work-budget';

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
  const prepaidNodes = await admit(deps, record.organizationId);
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
    boundedUntil:
      options.budgetMs !== undefined && deps.runs ? started + Math.max(options.budgetMs, FLOW_REQUEST_LIMIT_MS) : null,
    runner: null,
    // The stored claim is `running` at its version (claim.session keeps the status it had, for the resume below).
    lease: new SessionLease(deps, { ...claim.session, status: 'running', version: claim.version }),
    prepaidNodes,
    workWaitSeconds: 0,
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
 * An invocation pays for its first node before anything of it is written, so an organization whose flow work budget
 * is used up is refused (429 with Retry-After) leaving nothing behind. The nodes it paid for: 1, or 0 unmetered.
 */
async function admit(deps: FlowRuntimeDeps, organizationId: string): Promise<number> {
  if (!deps.work) return 0;
  const verdict = await spendFlowWork(deps.work, organizationId, 1, deps.clock.now().getTime());
  if (!verdict.allowed) throw new FlowWorkExhaustedError(verdict, deps.work.settings);
  return 1;
}

/**
 * Pays for the node about to run. False when the flow work budget has no room: the run stops before it and is handed
 * over, to go on once the window has room (context.workWaitSeconds). Where the run cannot be handed over (no run
 * queue, or a schedule tick, which runs to its end) it fails with WORK_BUDGET_EXCEEDED.
 */
async function payForNode(context: RunContext, node: string): Promise<boolean> {
  const { deps, session } = context;
  if (context.prepaidNodes > 0) {
    context.prepaidNodes -= 1;
    return true;
  }
  if (!deps.work) return true;
  let verdict: Awaited<ReturnType<typeof spendFlowWork>>;
  try {
    verdict = await spendFlowWork(deps.work, session.organizationId, 1, deps.clock.now().getTime());
  } catch (error) {
    // In a runner the counters unreachable are no fault of the flow: the message comes back, the node not yet run.
    if (context.runner) throw new CheckpointError(error, 'the flow work budget could not be counted');
    throw error;
  }
  if (verdict.allowed) return true;
  // Only a run with a deadline hands over: a request given a budget and a run queue, or a runner.
  if (context.deadline === null || !deps.runs) {
    throw new FlowError(
      'WORK_BUDGET_EXCEEDED',
      `${workBudgetText(verdict, deps.work.settings)}; the run stopped before node ${node}`,
    );
  }
  context.workWaitSeconds = verdict.resetSeconds;
  return false;
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
  recordInvocationStart(context, resumeAt);
  if (claim.refused) throw claim.refused;
  await loadImages(context);
  if (!(await afterTriggerEvent(context))) return null;
  return execute(context, resumeAt ? { node: resumeAt, phase: 'route' } : { node: context.trigger.name, phase: 'run' });
}

/**
 * TRIGGER_EVENT, queued as `invocation_start` under the invocation's key (recorded again by a runner that starts the
 * same invocation over, it is stored once). Also the start of a schedule fire in the flow runner (continue-run.ts).
 */
export function recordInvocationStart(context: RunContext, resumeAt: string | null): void {
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

/**
 * After TRIGGER_EVENT: the agent's trigger handler, when it has one (agent-code.ts), then default retrieval, when the
 * environment has it on, adds its context as a system message. False when the handler stopped the run (`completed`).
 */
export async function afterTriggerEvent(context: RunContext): Promise<boolean> {
  if (!(await callTriggerHandler(context))) return false;
  const { session, invocation, deps } = context;
  const query =
    invocation.message?.trim() || (Object.keys(invocation.body).length ? JSON.stringify(invocation.body) : '');
  if (query === '') return true;
  const systemMessage = await deps.defaultRetrieval({
    agentId: session.agentId,
    environment: session.environment,
    organizationId: session.organizationId,
    query: query.slice(0, 2000),
    memory: session.memory,
  });
  if (systemMessage) session.messages.push({ role: 'system', content: systemMessage, at: now(context) });
  return true;
}

/** What a node's `node_result` adds to its status: the edge taken and why, or the error it failed with. */
interface NodeEnding {
  readonly edge?: { readonly to: string | null; readonly reason: string };
  readonly error?: unknown;
}

/**
 * Whether a node whose own bound (nodeBoundMs: a slow tool) does not fit in what is left of the invocation
 * (boundedUntil) should wait for the flow runner: in a request always (the caller gets 202 `running` instead of a
 * gateway timeout), in a runner only once it has run a node of its own (a node longer than a whole runner's time runs
 * anyway there; handing it over again would never end).
 */
function outlivesDeadline(context: RunContext, node: FlowNode, ranANode: boolean): boolean {
  if (context.boundedUntil === null || !context.deps.runs) return false;
  if (context.runner !== null && !ranANode) return false;
  const bound = nodeBoundMs(context.definition, node);
  return bound > 0 && context.deps.clock.now().getTime() + bound > context.boundedUntil;
}

/**
 * Runs from `start` until the flow ends or pauses (null), or until the deadline passes before a node starts: then
 * the position to go on from. In the flow runner each step is stored as it completes (checkpoint).
 */
export async function execute(context: RunContext, start: RunPosition): Promise<RunPosition | null> {
  const { session, definition } = context;
  const firstStep = context.step;
  let position: RunPosition | null = start;
  while (position) {
    // How the node run here ended, recorded once its edge is known (`node_result`); none for a routing-only position.
    let routed: ((status: 'succeeded' | 'failed', more?: NodeEnding) => void) | undefined;
    let durationMs = 0;
    if (context.deadline !== null && context.deps.clock.now().getTime() >= context.deadline) return position;
    const located = locate(definition, position.node);
    if (!located) {
      throw new FlowError('NODE_NOT_FOUND', `Node ${position.node} is not in this agent's definition any more`);
    }
    session.flowName = located.flow.name;
    session.currentNode = located.node.name;
    if (position.phase === 'run') {
      if (context.step + 1 > MAX_STEPS_PER_INVOCATION) {
        throw new FlowError(
          'STEP_LIMIT_EXCEEDED',
          `The invocation ran ${MAX_STEPS_PER_INVOCATION} nodes without ending or pausing`,
        );
      }
      if (outlivesDeadline(context, located.node, context.step > firstStep)) return position;
      if (!(await payForNode(context, located.node.name))) return position;
      context.step += 1;
      context.tokens = null;
      const startedMs = context.deps.clock.now().getTime();
      const before = session.outputs[located.node.name];
      const ended = (status: 'succeeded' | 'paused' | 'failed', more: NodeEnding = {}) =>
        recordNodeResult(context, located.node, {
          status,
          durationMs,
          output: session.outputs[located.node.name] !== before,
          ...more,
        });
      let outcome: Awaited<ReturnType<typeof runNode>>;
      try {
        outcome = await runNode(context, located);
      } catch (error) {
        durationMs = context.deps.clock.now().getTime() - startedMs;
        ended('failed', { error });
        throw error;
      }
      durationMs = context.deps.clock.now().getTime() - startedMs;
      context.steps.push({ step: context.step, node: located.node.name, at: now(context) });
      if (outcome === 'pause') {
        ended('paused');
        session.status = 'paused';
        return null;
      }
      if (typeof outcome === 'object') {
        ended('succeeded', { edge: { to: outcome.jumpTo, reason: 'jumpToNode' } });
        position = { node: outcome.jumpTo, phase: 'run' };
        await checkpoint(context, position);
        continue;
      }
      routed = ended;
      // Routing asks the model here: the node is stored as done first, so that question is all that can run again.
      if (located.flow.edges.some((e) => e.from === located.node.name && e.type === 'promptCondition')) {
        await checkpoint(context, { node: located.node.name, phase: 'route' });
      }
    }
    let taken: EdgeTaken;
    try {
      taken = await routeWithReason(context, located);
    } catch (error) {
      routed?.('failed', { error });
      throw error;
    }
    routed?.('succeeded', { edge: { to: taken.next, reason: taken.reason } });
    const next = taken.next;
    position = next === null ? null : { node: next, phase: 'run' };
    if (position) await checkpoint(context, position);
  }
  session.status = 'completed';
  session.currentNode = null;
  return null;
}
