/**
 * The retrieval endpoint through the local runtime: label filters, memory placeholders, minScore, explain,
 * custom metadata in every result, and tenant isolation whatever the filter.
 */
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;
let other: Dataset;

interface Result {
  content: string;
  score: number;
  metadata: {
    documentId: string;
    s3Key: string;
    label1: string | null;
    label2: string | null;
    svc_internal_meta1: string | null;
  };
}
interface QueryBody {
  results: Result[];
  explain?: {
    filters: unknown[];
    skippedFilters: { index: number; reason: string }[];
    backendFilter: string;
    retrieval: string;
    candidates: { score: number; kept: boolean }[];
  };
}

const queryPath = (d: Dataset) =>
  `/dashboard/agents/${d.agentId}/knowledge/${d.environment}/kb/${d.knowledgeBaseId}/query`;

async function ready(d: Dataset, s3Key: string) {
  await pollUntil(
    () => call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...d, s3Key } }),
    (r) => r.body.status === 'ready',
  );
}

beforeAll(async () => {
  service = await startService();
  call = client(service);
  dataset = await createDataset(call);
  other = await createDataset(call);
  const docs = [
    {
      fileName: 'billing.txt',
      label1: 'team:billing',
      label2: 'tier:gold',
      customMeta1: 'owner=finance',
      text: 'Refunds for the router are paid within ten days by the billing team.',
    },
    {
      fileName: 'support.txt',
      label1: 'team:support',
      label2: 'tier:silver',
      customMeta1: 'owner=support',
      text: 'Router resets are handled by the support team within one day.',
    },
    { fileName: 'misc.txt', text: 'The router ships with a power cable and a quick start guide.' },
  ];
  for (const { text, ...fields } of docs) {
    const { link } = await uploadDocument(call, dataset, fields, text);
    await ready(dataset, link.s3Key);
  }
  const { link } = await uploadDocument(
    call,
    other,
    { fileName: 'secret.txt', label1: 'team:billing' },
    'Router refunds secret of another knowledge base.',
  );
  await ready(other, link.s3Key);
});
afterAll(() => service?.stop());

it('returns chunks with their labels and custom metadata, scores in 0..1, best first', async () => {
  const response = await call<QueryBody>('POST', queryPath(dataset), { body: { query: 'router refunds billing' } });
  expect(response.status).toBe(200);
  const { results } = response.body;
  expect(results.length).toBeGreaterThan(0);
  expect(results[0].content).toContain('Refunds');
  expect(results[0].metadata).toMatchObject({
    label1: 'team:billing',
    label2: 'tier:gold',
    svc_internal_meta1: 'owner=finance',
  });
  for (const r of results) expect(r.score).toBeGreaterThanOrEqual(0);
  for (const r of results) expect(r.score).toBeLessThanOrEqual(1);
  expect(results.map((r) => r.score)).toEqual([...results.map((r) => r.score)].sort((a, b) => b - a));
  expect(results.some((r) => r.content.includes('another knowledge base'))).toBe(false);
});

it('keeps only chunks that match a label filter', async () => {
  const response = await call<QueryBody>('POST', queryPath(dataset), {
    body: { query: 'router team', filters: [{ key: 'label1', operator: 'equals', value: 'team:support' }] },
  });
  expect(response.body.results.length).toBeGreaterThan(0);
  expect(response.body.results.every((r) => r.metadata.label1 === 'team:support')).toBe(true);

  const notEquals = await call<QueryBody>('POST', queryPath(dataset), {
    body: { query: 'router', filters: [{ key: 'label1', operator: 'notEquals', value: 'team:support' }] },
  });
  // notEquals also matches chunks without the label, as Bedrock's does.
  expect(notEquals.body.results.map((r) => r.metadata.label1).sort()).toEqual([null, 'team:billing']);
});

