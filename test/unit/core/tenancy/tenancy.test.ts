import {
  ownsRecord,
  requireAgent,
  requireKnowledgeBase,
  requireWholeOrganization,
  visibleAgents,
} from '#core/tenancy/tenancy';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';

const DELETION = { startedAt: '2026-01-01T00:00:00.000Z', page: 0, defaultRetrievalChanged: [] };

describe('tenancy', () => {
  it("finds the caller's agent and knowledge base", async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();

    await expect(requireAgent(knowledge.deps, tenant.caller, tenant.agentId)).resolves.toMatchObject({
      organizationId: 'org-a',
    });
    await expect(
      requireKnowledgeBase(knowledge.deps, tenant.caller, tenant.agentId, tenant.knowledgeBaseId),
    ).resolves.toMatchObject({ knowledgeBaseId: tenant.knowledgeBaseId });
  });

  it("answers another organization's agent as one that does not exist", async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant('org-a');
    const other = await knowledge.tenant('org-b');

    const foreign = requireAgent(knowledge.deps, tenant.caller, other.agentId);
    const missing = requireAgent(knowledge.deps, tenant.caller, 'agent-nowhere');

    await expect(foreign).rejects.toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND' });
    await expect(missing).rejects.toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND' });
  });

  it("answers a knowledge base recorded for another organization under the caller's agent with 404", async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    await knowledge.knowledgeBases.put({
      organizationId: 'org-b',
      agentId: tenant.agentId,
      knowledgeBaseId: 'kb-foreign',
      name: 'foreign',
      description: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    });

    await expect(
      requireKnowledgeBase(knowledge.deps, tenant.caller, tenant.agentId, 'kb-foreign'),
    ).rejects.toMatchObject({ status: 404, code: 'KNOWLEDGE_BASE_NOT_FOUND' });
  });

  it('hides a knowledge base being deleted, except to a caller asking to include it', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    await knowledge.knowledgeBases.markDeleting(tenant.agentId, tenant.knowledgeBaseId, DELETION, DELETION.startedAt);

    await expect(
      requireKnowledgeBase(knowledge.deps, tenant.caller, tenant.agentId, tenant.knowledgeBaseId),
    ).rejects.toMatchObject({ status: 404, code: 'KNOWLEDGE_BASE_NOT_FOUND' });
    await expect(
      requireKnowledgeBase(knowledge.deps, tenant.caller, tenant.agentId, tenant.knowledgeBaseId, {
        includeDeleting: true,
      }),
    ).resolves.toMatchObject({ status: 'deleting' });
  });

  it('lets a token restricted to agents reach those agents only', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const first = await knowledge.tenant('org-a', 'one');
    const second = await knowledge.tenant('org-a', 'two');
    const restricted = { ...first.caller, agentIds: [first.agentId] };

    await expect(requireAgent(knowledge.deps, restricted, first.agentId)).resolves.toBeDefined();
    await expect(requireAgent(knowledge.deps, restricted, second.agentId)).rejects.toMatchObject({
      code: 'AGENT_NOT_FOUND',
    });
    const agents = await knowledge.agents.list('org-a');
    expect(visibleAgents(restricted, agents).map((agent) => agent.agentId)).toEqual([first.agentId]);
    expect(visibleAgents(first.caller, agents)).toHaveLength(2);
    expect(ownsRecord(restricted, { organizationId: 'org-a', agentId: second.agentId })).toBe(false);
    expect(ownsRecord(restricted, { organizationId: 'org-b', agentId: first.agentId })).toBe(false);
    expect(ownsRecord(restricted, { organizationId: 'org-a', agentId: first.agentId })).toBe(true);
  });

  it('reads the agent and the knowledge base in one read when the deps offer one, with the same answers', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant('org-a', 'one');
    const other = await knowledge.tenant('org-b', 'two');
    const gone = await knowledge.tenant('org-a', 'three');
    await knowledge.knowledgeBases.markDeleting(gone.agentId, gone.knowledgeBaseId, DELETION, DELETION.startedAt);
    const reads: string[] = [];
    const deps = {
      ...knowledge.deps,
      agents: { get: () => Promise.reject(new Error('read one by one')) },
      tenancyReads: {
        agentAndKnowledgeBase: async (organizationId: string, agentId: string, knowledgeBaseId: string) => {
          reads.push(`${agentId}/${knowledgeBaseId}`);
          return {
            agent: await knowledge.agents.get(organizationId, agentId),
            knowledgeBase: await knowledge.knowledgeBases.get(agentId, knowledgeBaseId),
          };
        },
      },
    };
    const restricted = { ...tenant.caller, agentIds: [tenant.agentId] };

    await expect(
      requireKnowledgeBase(deps, tenant.caller, tenant.agentId, tenant.knowledgeBaseId),
    ).resolves.toMatchObject({ knowledgeBaseId: tenant.knowledgeBaseId });
    await expect(requireKnowledgeBase(deps, tenant.caller, other.agentId, other.knowledgeBaseId)).rejects.toMatchObject(
      { status: 404, code: 'AGENT_NOT_FOUND' },
    );
    await expect(requireKnowledgeBase(deps, tenant.caller, tenant.agentId, 'kb-nowhere')).rejects.toMatchObject({
      status: 404,
      code: 'KNOWLEDGE_BASE_NOT_FOUND',
    });
    await expect(requireKnowledgeBase(deps, gone.caller, gone.agentId, gone.knowledgeBaseId)).rejects.toMatchObject({
      code: 'KNOWLEDGE_BASE_NOT_FOUND',
    });
    // An agent the token may not use is refused before anything is read.
    await expect(requireKnowledgeBase(deps, restricted, gone.agentId, gone.knowledgeBaseId)).rejects.toMatchObject({
      code: 'AGENT_NOT_FOUND',
    });
    expect(reads).toEqual([
      `${tenant.agentId}/${tenant.knowledgeBaseId}`,
      `${other.agentId}/${other.knowledgeBaseId}`,
      `${tenant.agentId}/kb-nowhere`,
      `${gone.agentId}/${gone.knowledgeBaseId}`,
    ]);
  });

  it('refuses an organization-wide action to a restricted token with 403 token.agentRestricted', () => {
    const caller = { organizationId: 'org-a', tokenId: 't', scopes: [], agentIds: ['a', 'b'] };

    expect(() => requireWholeOrganization(caller, 'create an agent')).toThrow(
      expect.objectContaining({
        status: 403,
        code: 'FORBIDDEN',
        details: [expect.objectContaining({ rule: 'token.agentRestricted' })],
      }),
    );
    expect(() => requireWholeOrganization({ ...caller, agentIds: undefined }, 'create an agent')).not.toThrow();
  });
});
