/**
 * TenancyReads through the containers' 5 s read caches of agents and knowledge bases (read-cache.ts): what the
 * customer API's reads and retrieval check on every request. Both records kept: no read. One of them kept: the
 * other's read, through its cache. Neither: one read of both together (`reads`: DynamoTenancyReads, one
 * BatchGetItem), whose records are then kept as the cached views would have kept them, so the next request of the
 * same agent and knowledge base reads nothing. Before, such a request read them with a GetItem each, one after the
 * other.
 */
import type { AgentRecord, AgentStore, KnowledgeBaseRecord, KnowledgeBaseStore, TenancyReads } from '#ports/stores';
import type { ReadCacheEntries } from './read-cache';

export interface CachedStore<Store> {
  /** The store's view that reads through the cache. */
  readonly cached: Store;
  readonly entries: ReadCacheEntries;
}

export class CachedTenancyReads implements TenancyReads {
  constructor(
    private readonly reads: TenancyReads,
    private readonly agents: CachedStore<Pick<AgentStore, 'get'>>,
    private readonly knowledgeBases: CachedStore<Pick<KnowledgeBaseStore, 'get'>>,
  ) {}

  async agentAndKnowledgeBase(
    organizationId: string,
    agentId: string,
    knowledgeBaseId: string,
  ): Promise<{ agent?: AgentRecord; knowledgeBase?: KnowledgeBaseRecord }> {
    // The keys the cached views use: `get` with the arguments requireAgent and requireKnowledgeBase pass.
    const agentArgs = [organizationId, agentId];
    const knowledgeBaseArgs = [agentId, knowledgeBaseId];
    const agent = this.agents.entries.peek('get', agentArgs) as AgentRecord | undefined;
    const knowledgeBase = this.knowledgeBases.entries.peek('get', knowledgeBaseArgs) as KnowledgeBaseRecord | undefined;
    if (agent && knowledgeBase) return { agent, knowledgeBase };
    if (agent) return { agent, knowledgeBase: await this.knowledgeBases.cached.get(agentId, knowledgeBaseId) };
    if (knowledgeBase) return { agent: await this.agents.cached.get(organizationId, agentId), knowledgeBase };
    const agentMark = this.agents.entries.mark();
    const knowledgeBaseMark = this.knowledgeBases.entries.mark();
    const both = await this.reads.agentAndKnowledgeBase(organizationId, agentId, knowledgeBaseId);
    this.agents.entries.keep('get', agentArgs, both.agent, agentMark);
    this.knowledgeBases.entries.keep('get', knowledgeBaseArgs, both.knowledgeBase, knowledgeBaseMark);
    return both;
  }
}
