/**
 * Hybrid retrieval on the local runtime with EMBEDDER=openai-compatible, against a scripted `/v1/embeddings` server
 * over real HTTP: documents uploaded through the API are embedded while processing, queries while retrieving; a
 * query whose words are not in a document finds it by its vector; the embedder's failures are transient while
 * processing and a 502/504 while querying, and never show the key.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  json,
  SCRIPTED_DIMENSIONS,
  type ScriptedEmbeddingsServer,
  startEmbeddingsServer,
} from '../helpers/embeddings-server';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

const MODEL = 'scripted-embed';
const KEY = 'sk-integration-embedder-secret-42';

let embeddings: ScriptedEmbeddingsServer;
let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;

interface QueryBody {
  results: { content: string; score: number; metadata: { documentId: string } }[];
  explain?: {
    retrieval: string;
    candidates: { documentId: string; score: number; lexicalScore?: number; vectorScore?: number }[];
  };
}
interface ErrorBody {
  success: false;
  error: { code: string; message: string };
}

const queryPath = (d: Dataset) =>
  `/dashboard/agents/${d.agentId}/knowledge/${d.environment}/kb/${d.knowledgeBaseId}/query`;

const statusOf = (s3Key: string) =>
  call<{ status: string; documentId: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key } });

async function uploadReady(fileName: string, text: string): Promise<string> {
  const { link } = await uploadDocument(call, dataset, { fileName }, text);
  const document = await pollUntil(
    () => statusOf(link.s3Key),
    (r) => r.body.status === 'ready',
  );
  expect(document.body.status).toBe('ready');
  return document.body.documentId;
}

const documents: Record<string, string> = {};

beforeAll(async () => {
  embeddings = await startEmbeddingsServer({ model: MODEL, apiKey: KEY });
  service = await startService({
    env: {
      EMBEDDER: 'openai-compatible',
      EMBEDDER_BASE_URL: embeddings.baseUrl,
      EMBEDDER_MODEL: MODEL,
      EMBEDDER_API_KEY: KEY,
      EMBEDDER_TIMEOUT_MS: '2000',
      // A failed processing attempt comes back after 3 s rather than 60.
      PROCESSING_VISIBILITY_TIMEOUT_SECONDS: '3',
    },
  });
  call = client(service);
  dataset = await createDataset(call);
  // Only the first shares a concept with "reimbursement" (refund: refunds, repay, money); only the second holds
  // the word "policy".
  documents.refunds = await uploadReady(
    'refunds.txt',
    'Refunds: we repay the money of a refunded order within ten days.',
  );
  documents.privacy = await uploadReady('privacy.txt', 'Our privacy policy says which router logs are kept.');
  documents.resets = await uploadReady('resets.txt', 'Router resets are handled by the support team within one day.');
});

afterEach(() => embeddings.script(null));

afterAll(async () => {
  await service?.stop();
  await embeddings?.close();
});

it('learned the dimensions from the server at start and keeps the model’s vectors in a table of their own', () => {
  const tables = readdirSync(join(service.dataDir as string, 'index'));
  expect(tables).toContainEqual(
    expect.stringMatching(new RegExp(`^chunks_vec${SCRIPTED_DIMENSIONS}_openai-compatible-${MODEL}_`)),
  );
});

it('embeds every chunk while processing, in batches sent with the key', () => {
  const inputs = embeddings.requests.flatMap((r) => r.body?.input as string[]);
  expect(inputs).toEqual(expect.arrayContaining([expect.stringContaining('we repay the money')]));
  expect(embeddings.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
});

it('finds a document by meaning when the query shares no word with it, and explain says hybrid', async () => {
  const response = await call<QueryBody>('POST', queryPath(dataset), {
    body: { query: 'reimbursement policy', explain: true },
  });
  expect(response.status).toBe(200);
  const { results, explain } = response.body;
  expect(explain?.retrieval).toBe('hybrid');
  expect(results[0].metadata.documentId).toBe(documents.refunds);
  expect(results[0].content).not.toMatch(/reimbursement|policy/i);
  // The document holding the query's word is found too, ranked under the one it means.
  const privacy = results.find((r) => r.metadata.documentId === documents.privacy);
  expect(privacy?.score).toBeLessThan(results[0].score);
  // explain shows the two parts of each hybrid score: the meaning match has no lexical part, the word match has one.
  const candidate = (documentId: string) => explain?.candidates.find((c) => c.documentId === documentId);
  const refunds = candidate(documents.refunds);
  expect(refunds?.lexicalScore).toBe(0);
  expect(refunds?.vectorScore).toBeGreaterThan(0.5);
  expect(candidate(documents.privacy)?.lexicalScore).toBeGreaterThan(0);
  for (const c of explain?.candidates ?? []) {
    expect(c.score).toBeCloseTo(0.3 * (c.lexicalScore ?? Number.NaN) + 0.7 * (c.vectorScore ?? Number.NaN), 9);
  }
  expect(embeddings.requests.at(-1)?.body?.input).toEqual(['reimbursement policy']);
});

it('answers 502 EMBEDDER_ERROR naming the model when the embedding server fails a query, without URL or key', async () => {
  embeddings.script((_, response) => json(response, 500, { error: 'out of memory' }));
  const response = await call<ErrorBody>('POST', queryPath(dataset), { body: { query: 'refunds' } });
  expect(response.status).toBe(502);
  expect(response.body.error).toEqual({
    code: 'EMBEDDER_ERROR',
    message: `The embedder openai-compatible:${MODEL} answered HTTP 500`,
    details: [],
  });
  expect(JSON.stringify(response.body)).not.toContain(embeddings.baseUrl);
  // The log says which server failed.
  await pollUntil(
    async () => service.output(),
    (output) => output.includes(`${embeddings.baseUrl}/embeddings answered HTTP 500`),
  );
  expect(service.output()).toContain(`${embeddings.baseUrl}/embeddings answered HTTP 500`);
  expect(service.output()).not.toContain(KEY);
});

it('answers 504 EMBEDDER_TIMEOUT when the embedding server does not answer a query in time', async () => {
  embeddings.script(() => undefined);
  const response = await call<ErrorBody>('POST', queryPath(dataset), { body: { query: 'refunds' } });
  expect(response.status).toBe(504);
  expect(response.body.error.code).toBe('EMBEDDER_TIMEOUT');
  expect(response.body.error.message).toBe(`The embedder openai-compatible:${MODEL} did not answer within 2000 ms`);
});

it('keeps a document `uploaded` while the embedding server fails, and makes it ready once it answers', async () => {
  const failed: string[] = [];
  embeddings.script((request, response) => {
    failed.push(...((request.body?.input as string[]) ?? []));
    json(response, 503, { error: 'model is loading' });
  });
  const { link } = await uploadDocument(
    call,
    dataset,
    { fileName: 'courier.txt' },
    'The parcel goes by courier; delivery takes two weeks.',
  );
  await pollUntil(
    async () => service.output(),
    (output) => /the message will be redelivered[^\n]*answered HTTP 503/.test(output),
  );
  expect(failed).toContainEqual(expect.stringContaining('The parcel goes by courier'));
  expect((await statusOf(link.s3Key)).body.status).toBe('uploaded');

  embeddings.script(null);
  const ready = await pollUntil(
    () => statusOf(link.s3Key),
    (r) => r.body.status === 'ready',
  );
  expect(ready.body.status).toBe('ready');
  const found = await call<QueryBody>('POST', queryPath(dataset), { body: { query: 'shipping', numberOfResults: 1 } });
  expect(found.body.results[0].metadata.documentId).toBe(ready.body.documentId);
});
