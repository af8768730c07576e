/**
 * Issue 14, goal 0: a score depends on the dataset queried alone (agent, environment, knowledge base). Before each
 * dataset had a BM25 index of its own, one organization's uploads moved every other organization's scores: "zorblax
 * valve" scored 0.122 over two documents of organization A and 0.006 once organization B had 40 documents holding
 * "zorblax" (a side channel, and a noisy neighbour pushing results under their minScore).
 */
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, DEFAULT_TOKENS, startService, type TestService } from '../helpers/service';

let service: TestService;
let orgA: ReturnType<typeof client>;
let orgB: ReturnType<typeof client>;
let datasetA: Dataset;

interface QueryBody {
  results: { content: string; score: number; metadata: { documentId: string } }[];
}

const QUERY = 'zorblax valve';

async function uploadAllReady(call: ReturnType<typeof client>, dataset: Dataset, texts: string[]): Promise<void> {
  const keys: string[] = [];
  // Ten at a time: as a client would, without queueing a hundred requests at once.
  for (let first = 0; first < texts.length; first += 10) {
    const uploads = await Promise.all(
      texts
        .slice(first, first + 10)
        .map((text, i) => uploadDocument(call, dataset, { fileName: `doc-${first + i}.txt` }, text)),
    );
    keys.push(...uploads.map(({ link }) => link.s3Key));
  }
  for (const s3Key of keys) {
    const last = await pollUntil(
      () => call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key } }),
      (r) => r.body.status === 'ready' || r.body.status === 'failed',
      60_000,
    );
    expect(last.body.status).toBe('ready');
  }
}

async function query(call: ReturnType<typeof client>, dataset: Dataset): Promise<QueryBody['results']> {
  const response = await call<QueryBody>(
    'POST',
    `/dashboard/agents/${dataset.agentId}/knowledge/${dataset.environment}/kb/${dataset.knowledgeBaseId}/query`,
    { body: { query: QUERY, numberOfResults: 5 } },
  );
  expect(response.status).toBe(200);
  return response.body.results;
}

/** 40 documents that all hold "zorblax" (and some "valve"), which would lower its idf in a shared index. */
const neighbours = (who: string) =>
  Array.from(
    { length: 40 },
    (_, i) => `${who} note ${i}: the zorblax ${i % 4 === 0 ? 'valve ' : ''}is checked every ${i + 1} days by the crew.`,
  );

beforeAll(async () => {
  service = await startService();
  orgA = client(service, DEFAULT_TOKENS[0]);
  orgB = client(service, DEFAULT_TOKENS[1]);
  datasetA = await createDataset(orgA);
  await uploadAllReady(orgA, datasetA, [
    'The zorblax valve regulates the coolant pressure of the pump.',
    'Replace the gasket of the intake every year.',
  ]);
}, 120_000);
afterAll(() => service?.stop());

describe('a score belongs to the dataset queried', () => {
  let before: QueryBody['results'];

  beforeAll(async () => {
    before = await query(orgA, datasetA);
  });

  const same = async () => {
    const after = await query(orgA, datasetA);
    expect(after.map((r) => r.metadata.documentId)).toEqual(before.map((r) => r.metadata.documentId));
    for (const [i, result] of after.entries()) expect(result.score).toBeCloseTo(before[i].score, 10);
  };

  it('finds organization A own document first', () => {
    expect(before[0].content).toContain('zorblax valve');
    expect(before[0].score).toBeGreaterThan(0);
  });

  it('does not move when another organization indexes 40 documents holding the query terms', async () => {
    const datasetB = await createDataset(orgB);
    await uploadAllReady(orgB, datasetB, neighbours('B'));
    // B's documents are indexed and found in B's own dataset, with B's own statistics.
    const inB = await query(orgB, datasetB);
    expect(inB).toHaveLength(5);
    expect(inB.every((r) => r.content.startsWith('B note'))).toBe(true);
    await same();
  }, 120_000);

  it('does not move when the same agent indexes them in another environment', async () => {
    await uploadAllReady(orgA, { ...datasetA, environment: 'development' }, neighbours('Dev'));
    await same();
  }, 120_000);

  it('does not move when the same agent indexes them in another knowledge base', async () => {
    const kb = await orgA<{ knowledgeBaseId: string }>(
      'POST',
      `/dashboard/agents/${datasetA.agentId}/knowledge/bases`,
      {
        body: { name: 'Crew notes' },
      },
    );
    expect(kb.status).toBe(201);
    await uploadAllReady(orgA, { ...datasetA, knowledgeBaseId: kb.body.knowledgeBaseId }, neighbours('Crew'));
    await same();
  }, 120_000);
});
