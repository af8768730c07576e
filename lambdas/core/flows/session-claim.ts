/**
 * How an invocation claims its session: a new one for a trigger, or the paused or ended one a message resumes, held by
 * a lease and written with the invocation's input (dropped, with SESSION_TOO_LARGE, when it does not fit); the images
 * of the input stored by reference and loaded for the models.
 */

import { ConflictError } from '#core/errors';
import { SessionTooLargeError } from '#ports/flows';
import { type AttachmentScope, loadContextImages, receiveAttachments, storeAttachments } from './attachments';
import type { TriggerNode } from './definition';
import type { AgentDefinitionRecord } from './definition-record';
import { type FlowRuntimeDeps, type Invocation, type RunContext, SESSION_LEASE_MS } from './run-context';
import type { FlowSession, MessageAttachment, SessionMessage } from './session';

export interface Claim {
  readonly session: FlowSession;
  /** The stored version after the claim: the final write is guarded by it. */
  readonly version: number;
  /** The input made the state too large: the session was claimed without it and the invocation fails with this. */
  readonly refused?: SessionTooLargeError;
}

/**
 * Takes the session for this invocation: a new one, or the stored one when its id is given and it is not held by
 * a running invocation (a lease that ran out, after a crash, may be taken over). Writes `running` first, guarded
 * by version, so a second invocation of the same session gets 409 instead of interleaving.
 */
export async function claimSession(
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
      throw new ConflictError('SESSION_BUSY', `Session ${session.sessionId} was started by another invocation`);
    }
    return { session: refused ? blank : session, version: 1, refused };
  }
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
  return { session: refused ? taken : session, version: existing.version + 1, refused };
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
export async function storeInputImages(deps: FlowRuntimeDeps, invocation: Invocation) {
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
export async function loadImages(context: RunContext): Promise<void> {
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
