/**
 * A document's chunks through the local runtime (GET /api/v1/knowledge/documents/chunks and its dashboard mirror):
 * pages in position order that together cover the document, each chunk's metadata exactly as a retrieval hit of it
 * carries, the search within the document, and the refusals (a bad limit, an unknown document, another
 * organization's document, a failed document).
 */
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;
let s3Key: string;

interface Chunk {
  chunkId: string;
  position: number;
  text: string;
  metadata: Record<string, unknown> & { chunkId: string; position: number; documentId: string };
}
interface ChunkPage {
  success: boolean;
  status: string;
  chunks: Chunk[];
  total: number;
  nextToken: string | null;
  error?: { code: string; details: { field: string; rule: string }[] };
}

/** 40 numbered paragraphs of about 200 characters: a document of several chunks of CHUNK_SIZE (1,000). */
const PARAGRAPHS = Array.from(
  { length: 40 },
  (_, i) =>
    `Paragraph ${i + 1} tells how the router model R${i + 1} is installed, configured and reset, ` +
    `with the cable, the power supply and the admin page${i === 27 ? ' behind the Zebra firewall' : ''}.`,
);
const TEXT = PARAGRAPHS.join('\n\n');

const CHUNKS = '/api/v1/knowledge/documents/chunks';

async function ready(d: Dataset, key: string) {
  await pollUntil(
    () => call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...d, s3Key: key } }),
    (r) => r.body.status === 'ready',
  );
}

async function allChunks(query: Record<string, string>): Promise<{ pages: ChunkPage[]; chunks: Chunk[] }> {
  const pages: ChunkPage[] = [];
  let nextToken: string | null = null;
  do {
    const page: { status: number; body: ChunkPage } = await call<ChunkPage>('GET', CHUNKS, {
      query: { ...dataset, s3Key, ...query, ...(nextToken ? { nextToken } : {}) },
    });
    expect(page.status).toBe(200);
    pages.push(page.body);
    nextToken = page.body.nextToken;
  } while (nextToken);
  return { pages, chunks: pages.flatMap((page) => page.chunks) };
}

beforeAll(async () => {
  service = await startService();
  call = client(service);
  dataset = await createDataset(call);
  const { link } = await uploadDocument(
    call,
    dataset,
    { fileName: 'routers.txt', label1: 'team:support', customMeta2: 'owner=ops' },
    TEXT,
  );
  s3Key = link.s3Key;
  await ready(dataset, s3Key);
});
afterAll(() => service?.stop());

test('pages through every chunk in position order, and together they cover the document', async () => {
  const { pages, chunks } = await allChunks({ limit: '2' });
  expect(chunks.length).toBeGreaterThanOrEqual(5);
  expect(pages.length).toBe(Math.ceil(chunks.length / 2));
  expect(pages.every((page) => page.total === chunks.length && page.status === 'ready')).toBe(true);
  expect(chunks.map((chunk) => chunk.position)).toEqual(chunks.map((_, i) => i));
  expect(new Set(chunks.map((chunk) => chunk.chunkId)).size).toBe(chunks.length);
  // Every paragraph is whole in some chunk, and the chunks keep the document's order.
  for (const paragraph of PARAGRAPHS) expect(chunks.some((chunk) => chunk.text.includes(paragraph))).toBe(true);
  const firstOf = (paragraph: string) => chunks.findIndex((chunk) => chunk.text.includes(paragraph));
  const order = PARAGRAPHS.map(firstOf);
  expect([...order].sort((a, b) => a - b)).toEqual(order);
  // The default page holds them all (50).
  const whole = await call<ChunkPage>('GET', CHUNKS, { query: { ...dataset, s3Key } });
  expect(whole.body.chunks).toEqual(chunks);
  expect(whole.body.nextToken).toBeNull();
});

test("each chunk's metadata is exactly what a retrieval hit of it carries", async () => {
  const { chunks } = await allChunks({});
  const hit = await call<{ results: { content: string; metadata: Record<string, unknown> }[] }>(
    'POST',
    `/dashboard/agents/${dataset.agentId}/knowledge/${dataset.environment}/kb/${dataset.knowledgeBaseId}/query`,
    { body: { query: 'Zebra firewall', numberOfResults: 1 } },
  );
  expect(hit.status).toBe(200);
  const [result] = hit.body.results;
  const chunk = chunks.find((c) => c.chunkId === result.metadata.chunkId);
  expect(chunk).toBeDefined();
  expect(chunk?.metadata).toEqual(result.metadata);
  expect(chunk?.text).toBe(result.content);
  expect(chunk?.metadata).toMatchObject({ label1: 'team:support', svc_internal_meta2: 'owner=ops', s3Key });
});

