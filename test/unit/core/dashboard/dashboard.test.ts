import {
  createAgent,
  createKnowledgeBase,
  deleteKnowledgeBase,
  getKnowledgeBase,
  listAgents,
  listKnowledgeBases,
  updateKnowledgeBase,
} from '#core/dashboard/dashboard';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';

const CALLER = { organizationId: 'org-a', tokenId: 'token-a', scopes: ['dashboard'] };

describe('dashboard agents', () => {
  it('creates an agent of the caller organization and lists it', async () => {
    const knowledge = inMemoryKnowledgeDeps();

    const { callbackSecret, ...agent } = await createAgent(knowledge.allDeps, CALLER, 'Support');

    expect(agent).toEqual({
      agentId: '00000000-0000-4000-8000-000000000001',
      displayName: 'Support',
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    // Its callback secret is in the creation's answer only: lists and reads never show it.
    expect(callbackSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await knowledge.agents.get('org-a', agent.agentId)).toMatchObject({
      displayName: 'Support',
      callbackSecrets: { current: { secret: callbackSecret, createdAt: '2026-01-01T00:00:00.000Z' } },
    });
    expect(await listAgents(knowledge.allDeps, CALLER)).toEqual([agent]);
    expect(await listAgents(knowledge.allDeps, { ...CALLER, organizationId: 'org-b' })).toEqual([]);
  });

  it('refuses to create an agent for a token restricted to agents, and stores nothing', async () => {
    const knowledge = inMemoryKnowledgeDeps();

    await expect(createAgent(knowledge.allDeps, { ...CALLER, agentIds: ['x'] }, 'Support')).rejects.toMatchObject({
      status: 403,
    });
    expect(knowledge.agents.records.size).toBe(0);
  });
});

describe('dashboard knowledge bases', () => {
  it('creates, lists, gets and renames a knowledge base of an agent', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const { agentId } = await createAgent(knowledge.allDeps, CALLER, 'Support');
    const created = await createKnowledgeBase(knowledge.allDeps, CALLER, { agentId, name: 'FAQ' });
    knowledge.clock.advanceSeconds(5);

    const renamed = await updateKnowledgeBase(knowledge.allDeps, CALLER, {
      agentId,
      knowledgeBaseId: created.knowledgeBaseId,
      description: 'answers',
    });

    expect(renamed).toEqual({ ...created, description: 'answers', updatedAt: '2026-01-01T00:00:05.000Z' });
    expect(await listKnowledgeBases(knowledge.allDeps, CALLER, agentId)).toEqual([renamed]);
    expect(await getKnowledgeBase(knowledge.allDeps, CALLER, agentId, created.knowledgeBaseId)).toEqual(renamed);
  });

  it("answers 404 AGENT_NOT_FOUND when creating under another organization's agent", async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const other = await knowledge.tenant('org-b');

    await expect(
      createKnowledgeBase(knowledge.allDeps, CALLER, { agentId: other.agentId, name: 'x' }),
    ).rejects.toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND' });
    expect(await knowledge.knowledgeBases.list(other.agentId)).toHaveLength(1);
  });

  it('starts the deletion job: hidden at once, dropped from default retrieval, first page queued', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    await knowledge.retrievalConfigs.put({
      agentId: tenant.agentId,
      environment: 'production',
      enabled: true,
      knowledgeBases: [{ knowledgeBaseId: tenant.knowledgeBaseId, environment: 'development' }],
      updatedAt: '2026-01-01T00:00:00.000Z',
    });
    knowledge.clock.advanceSeconds(1);

    const job = await deleteKnowledgeBase(knowledge.allDeps, tenant.caller, tenant.agentId, tenant.knowledgeBaseId);

    expect(job).toMatchObject({
      knowledgeBaseId: tenant.knowledgeBaseId,
      status: 'deleting',
      startedAt: '2026-01-01T00:00:01.000Z',
      defaultRetrievalChanged: ['production'],
    });
    expect((await knowledge.retrievalConfigs.get(tenant.agentId, 'production'))?.knowledgeBases).toEqual([]);
    expect(knowledge.queue.messages).toEqual([
      { kind: 'delete-knowledge-base', agentId: tenant.agentId, knowledgeBaseId: tenant.knowledgeBaseId, page: 0 },
    ]);
    await expect(
      getKnowledgeBase(knowledge.allDeps, tenant.caller, tenant.agentId, tenant.knowledgeBaseId),
    ).rejects.toMatchObject({ status: 404, code: 'KNOWLEDGE_BASE_NOT_FOUND' });
    expect(await listKnowledgeBases(knowledge.allDeps, tenant.caller, tenant.agentId)).toEqual([]);
  });

  it('answers a repeated DELETE with the running job and queues nothing more', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const first = await deleteKnowledgeBase(knowledge.allDeps, tenant.caller, tenant.agentId, tenant.knowledgeBaseId);
    knowledge.clock.advanceSeconds(30);

    const again = await deleteKnowledgeBase(knowledge.allDeps, tenant.caller, tenant.agentId, tenant.knowledgeBaseId);

    expect(again).toEqual(first);
    expect(knowledge.queue.messages).toHaveLength(1);
  });

  it("answers 404 for deleting another organization's knowledge base and leaves it in use", async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const other = await knowledge.tenant('org-b');

    await expect(
      deleteKnowledgeBase(knowledge.allDeps, CALLER, other.agentId, other.knowledgeBaseId),
    ).rejects.toMatchObject({ status: 404 });
    expect((await knowledge.knowledgeBases.get(other.agentId, other.knowledgeBaseId))?.status).toBeUndefined();
    expect(knowledge.queue.messages).toEqual([]);
  });
});
