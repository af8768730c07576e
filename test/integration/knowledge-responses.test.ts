/**
 * Every knowledge and retrieval route, and each dashboard mirror of one, answers what the OpenAPI document says it
 * answers: the success status the document lists, and a body its response schema (lambdas/handlers/http/knowledge and
 * retrieval, responses.ts) parses strictly, so a field the schema does not know fails here. One walk through the
 * local runtime takes each route through the answers that differ in shape: a document new, ready, failed, retried and
 * updated; a ZIP import with a refused file; paging; retrieval with `explain`; default retrieval off and on.
 */
import type * as z from 'zod';
import { buildOpenApiDocument } from '#handlers/http/openapi-document';
import { responseSchemaOf } from '#handlers/http/responses';
import { ROUTES } from '../../lib/routes';
import { putFile, type UploadLink, zipOf } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;

beforeAll(async () => {
  service = await startService();
  call = client(service);
});
afterAll(() => service?.stop());

const ROUTES_OF_THE_AREA = [
  'UploadLink',
  'UploadComplete',
  'UpdateUploadLink',
  'UpdateUploadComplete',
  'PatchMetadata',
  'GetDocument',
  'ListDocumentChunks',
  'DeleteDocument',
  'ListDocuments',
  'RetryDocument',
  'ListZipJobs',
  'GetZipJob',
  'CreateKnowledgeBase',
  'ListKnowledgeBases',
  'GetKnowledgeBase',
  'UpdateKnowledgeBase',
  'DeleteKnowledgeBase',
  'ReindexKnowledgeBase',
  'GetKnowledgeBaseReindex',
  'QueryKnowledgeBase',
  'GenerateFromKnowledgeBase',
  'GetRetrievalConfig',
  'PutRetrievalConfig',
  'PreviewDefaultRetrieval',
];
const MIRRORS = ROUTES.filter((r) => r.id.startsWith('Dashboard') && ROUTES_OF_THE_AREA.includes(r.id.slice(9)));

const DOCUMENT = openApiPaths();
function openApiPaths() {
  return buildOpenApiDocument().paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
}

/** Route ids whose answers were checked, with how many answers each. */
const checked = new Map<string, number>();

interface Options {
  readonly body?: Record<string, unknown>;
  readonly query?: Record<string, string>;
}

/**
 * Calls route `routeId` (its method and path from lib/routes.ts, `params` filling the path), expects the success
 * status the OpenAPI document lists, and parses the body without `success: true` with the route's response schema.
 */
async function answer<T = Record<string, unknown>>(
  routeId: string,
  params: Record<string, string>,
  options: Options = {},
): Promise<T> {
  const route = ROUTES.find((r) => r.id === routeId);
  if (!route) throw new Error(`no route ${routeId}`);
  const path = route.path.replace(/\{([^{}]+)\}/g, (_, name: string) => {
    if (!params[name]) throw new Error(`${routeId}: no value for {${name}}`);
    return params[name];
  });
  const response = await call<Record<string, unknown>>(route.method, path, options);
  const listed = Object.keys(DOCUMENT[route.path][route.method.toLowerCase()].responses).filter((s) => /^2/.test(s));
  expect({ routeId, status: response.status, body: response.status >= 300 ? response.body : '(success)' }).toEqual({
    routeId,
    status: Number(listed[0]),
    body: '(success)',
  });
  const { success, ...body } = response.body;
  expect(success).toBe(true);
  const schema = responseSchemaOf(routeId) as z.ZodType;
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new Error(`${routeId} answered what its schema refuses: ${JSON.stringify(parsed.error.issues, null, 1)}
${JSON.stringify(body, null, 1)}`);
  }
  checked.set(routeId, (checked.get(routeId) ?? 0) + 1);
  return body as T;
}

interface Doc {
  status: string;
  s3Key: string;
  documentId: string;
  error: { code: string } | null;
}