test('q keeps the chunks whose text contains it, ignoring case, and pages them too', async () => {
  const { chunks } = await allChunks({});
  const searched = await allChunks({ q: 'zEBRA FIREWALL' });
  expect(searched.chunks.length).toBeGreaterThanOrEqual(1);
  expect(searched.chunks).toEqual(chunks.filter((chunk) => chunk.text.includes('Zebra firewall')));
  const paged = await allChunks({ q: 'router model', limit: '3' });
  expect(paged.chunks.map((chunk) => chunk.chunkId)).toEqual(
    chunks.filter((chunk) => chunk.text.toLowerCase().includes('router model')).map((chunk) => chunk.chunkId),
  );
  // Characters that mean something in a pattern are only characters here.
  const none = await call<ChunkPage>('GET', CHUNKS, { query: { ...dataset, s3Key, q: '.*(' } });
  expect(none.status).toBe(200);
  expect(none.body.chunks).toEqual([]);
  expect(none.body.nextToken).toBeNull();
});

test('the dashboard mirror answers the same page', async () => {
  const api = await call<ChunkPage>('GET', CHUNKS, { query: { ...dataset, s3Key, limit: '3' } });
  const mirror = await call<ChunkPage>(
    'GET',
    `/dashboard/agents/${dataset.agentId}/knowledge/${dataset.environment}/kb/${dataset.knowledgeBaseId}/document/chunks`,
    { query: { s3Key, limit: '3' } },
  );
  expect(mirror.status).toBe(200);
  expect(mirror.body).toEqual(api.body);
});

test('a bad limit, or a token of another search, is a 400 naming the field', async () => {
  for (const limit of ['0', '101', 'ten']) {
    const bad = await call<ChunkPage>('GET', CHUNKS, { query: { ...dataset, s3Key, limit } });
    expect(bad.status).toBe(400);
    expect(bad.body.error?.details.map((d) => d.field)).toEqual(['limit']);
  }
  const first = await call<ChunkPage>('GET', CHUNKS, { query: { ...dataset, s3Key, limit: '1' } });
  const other = await call<ChunkPage>('GET', CHUNKS, {
    query: { ...dataset, s3Key, q: 'router', nextToken: first.body.nextToken as string },
  });
  expect(other.status).toBe(400);
  expect(other.body.error?.details.map((d) => d.field)).toEqual(['nextToken']);
});

test("an unknown document, and another organization's, are 404", async () => {
  const unknown = await call<ChunkPage>('GET', CHUNKS, { query: { ...dataset, customDocumentId: 'no-such-document' } });
  expect(unknown.status).toBe(404);
  expect(unknown.body.error?.code).toBe('DOCUMENT_NOT_FOUND');
  const foreign = await call<ChunkPage>('GET', CHUNKS, { query: { ...dataset, s3Key }, token: service.tokens[1] });
  expect(foreign.status).toBe(404);
});

test('a failed document is a 409 DOCUMENT_FAILED (retrieval finds none of its chunks)', async () => {
  const link = await call<{ s3Key: string; uploadId: string }>('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...dataset, fileName: 'pending.txt' },
  });
  expect(link.status).toBe(200);
  // A link never completed: the record is a reservation, invisible (404). An empty file ends failed.
  const reserved = await call<ChunkPage>('GET', CHUNKS, { query: { ...dataset, s3Key: link.body.s3Key } });
  expect(reserved.status).toBe(404);
  const { link: failing } = await uploadDocument(call, dataset, { fileName: 'empty.txt' }, Buffer.alloc(0));
  await pollUntil(
    () =>
      call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key: failing.s3Key } }),
    (r) => r.body.status === 'failed',
  );
  const failed = await call<ChunkPage>('GET', CHUNKS, { query: { ...dataset, s3Key: failing.s3Key } });
  expect(failed.status).toBe(409);
  expect(failed.body.error?.code).toBe('DOCUMENT_FAILED');
});
