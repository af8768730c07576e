/**
 * Deleting an agent is a job, like deleting a knowledge base, and made of it. Primary course: DELETE marks the agent
 * `deleting` (from then on it does not exist for any caller: GET, lists, its knowledge bases and documents, its
 * flows' triggers) and queues page 0. Each page removes the agent's definitions and default retrieval configurations
 * (so no trigger, the schedule tick's included, runs it again), starts the deletion job of each of its knowledge
 * bases not yet being deleted (core/processing/knowledge-base-deletion.ts: documents, chunks, objects, ZIP jobs in
 * every environment), removes up to SESSIONS_PER_PAGE of its sessions, and moves to the next page; once no session
 * and no knowledge base is left, the agent's row goes. Its analytics events stay until their retention ends.
 *
 * Crash safety and redelivery as for a knowledge base: every removal is idempotent, the row goes last, a copy of a
 * page does nothing once the job moved past it (one conditional write), and the watchdog resumes a job whose message
 * was lost (`resumeStuckAgentDeletions`).
 */
import { NotFoundError } from '#core/errors';
import { ENVIRONMENTS } from '#core/knowledge/fields';
import { type Caller, mayUseAgent, requireWholeOrganization } from '#core/tenancy/tenancy';
import type { DefinitionStore, SessionStore } from '#ports/flows';
import type { RetrievalConfigStore } from '#ports/retrieval-configs';
import type { Clock, ProcessingMessage, ProcessingQueue } from '#ports/services';
import type { AgentRecord, AgentStore, KnowledgeBaseStore } from '#ports/stores';
import { startKnowledgeBaseDeletion } from './knowledge-base-deletion';
import type { ProcessingOutcome } from './process-document';

/** Sessions one page removes. */
export const SESSIONS_PER_PAGE = 100;
/** How long a page waits before looking again while its knowledge bases' own jobs run. */
export const KNOWLEDGE_BASE_WAIT_SECONDS = 5;

export interface AgentDeletionDeps {
  readonly agents: AgentStore;
  readonly knowledgeBases: KnowledgeBaseStore;
  readonly retrievalConfigs: RetrievalConfigStore;
  readonly definitions: DefinitionStore;
  readonly sessions: SessionStore;
  readonly queue: ProcessingQueue;
  readonly clock: Clock;
}

type AgentDeletionMessage = Extract<ProcessingMessage, { kind: 'delete-agent' }>;

/** What DELETE answers, the first time and every time after while the job runs. */
export function agentDeletionView(agent: AgentRecord) {
  return { agentId: agent.agentId, status: 'deleting' as const, startedAt: agent.deletion?.startedAt ?? null };
}

/**
 * DELETE /dashboard/agents/:agentId: starts the job, or answers the one already running. The mark comes first: from
 * that write on nothing new can start in the agent (and a crash before the first message is queued leaves a job the
 * watchdog resumes). A token restricted to agents may not delete one (an organization's decision).
 */
export async function startAgentDeletion(
  deps: Pick<AgentDeletionDeps, 'agents' | 'queue' | 'clock'>,
  caller: Caller,
  agentId: string,
) {
  requireWholeOrganization(caller, 'delete an agent');
  const notFound = () => new NotFoundError('AGENT_NOT_FOUND', `Agent ${agentId} was not found`);
  const agent = mayUseAgent(caller, agentId) ? await deps.agents.get(caller.organizationId, agentId) : undefined;
  if (!agent) throw notFound();
  if (agent.status === 'deleting') return agentDeletionView(agent);
  const marked = await deps.agents.markDeleting(caller.organizationId, agentId, deps.clock.now().toISOString());
  if (!marked) {
    // Another DELETE marked it first (answer its job), or it is gone.
    const current = await deps.agents.get(caller.organizationId, agentId);
    if (current?.status === 'deleting') return agentDeletionView(current);
    throw notFound();
  }
  await deps.queue.send({ kind: 'delete-agent', organizationId: caller.organizationId, agentId, page: 0 });
  return agentDeletionView(marked);
}

/** Message `delete-agent`: one page of the job. */
export async function runAgentDeletionPage(
  deps: AgentDeletionDeps,
  message: AgentDeletionMessage,
): Promise<ProcessingOutcome> {
  const { organizationId, agentId } = message;
  const agent = await deps.agents.get(organizationId, agentId);
  if (agent?.status !== 'deleting' || agent.deletion?.page !== message.page) return 'skipped';

  for (const environment of ENVIRONMENTS) {
    await deps.definitions.delete(agentId, environment);
    await deps.retrievalConfigs.delete(agentId, environment);
  }
  const knowledgeBases = await deps.knowledgeBases.list(agentId, { includeDeleting: true });
  for (const kb of knowledgeBases) {
    if (kb.status !== 'deleting') await startKnowledgeBaseDeletion(deps, kb);
  }
  let removed = 0;
  for (const environment of ENVIRONMENTS) {
    if (removed >= SESSIONS_PER_PAGE) break;
    removed += await deps.sessions.deleteSome(agentId, environment, SESSIONS_PER_PAGE - removed);
  }
  if (removed > 0) return nextPage(deps, message, 0);
  if (knowledgeBases.length > 0) return nextPage(deps, message, KNOWLEDGE_BASE_WAIT_SECONDS);
  await deps.agents.removeDeleted(organizationId, agentId);
  return 'ready';
}

async function nextPage(
  deps: Pick<AgentDeletionDeps, 'agents' | 'queue' | 'clock'>,
  message: AgentDeletionMessage,
  delaySeconds: number,
): Promise<ProcessingOutcome> {
  const { organizationId, agentId, page } = message;
  const moved = await deps.agents.advanceDeletion(organizationId, agentId, page, deps.clock.now().toISOString());
  // Another copy of this page moved the job first, and queued the next page itself.
  if (!moved) return 'skipped';
  await deps.queue.send({ ...message, page: page + 1 }, delaySeconds > 0 ? { delaySeconds } : undefined);
  return 'ready';
}

/**
 * The watchdog's part: a job that has not moved for `timeoutSeconds` lost its message. It is moved to the next page
 * and that page queued, so a late copy of the lost one does nothing.
 */
export async function resumeStuckAgentDeletions(
  deps: Pick<AgentDeletionDeps, 'agents' | 'queue' | 'clock'>,
  options: { timeoutSeconds: number; batch?: number },
): Promise<number> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - options.timeoutSeconds * 1000).toISOString();
  let resumed = 0;
  for (const { organizationId, agentId } of await deps.agents.listDeleting(cutoff, options.batch ?? 100)) {
    const agent = await deps.agents.get(organizationId, agentId);
    if (agent?.status !== 'deleting' || !agent.deletion || (agent.updatedAt ?? '') >= cutoff) continue;
    const { page } = agent.deletion;
    if (await deps.agents.advanceDeletion(organizationId, agentId, page, now.toISOString())) {
      await deps.queue.send({ kind: 'delete-agent', organizationId, agentId, page: page + 1 });
      resumed += 1;
    }
  }
  return resumed;
}
