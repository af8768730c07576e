/**
 * Tenancy: every request acts for the organization of its token. An agent or knowledge base of another
 * organization is answered exactly like one that does not exist, so existence never leaks.
 */

import type { AgentRecord, AgentStore, KnowledgeBaseRecord, KnowledgeBaseStore } from '../../ports/stores';
import { NotFoundError } from '../errors';

export interface Caller {
  readonly organizationId: string;
  readonly tokenId: string;
  readonly scopes: readonly string[];
}

export interface TenancyDeps {
  readonly agents: AgentStore;
  readonly knowledgeBases: KnowledgeBaseStore;
}

export async function requireAgent(
  deps: Pick<TenancyDeps, 'agents'>,
  caller: Caller,
  agentId: string,
): Promise<AgentRecord> {
  const agent = await deps.agents.get(caller.organizationId, agentId);
  if (!agent) throw new NotFoundError('AGENT_NOT_FOUND', `Agent ${agentId} was not found`);
  return agent;
}

export async function requireKnowledgeBase(
  deps: TenancyDeps,
  caller: Caller,
  agentId: string,
  knowledgeBaseId: string,
): Promise<KnowledgeBaseRecord> {
  await requireAgent(deps, caller, agentId);
  const knowledgeBase = await deps.knowledgeBases.get(agentId, knowledgeBaseId);
  if (!knowledgeBase || knowledgeBase.organizationId !== caller.organizationId) {
    throw new NotFoundError('KNOWLEDGE_BASE_NOT_FOUND', `Knowledge base ${knowledgeBaseId} was not found`);
  }
  return knowledgeBase;
}
