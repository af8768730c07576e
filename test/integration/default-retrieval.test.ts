/** Default retrieval per environment: configuration round trip, its rules, and the system message it injects. */
import { createDataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;

beforeAll(async () => {
  service = await startService();
  call = client(service);
});
afterAll(() => service?.stop());

interface Preview {
  systemMessage: string | null;
  results: {
    content: string;
    score: number;
    knowledgeBaseId: string;
    environment: string;
    metadata: { label1: string | null };
  }[];
}

it('is off until configured, then injects the results of every configured knowledge base as one system message', async () => {
  const dataset = await createDataset(call, 'production');
  const config = `/dashboard/agents/${dataset.agentId}/retrieval/production`;
  expect((await call('GET', config)).body).toMatchObject({ enabled: false, knowledgeBases: [] });
  expect(
    (await call<Preview>('POST', `${config}/preview`, { body: { query: 'router' } })).body.systemMessage,
  ).toBeNull();

  for (const [fileName, label1, text] of [
    ['gold.txt', 'tier:gold', 'Gold customers get a replacement router the next day.'],
    ['silver.txt', 'tier:silver', 'Silver customers get a replacement router within a week.'],
  ]) {
    const { link } = await uploadDocument(call, dataset, { fileName, label1 }, text);
    await pollUntil(
      () =>
        call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key: link.s3Key } }),
      (r) => r.body.status === 'ready',
    );
  }

  const put = await call('PUT', config, {
    body: {
      enabled: true,
      knowledgeBases: [
        {
          knowledgeBaseId: dataset.knowledgeBaseId,
          numberOfResults: 3,
          minScore: 0.01,
          filters: [{ key: 'label1', operator: 'equals', value: '{state.memory.customer.tier}' }],
        },
      ],
    },
  });
  expect(put.status).toBe(200);
  expect((await call('GET', config)).body).toMatchObject({ enabled: true, knowledgeBases: [{ numberOfResults: 3 }] });

  const gold = await call<Preview>('POST', `${config}/preview`, {
    body: { query: 'replacement router', memory: { customer: { tier: 'tier:gold' } } },
  });
  expect(gold.body.results.map((r) => r.metadata.label1)).toEqual(['tier:gold']);
  // A score between 0 and 1 with two decimals: what it is depends on the index (BM25 here, cosine in Bedrock).
  expect(gold.body.systemMessage).toMatch(
    /^Relevant knowledge \(use it to answer; it may be incomplete\):\n\[1\] \(document [^,]+, score (0\.\d\d|1\.00)\) Gold customers/,
  );

  // No tier in memory: the filter entry is skipped and both documents can come back.
  const anyone = await call<Preview>('POST', `${config}/preview`, {
    body: { query: 'replacement router', memory: {} },
  });
  expect(anyone.body.results.map((r) => r.metadata.label1).sort()).toEqual(['tier:gold', 'tier:silver']);
  expect(
    anyone.body.results.every((r) => r.environment === 'production' && r.knowledgeBaseId === dataset.knowledgeBaseId),
  ).toBe(true);
});

it('refuses a knowledge base that is not the agent’s, and bad fields, naming them', async () => {
  const mine = await createDataset(call);
  const theirs = await createDataset(client(service, service.tokens[1]));
  const response = await call('PUT', `/dashboard/agents/${mine.agentId}/retrieval/staging`, {
    body: {
      enabled: true,
      knowledgeBases: [{ knowledgeBaseId: mine.knowledgeBaseId }, { knowledgeBaseId: theirs.knowledgeBaseId }],
    },
  });
  expect(response.status).toBe(400);
  expect(response.body).toMatchObject({
    error: { details: [{ field: 'knowledgeBases.1.knowledgeBaseId', rule: 'knowledgeBase.exists' }] },
  });

  const bad = await call('PUT', `/dashboard/agents/${mine.agentId}/retrieval/staging`, {
    body: {
      enabled: 'yes',
      knowledgeBases: [
        {
          knowledgeBaseId: mine.knowledgeBaseId,
          minScore: 2,
          filters: [{ key: 'customMeta2', operator: 'equals', value: 'x' }],
        },
      ],
    },
  });
  expect(bad.status).toBe(400);
  const fields = (bad.body as { error: { details: { field: string; rule: string }[] } }).error.details.map(
    (d) => `${d.field}:${d.rule}`,
  );
  expect(fields).toEqual(
    expect.arrayContaining([
      'enabled:type',
      'knowledgeBases.0.minScore:max',
      'knowledgeBases.0.filters.0.key:filter.notFilterable',
    ]),
  );
  expect((await call('GET', `/dashboard/agents/${mine.agentId}/retrieval/live`)).status).toBe(400);
  expect(
    (await client(service, service.tokens[1])('GET', `/dashboard/agents/${mine.agentId}/retrieval/staging`)).status,
  ).toBe(404);
});
