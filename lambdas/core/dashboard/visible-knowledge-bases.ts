/**
 * The knowledge bases a caller may reach, across its organization's agents: what an MCP client is shown first, so it
 * can pick an agent, an environment and a knowledge base to search (lambdas/handlers/http/mcp/tools.ts).
 *
 * Primary course: the agents the caller may see (a token restricted to agents sees those only), or the one it names;
 * each agent's knowledge bases in creation order, those being deleted left out, each with its agent's name.
 */
import { type Caller, requireAgent, visibleAgents } from '#core/tenancy/tenancy';
import type { AgentRecord, AgentStore, KnowledgeBaseStore } from '#ports/stores';

export interface VisibleKnowledgeBasesDeps {
  readonly agents: Pick<AgentStore, 'get' | 'list'>;
  readonly knowledgeBases: Pick<KnowledgeBaseStore, 'list'>;
}

export async function listVisibleKnowledgeBases(
  deps: VisibleKnowledgeBasesDeps,
  caller: Caller,
  options: { agentId?: string } = {},
) {
  const agents: AgentRecord[] = options.agentId
    ? [await requireAgent(deps, caller, options.agentId)]
    : visibleAgents(caller, await deps.agents.list(caller.organizationId));
  const perAgent = await Promise.all(
    agents.map(async (agent) =>
      // The fields of dashboard.ts's knowledgeBaseView, written out: importing that file would bring its use cases
      // (deletion, reindex) into the MCP server's bundle, which is at its budget (docs/mcp.md, "Bundle").
      (await deps.knowledgeBases.list(agent.agentId)).map((kb) => ({
        knowledgeBaseId: kb.knowledgeBaseId,
        agentId: kb.agentId,
        agentName: agent.displayName,
        name: kb.name,
        description: kb.description,
        createdAt: kb.createdAt,
        updatedAt: kb.updatedAt,
      })),
    ),
  );
  return perAgent.flat();
}