it('answers every knowledge and retrieval route with the body its schema describes', async () => {
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Support bot' } });
  expect(agent.status).toBe(201);
  const { agentId } = agent.body;
  const environment = 'production';

  // Knowledge bases.
  const kb = await answer<{ knowledgeBaseId: string }>(
    'CreateKnowledgeBase',
    { agentId },
    { body: { name: 'Policies', description: null } },
  );
  const { knowledgeBaseId } = kb;
  const other = await answer<{ knowledgeBaseId: string }>(
    'CreateKnowledgeBase',
    { agentId },
    { body: { name: 'Old policies', description: 'To be deleted' } },
  );
  await answer('ListKnowledgeBases', { agentId });
  await answer('GetKnowledgeBase', { agentId, knowledgeBaseId });
  await answer('UpdateKnowledgeBase', { agentId, knowledgeBaseId }, { body: { description: 'Refunds and returns' } });

  const dataset = { agentId, environment, knowledgeBaseId };
  const mirrorPath = { agentId, environment, knowledgeBaseId };

  // Default retrieval, off until set.
  const off = await answer<{ updatedAt: string | null }>('GetRetrievalConfig', { agentId, environment });
  expect(off.updatedAt).toBeNull();
  await answer('PreviewDefaultRetrieval', { agentId, environment }, { body: { query: 'refund' } });

  // A new document through the customer route, with every kind of metadata and its size; upload-complete twice.
  const refundText = 'Refunds are paid within 14 days of the return reaching our warehouse, by card.';
  const link = await answer<UploadLink>(
    'UploadLink',
    {},
    {
      body: {
        ...dataset,
        fileName: 'refund-policy.txt',
        label1: 'topic:refunds',
        customMeta1: 'Refund policy',
        fileSize: Buffer.byteLength(refundText),
      },
    },
  );
  expect((await putFile(link, refundText)).status).toBe(200);
  await answer('UploadComplete', {}, { body: { uploadId: link.uploadId } });
  await answer('UploadComplete', {}, { body: { uploadId: link.uploadId } });

  // One through the dashboard's mirror, with a customDocumentId.
  const mirrored = await answer<UploadLink>('DashboardUploadLink', mirrorPath, {
    body: { fileName: 'shipping.md', customDocumentId: 'shipping-policy', label1: 'topic:shipping' },
  });
  expect((await putFile(mirrored, '# Shipping\n\nParcels leave the warehouse within two working days.')).status).toBe(
    200,
  );
  await answer('DashboardUploadComplete', {}, { body: { uploadId: mirrored.uploadId } });

  // A document whose processing fails.
  const brokenLink = await answer<UploadLink>('UploadLink', {}, { body: { ...dataset, fileName: 'broken.pdf' } });
  expect((await putFile(brokenLink, Buffer.from('%PDF-1.7\nnot a pdf'))).status).toBe(200);
  await answer('UploadComplete', {}, { body: { uploadId: brokenLink.uploadId } });

  const settled = (s3Key: string) =>
    pollUntil(
      () => answer<Doc>('GetDocument', {}, { query: { ...dataset, s3Key } }),
      (doc) => doc.status !== 'uploaded',
      30_000,
    );
  expect((await settled(link.s3Key)).status).toBe('ready');
  expect((await settled(mirrored.s3Key)).status).toBe('ready');
  expect((await settled(brokenLink.s3Key)).error).not.toBeNull();
  await answer('DashboardGetDocument', mirrorPath, { query: { customDocumentId: 'shipping-policy' } });

  // Retry, customer and dashboard (it fails again in between).
  await answer('RetryDocument', {}, { body: { ...dataset, s3Key: brokenLink.s3Key } });
  expect((await settled(brokenLink.s3Key)).status).toBe('failed');
  await answer('DashboardRetryDocument', mirrorPath, { body: { s3Key: brokenLink.s3Key } });
  expect((await settled(brokenLink.s3Key)).status).toBe('failed');

  // Lists: a page with a next token, the last page, filters; the mirror.
  const first = await answer<{ nextToken: string | null }>('ListDocuments', {}, { query: { ...dataset, limit: '1' } });
  expect(first.nextToken).not.toBeNull();
  await answer('ListDocuments', {}, { query: { ...dataset, limit: '5', nextToken: first.nextToken as string } });
  await answer('ListDocuments', {}, { query: { ...dataset, status: 'failed', label1: 'topic:refunds' } });
  await answer('DashboardListDocuments', mirrorPath, { query: { fileNamePrefix: 'ship' } });

  // Chunks: all, searched, and through the mirror.
  await answer('ListDocumentChunks', {}, { query: { ...dataset, s3Key: link.s3Key } });
  await answer('ListDocumentChunks', {}, { query: { ...dataset, s3Key: link.s3Key, q: 'warehouse', limit: '1' } });
  await answer('DashboardListDocumentChunks', mirrorPath, { query: { customDocumentId: 'shipping-policy' } });

  // Metadata: set, and cleared with null through the mirror.
  await answer(
    'PatchMetadata',
    {},
    { body: { ...dataset, s3Key: link.s3Key, label2: 'region:eu', customMeta4: 'v2' } },
  );
  await answer('DashboardPatchMetadata', mirrorPath, { body: { s3Key: link.s3Key, customMeta1: null } });

  // New content for a document.
  const update = await answer<UploadLink>(
    'UpdateUploadLink',
    {},
    { body: { ...dataset, s3Key: mirrored.s3Key, fileName: 'shipping-2027.md', label2: 'region:eu' } },
  );
  expect((await putFile(update, '# Shipping\n\nParcels leave within one working day.')).status).toBe(200);
  await answer('UpdateUploadComplete', {}, { body: { uploadId: update.uploadId } });
  await answer('UpdateUploadComplete', {}, { body: { uploadId: update.uploadId } });
  // While it is processed again, its chunks are those of its previous content (status `uploaded`), or already new.
  await answer('ListDocumentChunks', {}, { query: { ...dataset, s3Key: mirrored.s3Key } });
  expect((await settled(mirrored.s3Key)).status).toBe('ready');

  // A ZIP import with a refused file (an archive inside the archive) and a label file with a row that names nothing.
  const zip = await zipOf({
    'policies/warranty.txt': 'The warranty lasts two years from the date of delivery.',
    'policies/inner.zip': await zipOf({ 'a.txt': 'nested' }),
    'labels.csv': 'policies/warranty.txt,topic:warranty,,Warranty terms\nnothing.txt,topic:none\n',
  });
  const zipLink = await answer<UploadLink>(
    'UploadLink',
    {},
    { body: { ...dataset, fileName: 'policies.zip', label2: 'source:import' } },
  );
  expect(zipLink.zipJobId).toBeDefined();
  expect((await putFile(zipLink, zip)).status).toBe(200);
  await answer('UploadComplete', {}, { body: { uploadId: zipLink.uploadId } });
  const zipJobId = zipLink.zipJobId as string;
  const job = await pollUntil(
    () => answer<{ status: string; files: unknown[]; warnings: string[] }>('GetZipJob', { zipJobId }),
    (j) => j.status === 'completed' || j.status === 'failed',
    30_000,
  );
  expect(job).toMatchObject({ status: 'completed' });
  expect(job.files).toHaveLength(2);
  expect(job.warnings).toHaveLength(1);
  await answer('DashboardGetZipJob', { zipJobId });
  await answer('ListZipJobs', {}, { query: dataset });
  await answer('DashboardListZipJobs', mirrorPath, { query: { limit: '1' } });

  // Retrieval: plain, explained with a filter left out (its memory value is missing), generated.
  const retrievalPath = { agentId, environment, knowledgeBaseId };
  const found = await answer<{ results: unknown[] }>('QueryKnowledgeBase', retrievalPath, {
    body: { query: 'refund warehouse' },
  });
  expect(found.results.length).toBeGreaterThan(0);
  const explained = await answer<{ explain: { skippedFilters: unknown[] } }>('QueryKnowledgeBase', retrievalPath, {
    body: {
      query: 'warranty',
      explain: true,
      minScore: 0.01,
      filters: [
        { key: 'label1', operator: 'notEquals', value: 'topic:none' },
        { key: 'label2', operator: 'equals', value: '{state.memory.region}' },
      ],
      memory: {},
    },
  });
  expect(explained.explain.skippedFilters).toHaveLength(1);
  const generated = await answer<{ citations: unknown[] }>('GenerateFromKnowledgeBase', retrievalPath, {
    body: { query: 'How long does a refund take?', explain: true },
  });
  expect(generated.citations.length).toBeGreaterThan(0);
  await answer('GenerateFromKnowledgeBase', retrievalPath, { body: { query: 'zzzz qqqq' } });

  // Default retrieval on, naming both knowledge bases; the preview; then deleting one changes the configuration.
  await answer(
    'PutRetrievalConfig',
    { agentId, environment },
    {
      body: {
        enabled: true,
        knowledgeBases: [
          {
            knowledgeBaseId,
            numberOfResults: 3,
            minScore: 0.01,
            filters: [{ key: 'label1', operator: 'equals', value: '{state.memory.topic}' }],
          },
          { knowledgeBaseId: other.knowledgeBaseId, environment: 'staging' },
        ],
      },
    },
  );
  await answer('GetRetrievalConfig', { agentId, environment });
  await answer(
    'PreviewDefaultRetrieval',
    { agentId, environment },
    { body: { query: 'refund', memory: { topic: 'topic:refunds' } } },
  );

  // Reindex, followed to its end.
  await answer('ReindexKnowledgeBase', { agentId, knowledgeBaseId }, { body: { environment } });
  await pollUntil(
    () => answer<{ status: string }>('GetKnowledgeBaseReindex', { agentId, knowledgeBaseId }),
    (job) => job.status === 'completed',
    30_000,
  );
  await answer('ReindexKnowledgeBase', { agentId, knowledgeBaseId });

  // Deletes: documents both ways, the knowledge base twice (a repeat answers the same job).
  await answer('DeleteDocument', {}, { body: { ...dataset, s3Key: link.s3Key } });
  await answer('DashboardDeleteDocument', mirrorPath, { query: { customDocumentId: 'shipping-policy' } });
  const deleted = await answer<{ defaultRetrievalChanged: string[] }>('DeleteKnowledgeBase', {
    agentId,
    knowledgeBaseId: other.knowledgeBaseId,
  });
  expect(deleted.defaultRetrievalChanged).toEqual(['production']);
  await answer('DeleteKnowledgeBase', { agentId, knowledgeBaseId: other.knowledgeBaseId });

  const expected = [...ROUTES_OF_THE_AREA, ...MIRRORS.map((r) => r.id)].sort();
  expect([...checked.keys()].sort()).toEqual(expected);
}, 240_000);
