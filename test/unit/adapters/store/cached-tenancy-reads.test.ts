/**
 * CachedTenancyReads (lambdas/adapters/store/cached-tenancy-reads.ts): the agent and knowledge base checks of the
 * customer API's reads and retrieval, through the containers' read caches. Neither record kept: one read of both,
 * then kept; both kept: no read; one kept: the other's read alone; a miss, a write while the read ran, and an
 * expired entry are never answered from the cache. Also through requireKnowledgeBase, as the routes call it.
 */
import { CachedTenancyReads } from '#adapters/store/cached-tenancy-reads';
import { READ_CACHE_TTL_MS, readCache } from '#adapters/store/read-cache';
import { requireKnowledgeBase } from '#core/tenancy/tenancy';
import type { AgentRecord, KnowledgeBaseRecord, TenancyReads } from '#ports/stores';

const ORG = 'org-1';
const agentOf = (agentId: string): AgentRecord => ({
  organizationId: ORG,
  agentId,
  displayName: agentId,
  createdAt: '2026-11-29T00:00:00.000Z',
});
const baseOf = (agentId: string, knowledgeBaseId: string): KnowledgeBaseRecord => ({
  organizationId: ORG,
  agentId,
  knowledgeBaseId,
  name: knowledgeBaseId,
  description: null,
  createdAt: '2026-11-29T00:00:00.000Z',
  updatedAt: '2026-11-29T00:00:00.000Z',
});

/** The records, and every read of them counted by the way it was made. */
function world() {
  const agents = new Map<string, AgentRecord>([['a1', agentOf('a1')]]);
  const bases = new Map<string, KnowledgeBaseRecord>([
    ['a1/kb1', baseOf('a1', 'kb1')],
    ['a1/kb2', baseOf('a1', 'kb2')],
  ]);
  const counts = { agentGets: 0, baseGets: 0, batches: 0 };
  let duringBatch: (() => void) | undefined;
  const agentStore = {
    async get(organizationId: string, agentId: string) {
      counts.agentGets++;
      return organizationId === ORG ? agents.get(agentId) : undefined;
    },
    async rename(agentId: string, displayName: string) {
      agents.set(agentId, { ...(agents.get(agentId) as AgentRecord), displayName });
    },
  };
  const baseStore = {
    async get(agentId: string, knowledgeBaseId: string) {
      counts.baseGets++;
      return bases.get(`${agentId}/${knowledgeBaseId}`);
    },
  };
  const batch: TenancyReads = {
    async agentAndKnowledgeBase(organizationId, agentId, knowledgeBaseId) {
      counts.batches++;
      const both = {
        agent: organizationId === ORG ? agents.get(agentId) : undefined,
        knowledgeBase: bases.get(`${agentId}/${knowledgeBaseId}`),
      };
      duringBatch?.();
      return both;
    },
  };
  let clock = 0;
  const agentCache = readCache(agentStore, { cached: ['get'], uncached: [], now: () => clock });
  const baseCache = readCache(baseStore, { cached: ['get'], uncached: [], now: () => clock });
  const reads = new CachedTenancyReads(batch, agentCache, baseCache);
  return {
    reads,
    counts,
    agents,
    bases,
    agentCache,
    baseCache,
    advance: (ms: number) => {
      clock += ms;
    },
    whileBatchReads: (action: () => void) => {
      duringBatch = action;
    },
  };
}

test('neither record kept: one read of both, then both answered from the caches', async () => {
  const w = world();
  expect(await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb1')).toEqual({
    agent: agentOf('a1'),
    knowledgeBase: baseOf('a1', 'kb1'),
  });
  expect(w.counts).toEqual({ agentGets: 0, baseGets: 0, batches: 1 });
  await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb1');
  // The cached views (requireAgent's and a knowledge base's get) find what the batch read.
  expect(await w.agentCache.cached.get(ORG, 'a1')).toEqual(agentOf('a1'));
  expect(await w.baseCache.cached.get('a1', 'kb1')).toEqual(baseOf('a1', 'kb1'));
  expect(w.counts).toEqual({ agentGets: 0, baseGets: 0, batches: 1 });
});

test('the agent kept and the knowledge base not: only the knowledge base is read', async () => {
  const w = world();
  await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb1');
  expect(await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb2')).toEqual({
    agent: agentOf('a1'),
    knowledgeBase: baseOf('a1', 'kb2'),
  });
  expect(w.counts).toEqual({ agentGets: 0, baseGets: 1, batches: 1 });
});

test('a missing knowledge base is not kept: it is read again, and found once it exists', async () => {
  const w = world();
  expect((await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb3')).knowledgeBase).toBeUndefined();
  expect((await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb3')).knowledgeBase).toBeUndefined();
  expect(w.counts).toEqual({ agentGets: 0, baseGets: 1, batches: 1 });
  w.bases.set('a1/kb3', baseOf('a1', 'kb3'));
  expect((await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb3')).knowledgeBase).toEqual(baseOf('a1', 'kb3'));
});

test('another organization is not answered with what one organization read', async () => {
  const w = world();
  await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb1');
  expect((await w.reads.agentAndKnowledgeBase('org-2', 'a1', 'kb1')).agent).toBeUndefined();
  expect(w.counts.agentGets).toBe(1);
});

test('what was read while a write went through the same store is not kept', async () => {
  const w = world();
  w.whileBatchReads(() => {
    void w.agentCache.cached.rename('a1', 'Renamed');
  });
  await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb1');
  w.whileBatchReads(() => {});
  expect((await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb1')).agent?.displayName).toBe('Renamed');
  expect(w.counts.batches + w.counts.agentGets).toBe(2);
});

test('an entry older than the cache keeps one is read again', async () => {
  const w = world();
  await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb1');
  w.advance(READ_CACHE_TTL_MS + 1);
  await w.reads.agentAndKnowledgeBase(ORG, 'a1', 'kb1');
  expect(w.counts.batches).toBe(2);
});

test('requireKnowledgeBase with these reads: one read for the first request, none for the next', async () => {
  const w = world();
  const deps = { agents: w.agentCache.cached, knowledgeBases: w.baseCache.cached as never, tenancyReads: w.reads };
  const caller = { organizationId: ORG } as Parameters<typeof requireKnowledgeBase>[1];
  expect(await requireKnowledgeBase(deps, caller, 'a1', 'kb1')).toEqual(baseOf('a1', 'kb1'));
  expect(await requireKnowledgeBase(deps, caller, 'a1', 'kb1')).toEqual(baseOf('a1', 'kb1'));
  expect(w.counts).toEqual({ agentGets: 0, baseGets: 0, batches: 1 });
  await expect(requireKnowledgeBase(deps, caller, 'a1', 'kb9')).rejects.toMatchObject({
    code: 'KNOWLEDGE_BASE_NOT_FOUND',
  });
});
