import {
  getRetrievalConfig,
  putRetrievalConfig,
  removeFromDefaultRetrieval,
  runDefaultRetrieval,
} from '#core/retrieval/default-retrieval';
import type { RetrievalConfigRecord } from '#core/retrieval/retrieval-config';
import { FixedHitsIndex, InMemoryRetrievalConfigStore, inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';

async function setUp() {
  const knowledge = inMemoryKnowledgeDeps();
  const tenant = await knowledge.tenant('org-a', 'faq');
  const second = await knowledge.tenantKnowledgeBase(tenant, 'kb-manuals');
  const index = new FixedHitsIndex();
  // The index's hits name documents that have no records here: retrieval is not to drop them as deleted.
  const { documents: _records, ...stores } = knowledge.allDeps;
  const deps = { ...stores, index, embedder: null };
  return { knowledge, tenant, second, index, deps };
}

describe('default retrieval configuration', () => {
  it('is off for an environment never configured', async () => {
    const { deps, tenant } = await setUp();

    await expect(getRetrievalConfig(deps, tenant.caller, tenant.agentId, 'staging')).resolves.toEqual({
      agentId: tenant.agentId,
      environment: 'staging',
      enabled: false,
      knowledgeBases: [],
      updatedAt: null,
    });
  });

  it("stores a configuration naming the agent's knowledge bases, stamped with the clock", async () => {
    const { deps, tenant, knowledge } = await setUp();

    const stored = await putRetrievalConfig(deps, tenant.caller, tenant.agentId, 'production', {
      enabled: true,
      knowledgeBases: [{ knowledgeBaseId: tenant.knowledgeBaseId, numberOfResults: 3 }],
    });

    expect(stored).toMatchObject({ environment: 'production', updatedAt: '2026-01-01T00:00:00.000Z' });
    expect(await getRetrievalConfig(deps, tenant.caller, tenant.agentId, 'production')).toEqual(stored);
    expect(knowledge.retrievalConfigs.records.size).toBe(1);
  });

  it("refuses, naming each entry, knowledge bases that are not the agent's or are being deleted", async () => {
    const { deps, tenant, second, knowledge } = await setUp();
    const other = await knowledge.tenant('org-b');
    await knowledge.knowledgeBases.markDeleting(
      tenant.agentId,
      second.knowledgeBaseId,
      { startedAt: 'x', page: 0, defaultRetrievalChanged: [] },
      'x',
    );

    await expect(
      putRetrievalConfig(deps, tenant.caller, tenant.agentId, 'production', {
        enabled: true,
        knowledgeBases: [
          { knowledgeBaseId: tenant.knowledgeBaseId },
          { knowledgeBaseId: other.knowledgeBaseId },
          { knowledgeBaseId: second.knowledgeBaseId },
        ],
      }),
    ).rejects.toMatchObject({
      status: 400,
      details: [
        { field: 'knowledgeBases.1.knowledgeBaseId', rule: 'knowledgeBase.exists' },
        { field: 'knowledgeBases.2.knowledgeBaseId', rule: 'knowledgeBase.exists' },
      ],
    });
    expect(knowledge.retrievalConfigs.records.size).toBe(0);
  });

  it('removes a knowledge base from every environment that names it, and reports those environments', async () => {
    const { deps, tenant, second, knowledge } = await setUp();
    for (const environment of ['development', 'production'] as const) {
      await knowledge.retrievalConfigs.put({
        agentId: tenant.agentId,
        environment,
        enabled: true,
        knowledgeBases: [{ knowledgeBaseId: tenant.knowledgeBaseId }, { knowledgeBaseId: second.knowledgeBaseId }],
        updatedAt: '2026-01-01T00:00:00.000Z',
      });
    }
    knowledge.clock.advanceSeconds(1);

    const changed = await removeFromDefaultRetrieval(deps, tenant.agentId, tenant.knowledgeBaseId);

    expect(changed).toEqual(['development', 'production']);
    const production = await knowledge.retrievalConfigs.get(tenant.agentId, 'production');
    expect(production?.knowledgeBases).toEqual([{ knowledgeBaseId: second.knowledgeBaseId }]);
    expect(production?.updatedAt).toBe('2026-01-01T00:00:01.000Z');
  });

  it('reads a configuration changed meanwhile again instead of overwriting the change', async () => {
    const { tenant, second, knowledge } = await setUp();
    const configs = new InMemoryRetrievalConfigStore();
    const initial: RetrievalConfigRecord = {
      agentId: tenant.agentId,
      environment: 'staging',
      enabled: true,
      knowledgeBases: [{ knowledgeBaseId: tenant.knowledgeBaseId }],
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    await configs.put(initial);
    // A PUT lands between the first read and its conditional write: it adds a knowledge base.
    const realGet = configs.get.bind(configs);
    let reads = 0;
    configs.get = async (agentId, environment) => {
      const record = await realGet(agentId, environment);
      if (environment === 'staging' && ++reads === 1) {
        await configs.put({
          ...initial,
          knowledgeBases: [...initial.knowledgeBases, { knowledgeBaseId: second.knowledgeBaseId }],
          updatedAt: '2026-01-01T00:00:00.500Z',
        });
      }
      return record;
    };

    await removeFromDefaultRetrieval(
      { retrievalConfigs: configs, clock: knowledge.clock },
      tenant.agentId,
      tenant.knowledgeBaseId,
    );

    expect((await realGet(tenant.agentId, 'staging'))?.knowledgeBases).toEqual([
      { knowledgeBaseId: second.knowledgeBaseId },
    ]);
    expect(reads).toBe(2);
  });
});

describe('runDefaultRetrieval', () => {
  it('answers no message when default retrieval is off', async () => {
    const { deps, tenant, index } = await setUp();

    const outcome = await runDefaultRetrieval(deps, tenant.caller, {
      agentId: tenant.agentId,
      environment: 'development',
      query: 'refunds',
    });

    expect(outcome).toEqual({ systemMessage: null, results: [], explain: { warnings: [] } });
    expect(index.queries).toEqual([]);
  });

  it('merges the knowledge bases best first, drops hits under minScore, and formats one system message', async () => {
    const { deps, tenant, second, index, knowledge } = await setUp();
    index.setHits(tenant.dataset, [
      { documentId: 'doc-a', text: 'Refunds  take\n5 days.', score: 0.62 },
      { documentId: 'doc-b', text: 'Weak match', score: 0.2 },
    ]);
    index.setHits(second.dataset, [{ documentId: 'doc-m', text: 'Manual: refunds page', score: 0.9 }]);
    await knowledge.retrievalConfigs.put({
      agentId: tenant.agentId,
      environment: 'development',
      enabled: true,
      knowledgeBases: [
        { knowledgeBaseId: tenant.knowledgeBaseId, minScore: 0.5 },
        { knowledgeBaseId: second.knowledgeBaseId, numberOfResults: 2 },
      ],
      updatedAt: '2026-01-01T00:00:00.000Z',
    });

    const outcome = await runDefaultRetrieval(deps, tenant.caller, {
      agentId: tenant.agentId,
      environment: 'development',
      query: 'refunds',
    });

    expect(outcome.systemMessage).toBe(
      [
        'Relevant knowledge (use it to answer; it may be incomplete):',
        '[1] (document doc-m, score 0.90) Manual: refunds page',
        '[2] (document doc-a, score 0.62) Refunds take 5 days.',
      ].join('\n'),
    );
    expect(outcome.results.map((r) => [r.knowledgeBaseId, r.metadata.documentId])).toEqual([
      [second.knowledgeBaseId, 'doc-m'],
      [tenant.knowledgeBaseId, 'doc-a'],
    ]);
    expect(index.queries.map((q) => [q.scope.knowledgeBaseId, q.text, q.limit])).toEqual([
      [tenant.knowledgeBaseId, 'refunds', 5],
      [second.knowledgeBaseId, 'refunds', 2],
    ]);
  });

  it('skips a configured knowledge base that no longer exists, says so, and still answers from the others', async () => {
    const { deps, tenant, index, knowledge } = await setUp();
    index.setHits(tenant.dataset, [{ documentId: 'doc-a', text: 'Answer', score: 0.7 }]);
    await knowledge.retrievalConfigs.put({
      agentId: tenant.agentId,
      environment: 'development',
      enabled: true,
      knowledgeBases: [
        { knowledgeBaseId: 'kb-gone', environment: 'staging' },
        { knowledgeBaseId: tenant.knowledgeBaseId },
      ],
      updatedAt: '2026-01-01T00:00:00.000Z',
    });

    const outcome = await runDefaultRetrieval(deps, tenant.caller, {
      agentId: tenant.agentId,
      environment: 'development',
      query: 'q',
    });

    expect(outcome.explain.warnings).toEqual([
      {
        code: 'KNOWLEDGE_BASE_NOT_FOUND',
        knowledgeBaseId: 'kb-gone',
        environment: 'staging',
        message: 'knowledge base kb-gone (staging) no longer exists and was skipped',
      },
    ]);
    expect(outcome.systemMessage?.split('\n').slice(1)).toEqual([
      '[1] (document doc-a, score 0.70) Answer',
      'Not searched: knowledge base kb-gone (staging) no longer exists.',
    ]);
  });

  it("does not search another organization's agent: it fails as that agent not found", async () => {
    const { deps, tenant, index, knowledge } = await setUp();
    const other = await knowledge.tenant('org-b');
    await knowledge.retrievalConfigs.put({
      agentId: tenant.agentId,
      environment: 'development',
      enabled: true,
      knowledgeBases: [{ knowledgeBaseId: tenant.knowledgeBaseId }],
      updatedAt: '2026-01-01T00:00:00.000Z',
    });

    await expect(
      runDefaultRetrieval(deps, other.caller, { agentId: tenant.agentId, environment: 'development', query: 'q' }),
    ).rejects.toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND' });
    expect(index.queries).toEqual([]);
  });
});
