/**
 * Tenancy: every request acts for the organization of its token, and a token restricted to agents acts for those
 * agents only. An agent or knowledge base of another organization, or an agent outside the token's restriction, is
 * answered exactly like one that does not exist, so existence never leaks.
 */

import { ForbiddenError, NotFoundError } from '#core/errors';
import type { AgentRecord, AgentStore, KnowledgeBaseRecord, KnowledgeBaseStore, TenancyReads } from '#ports/stores';

export interface Caller {
  readonly organizationId: string;
  readonly tokenId: string;
  readonly scopes: readonly string[];
  /** The agents a restricted token may address; absent for a token of the whole organization. */
  readonly agentIds?: readonly string[];
  /** A person's role in the organization (core/auth/people.ts); absent for a token. */
  readonly role?: 'owner' | 'member';
  /** A person's e-mail (lower case); absent for a token. */
  readonly email?: string;
  /**
   * A token's own SHA-256, as the authorizer found it: a use case reads the caller's record by it, consistently
   * (core/dashboard/dashboard.ts). Absent for a person, and in an authorizer answer cached before it was carried.
   */
  readonly tokenHash?: string;
}

export interface TenancyDeps {
  readonly agents: Pick<AgentStore, 'get'>;
  readonly knowledgeBases: KnowledgeBaseStore;
  /** Both records of requireKnowledgeBase in one read, as they are now; without it, one read each. */
  readonly tenancyReads?: TenancyReads;
}

/** THE agent restriction rule; every agent-scoped check below and every record owner check goes through it. */
export function mayUseAgent(caller: Caller, agentId: string): boolean {
  return caller.agentIds === undefined || caller.agentIds.includes(agentId);
}

/**
 * Whether a record found by its own id (an upload session, a ZIP import) is the caller's: same organization, and an
 * agent the caller may use. Callers answer `false` with the same 404 as an id that does not exist.
 */
export function ownsRecord(caller: Caller, record: { organizationId: string; agentId: string }): boolean {
  return record.organizationId === caller.organizationId && mayUseAgent(caller, record.agentId);
}

/** The agents of the caller's organization that the caller may see (all of them for an unrestricted token). */
export function visibleAgents<T extends { agentId: string }>(caller: Caller, agents: readonly T[]): T[] {
  return agents.filter((agent) => mayUseAgent(caller, agent.agentId));
}

/**
 * Refuses an action on the organization as a whole to a token restricted to agents: an agent it created would be
 * one it cannot use, and anything organization-wide would reach past its agents.
 */
export function requireWholeOrganization(caller: Caller, action: string): void {
  if (caller.agentIds === undefined) return;
  throw new ForbiddenError(`A token restricted to agents cannot ${action}`, [
    {
      field: '',
      rule: 'token.agentRestricted',
      message: `this token is restricted to ${caller.agentIds.length} agent(s)`,
    },
  ]);
}

export async function requireAgent(
  deps: Pick<TenancyDeps, 'agents'>,
  caller: Caller,
  agentId: string,
): Promise<AgentRecord> {
  return liveAgent(
    agentId,
    mayUseAgent(caller, agentId) ? await deps.agents.get(caller.organizationId, agentId) : undefined,
  );
}

function liveAgent(agentId: string, agent: AgentRecord | undefined): AgentRecord {
  // One being deleted no longer exists for anyone (core/processing/agent-deletion.ts).
  if (!agent || agent.status === 'deleting')
    throw new NotFoundError('AGENT_NOT_FOUND', `Agent ${agentId} was not found`);
  return agent;
}

/**
 * The caller's knowledge base. One being deleted no longer exists for anyone (uploads, documents, retrieval), except
 * for the DELETE that answers its deletion job again (`includeDeleting`).
 */
export async function requireKnowledgeBase(
  deps: TenancyDeps,
  caller: Caller,
  agentId: string,
  knowledgeBaseId: string,
  options: { includeDeleting?: boolean } = {},
): Promise<KnowledgeBaseRecord> {
  let knowledgeBase: KnowledgeBaseRecord | undefined;
  if (deps.tenancyReads && mayUseAgent(caller, agentId)) {
    const both = await deps.tenancyReads.agentAndKnowledgeBase(caller.organizationId, agentId, knowledgeBaseId);
    liveAgent(agentId, both.agent);
    knowledgeBase = both.knowledgeBase;
  } else {
    await requireAgent(deps, caller, agentId);
    knowledgeBase = await deps.knowledgeBases.get(agentId, knowledgeBaseId);
  }
  const hidden = knowledgeBase?.status === 'deleting' && !options.includeDeleting;
  if (!knowledgeBase || knowledgeBase.organizationId !== caller.organizationId || hidden) {
    throw new NotFoundError('KNOWLEDGE_BASE_NOT_FOUND', `Knowledge base ${knowledgeBaseId} was not found`);
  }
  return knowledgeBase;
}
