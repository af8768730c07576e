/** listVisibleKnowledgeBases (core/dashboard/visible-knowledge-bases.ts) over in-memory stores. */
import { listVisibleKnowledgeBases } from '#core/dashboard/visible-knowledge-bases';
import type { Caller } from '#core/tenancy/tenancy';
import { InMemoryAgentStore, InMemoryKnowledgeBaseStore } from '../../../helpers/in-memory-ports';

const AT = '2026-11-29T00:00:00.000Z';
let deps: { agents: InMemoryAgentStore; knowledgeBases: InMemoryKnowledgeBaseStore };
const whole: Caller = { organizationId: 'org-a', tokenId: 't', scopes: ['dashboard'] };

beforeEach(async () => {
  deps = { agents: new InMemoryAgentStore(), knowledgeBases: new InMemoryKnowledgeBaseStore() };
  for (const [organizationId, agentId, displayName] of [
    ['org-a', 'agent-1', 'Support'],
    ['org-a', 'agent-2', 'Sales'],
    ['org-b', 'agent-3', 'Other'],
  ]) {
    await deps.agents.put({ organizationId, agentId, displayName, createdAt: AT });
  }
  for (const [organizationId, agentId, knowledgeBaseId, status] of [
    ['org-a', 'agent-1', 'kb-1', undefined],
    ['org-a', 'agent-1', 'kb-gone', 'deleting'],
    ['org-a', 'agent-2', 'kb-2', undefined],
    ['org-b', 'agent-3', 'kb-3', undefined],
  ] as const) {
    await deps.knowledgeBases.put({
      organizationId,
      agentId,
      knowledgeBaseId,
      name: knowledgeBaseId,
      description: null,
      createdAt: AT,
      updatedAt: AT,
      ...(status ? { status } : {}),
    });
  }
});

const ids = (list: { knowledgeBaseId: string }[]) => list.map((kb) => kb.knowledgeBaseId).sort();

it('lists the knowledge bases of every agent of the organization, with the agent’s name, none being deleted', async () => {
  const list = await listVisibleKnowledgeBases(deps, whole);
  expect(ids(list)).toEqual(['kb-1', 'kb-2']);
  expect(list.find((kb) => kb.knowledgeBaseId === 'kb-1')).toEqual({
    knowledgeBaseId: 'kb-1',
    agentId: 'agent-1',
    agentName: 'Support',
    name: 'kb-1',
    description: null,
    createdAt: AT,
    updatedAt: AT,
  });
});

it('keeps a token restricted to agents to those agents, and refuses it another as not found', async () => {
  const restricted: Caller = { ...whole, agentIds: ['agent-2'] };
  expect(ids(await listVisibleKnowledgeBases(deps, restricted))).toEqual(['kb-2']);
  await expect(listVisibleKnowledgeBases(deps, restricted, { agentId: 'agent-1' })).rejects.toMatchObject({
    code: 'AGENT_NOT_FOUND',
  });
});

it('lists one agent’s when asked, and another organization’s agent is not found', async () => {
  expect(ids(await listVisibleKnowledgeBases(deps, whole, { agentId: 'agent-1' }))).toEqual(['kb-1']);
  await expect(listVisibleKnowledgeBases(deps, whole, { agentId: 'agent-3' })).rejects.toMatchObject({
    code: 'AGENT_NOT_FOUND',
  });
});