it('resolves a memory placeholder, and skips the entry when the memory value is missing', async () => {
  const filters = [{ key: 'label1', operator: 'equals', value: '{state.memory.user.team}' }];
  const resolved = await call<QueryBody>('POST', queryPath(dataset), {
    body: { query: 'router', filters, memory: { user: { team: 'team:billing' } }, explain: true },
  });
  expect(resolved.body.results.map((r) => r.metadata.label1)).toEqual(['team:billing']);
  expect(resolved.body.explain?.filters).toEqual([{ key: 'label1', operator: 'equals', value: 'team:billing' }]);

  const skipped = await call<QueryBody>('POST', queryPath(dataset), {
    body: { query: 'router', filters, memory: {}, explain: true },
  });
  expect(skipped.body.results).toHaveLength(3);
  expect(skipped.body.explain?.skippedFilters).toEqual([
    expect.objectContaining({ index: 0, reason: 'memory.user.team is undefined' }),
  ]);
});

it('drops results under minScore and explains each candidate, the backend filter and the method', async () => {
  const all = await call<QueryBody>('POST', queryPath(dataset), { body: { query: 'router refunds', explain: true } });
  const scores = all.body.results.map((r) => r.score);
  const threshold = (scores[0] + scores[scores.length - 1]) / 2;
  const cut = await call<QueryBody>('POST', queryPath(dataset), {
    body: { query: 'router refunds', minScore: threshold, explain: true },
  });
  expect(cut.body.results.length).toBeLessThan(all.body.results.length);
  expect(cut.body.results.every((r) => r.score >= threshold)).toBe(true);
  const explain = cut.body.explain;
  expect(explain?.retrieval).toBe('lexical');
  // A string locally (LanceDB's table and where clause), an object on the DynamoDB chunk index and on Bedrock.
  expect(JSON.stringify(explain?.backendFilter)).toContain(dataset.knowledgeBaseId);
  expect(explain?.candidates.filter((c) => !c.kept).every((c) => c.score < threshold)).toBe(true);
  expect(explain?.candidates.filter((c) => c.kept)).toHaveLength(cut.body.results.length);
});

it('never returns another knowledge base chunk, whatever the filter', async () => {
  for (const filters of [
    [],
    [{ key: 'label1', operator: 'equals', value: 'team:billing' }],
    [{ key: 'label1', operator: 'notEquals', value: "x' OR 1=1 --" }],
    [{ key: 'label1', operator: 'greaterThan', value: '' }],
  ]) {
    const response = await call<QueryBody>('POST', queryPath(dataset), {
      body: { query: 'secret refunds router', filters },
    });
    expect(response.status).toBe(200);
    expect(response.body.results.some((r) => r.content.includes('another knowledge base'))).toBe(false);
  }
});

it('answers 400 for a custom metadata filter, and 404 across organizations', async () => {
  const bad = await call('POST', queryPath(dataset), {
    body: { query: 'router', filters: [{ key: 'customMeta1', operator: 'equals', value: 'owner=finance' }] },
  });
  expect(bad.status).toBe(400);
  expect(bad.body).toMatchObject({ error: { details: [{ field: 'filters.0.key', rule: 'filter.notFilterable' }] } });
  const stranger = client(service, service.tokens[1]);
  const response = await stranger('POST', queryPath(dataset), { body: { query: 'router' } });
  expect(response.status).toBe(404);
});

interface GenerateBody extends QueryBody {
  answer: string;
  model: string;
  citations: { resultIndex: number; documentId: string; chunkId: string; sentence?: string }[];
}

it('generates an answer whose citations point at real retrieved chunks', async () => {
  const path = queryPath(dataset).replace(/\/query$/, '/generate');
  const response = await call<GenerateBody>('POST', path, { body: { query: 'How fast are router refunds paid?' } });
  expect(response.status).toBe(200);
  const { answer, citations, results, model } = response.body;
  expect(model).toBe('extractive');
  expect(answer).toContain('ten days');
  expect(citations.length).toBeGreaterThan(0);
  for (const citation of citations) {
    const cited = results[citation.resultIndex];
    expect(cited).toBeDefined();
    expect(cited.metadata).toMatchObject({ documentId: citation.documentId });
    if (citation.sentence) expect(cited.content).toContain(citation.sentence);
  }

  const none = await call<GenerateBody>('POST', path, {
    body: { query: 'router', filters: [{ key: 'label1', operator: 'equals', value: 'team:nobody' }] },
  });
  expect(none.body).toMatchObject({
    results: [],
    citations: [],
    answer: 'I could not find this in the knowledge base.',
  });
});
