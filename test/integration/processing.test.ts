/**
 * Document processing: real files of each format reach `ready` with their labels and custom metadata on every indexed
 * chunk; broken ones reach `failed` with their code; updates, metadata changes and deletes reach the index. On the
 * local runtime the index is read directly from its data folder, as a second process would; against a deployment
 * (TEST_BASE_URL: LocalStack, or the synthesized stack of `npm run test:stack`) through the retrieval API, whose
 * results carry the same chunk metadata.
 */

import { join } from 'node:path';
import { Document, Packer, Paragraph, Table, TableCell, TableRow, TextRun } from 'docx';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import type { KnowledgeIndex } from '#ports/processing';
import { createDataset, type Dataset, putFile, type UploadLink, uploadDocument, zipOf } from '../helpers/fixtures';
import { pdfOf } from '../helpers/office-files';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

const DOCS = '/api/v1/knowledge/documents';
let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;
/** The local runtime's index; null against a deployment, which is read through the retrieval API. */
let index: KnowledgeIndex | null = null;
/** A deployment keeps its own MAX_FILE_BYTES (50 MB by default): the over-the-limit case is the local runtime's. */
const DEPLOYED = Boolean(process.env.TEST_BASE_URL);

beforeAll(async () => {
  service = await startService({ env: { MAX_FILE_BYTES: String(200 * 1024) } });
  call = client(service);
  dataset = await createDataset(call);
  if (service.dataDir) index = await LanceKnowledgeIndex.open(join(service.dataDir, 'index'));
});
afterAll(() => service?.stop());

interface DocumentBody {
  status: string;
  error: { code: string; message: string } | null;
  label1: string | null;
  label2: string | null;
}

async function finalStatus(s3Key: string, ds: Dataset = dataset) {
  const response = await pollUntil(
    () => call<DocumentBody>('GET', DOCS, { query: { ...ds, s3Key } }),
    (r) => r.body.status === 'ready' || r.body.status === 'failed',
  );
  return response.body;
}

interface ChunkView {
  text: string;
  documentId: string;
  s3Key: string;
  label1: string | null;
  label2: string | null;
  svc_internal_meta1: string | null;
  svc_internal_meta2: string | null;
  svc_internal_meta3: string | null;
  svc_internal_meta4: string | null;
}

/** The document's chunks among the best 50 for `text`: from the index itself, or from the retrieval API. */
async function chunksOf(documentId: string, text: string, ds: Dataset = dataset): Promise<ChunkView[]> {
  if (index) {
    const hits = await index.query({ scope: ds, text, filters: [], limit: 50 });
    return hits.filter((hit) => hit.chunk.documentId === documentId).map((hit) => hit.chunk);
  }
  const answer = await call<{ results: { content: string; metadata: Omit<ChunkView, 'text'> }[] }>(
    'POST',
    `/dashboard/agents/${ds.agentId}/knowledge/${ds.environment}/kb/${ds.knowledgeBaseId}/query`,
    { body: { query: text, numberOfResults: 50 } },
  );
  expect(answer.status).toBe(200);
  return answer.body.results
    .filter((result) => result.metadata.documentId === documentId)
    .map((result) => ({ ...result.metadata, text: result.content }));
}

/** How many chunks the document has: counted in the index, or those the API finds for `text`. */
async function chunkCount(documentId: string, text: string): Promise<number> {
  if (index) return index.countDocumentChunks({ ...dataset, documentId });
  return (await chunksOf(documentId, text)).length;
}

async function makeDocx(): Promise<Buffer> {
  const doc = new Document({
    sections: [
      {
        children: [
          new Paragraph({ children: [new TextRun('Warranty terms for the Zephyr router')] }),
          new Paragraph('The warranty lasts twenty four months from the date of purchase.'),
          new Table({
            rows: [
              new TableRow({
                children: [
                  new TableCell({ children: [new Paragraph('Region')] }),
                  new TableCell({ children: [new Paragraph('Europe')] }),
                ],
              }),
            ],
          }),
        ],
      },
    ],
  });
  return Packer.toBuffer(doc);
}

it('indexes a PDF with its labels and custom metadata on every chunk', async () => {
  const pdf = await pdfOf([
    'The Zephyr router resets when the red button is held.',
    'Firmware updates run every night.',
  ]);
  const { link } = await uploadDocument(
    call,
    dataset,
    { fileName: 'manual.pdf', label1: 'product:zephyr', label2: 'kind:manual', customMeta1: 'owner=support' },
    pdf,
  );
  expect(await finalStatus(link.s3Key)).toMatchObject({ status: 'ready', error: null });
  const chunks = await chunksOf(link.documentId as string, 'Zephyr router red button firmware');
  expect(chunks.length).toBeGreaterThan(0);
  expect(chunks.map((c) => c.text).join(' ')).toContain('red button');
  for (const chunk of chunks) {
    expect(chunk).toMatchObject({
      label1: 'product:zephyr',
      label2: 'kind:manual',
      svc_internal_meta1: 'owner=support',
      svc_internal_meta2: null,
      s3Key: link.s3Key,
    });
  }
});

it('indexes a DOCX', async () => {
  const { link } = await uploadDocument(
    call,
    dataset,
    { fileName: 'warranty.docx', label1: 'kind:legal' },
    await makeDocx(),
  );
  expect((await finalStatus(link.s3Key)).status).toBe('ready');
  const chunks = await chunksOf(link.documentId as string, 'warranty twenty four months');
  expect(chunks.map((c) => c.text).join(' ')).toContain('twenty four months');
  expect(chunks.every((c) => c.label1 === 'kind:legal')).toBe(true);
});

it.each([
  ['a PDF that is not one', 'broken.pdf', Buffer.from('%PDF-1.7\nthis is not really a pdf'), 'PARSE_ERROR'],
  ['an empty file', 'empty.txt', Buffer.alloc(0), 'EMPTY_DOCUMENT'],
  [
    'binary bytes',
    'image.txt',
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0, 0, 0, 0]),
    'UNSUPPORTED_TYPE',
  ],
  ...(DEPLOYED ? [] : [['a file over MAX_FILE_BYTES', 'huge.txt', Buffer.alloc(300 * 1024, 'a '), 'FILE_TOO_LARGE']]),
] as [string, string, Buffer, string][])('ends %s as failed with its code', async (_name, fileName, bytes, code) => {
  const { link } = await uploadDocument(call, dataset, { fileName }, bytes);
  const body = await finalStatus(link.s3Key);
  expect(body.status).toBe('failed');
  expect(body.error).toMatchObject({ code, message: expect.any(String) });
  expect(await chunkCount(link.documentId as string, 'this is not really a pdf image empty huge')).toBe(0);
});

it('follows metadata changes, content updates and deletes in the index', async () => {
  const { link } = await uploadDocument(
    call,
    dataset,
    { fileName: 'faq.txt', label1: 'topic:billing' },
    'Invoices are sent on the first day of each month.',
  );
  expect((await finalStatus(link.s3Key)).status).toBe('ready');
  const ref = { ...dataset, documentId: link.documentId as string };

  const patched = await call('PATCH', `${DOCS}/metadata`, {
    body: { ...dataset, s3Key: link.s3Key, label1: 'topic:invoices', customMeta4: 'v2' },
  });
  expect(patched.status).toBe(200);
  const relabelled = await pollUntil(
    () => chunksOf(ref.documentId, 'invoices first day month'),
    (chunks) => chunks.length > 0 && chunks.every((c) => c.label1 === 'topic:invoices'),
  );
  expect(relabelled.every((c) => c.label1 === 'topic:invoices' && c.svc_internal_meta4 === 'v2')).toBe(true);

  const update = await call<UploadLink>('POST', `${DOCS}/update/upload-link`, {
    body: { ...dataset, s3Key: link.s3Key, fileName: 'faq.txt' },
  });
  await putFile(update.body, 'Refunds are paid within ten working days.');
  await call('POST', `${DOCS}/update/upload-complete`, { body: { uploadId: update.body.uploadId } });
  const updated = await pollUntil(
    () => call<DocumentBody & { updatedAt: string }>('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } }),
    (r) => r.body.status === 'ready' && (r.body as unknown as { fileSize: number }).fileSize === 41,
  );
  expect(updated.body.status).toBe('ready');
  expect(await chunkCount(ref.documentId, 'refunds ten working days invoices first day month')).toBe(1);
  expect((await chunksOf(ref.documentId, 'refunds ten working days'))[0].text).toContain('Refunds');
  // The old content is gone from the index, not merely outranked.
  const stale = await chunksOf(ref.documentId, 'invoices first day month');
  expect(stale.filter((c) => c.text.includes('Invoices'))).toEqual([]);

  await call('DELETE', DOCS, { body: { ...dataset, s3Key: link.s3Key } });
  expect(
    await pollUntil(
      () => chunkCount(ref.documentId, 'refunds ten working days'),
      (n) => n === 0,
    ),
  ).toBe(0);
});

it('imports a ZIP with per-file labels from its CSV', async () => {
  const archive = await zipOf({
    'labels.csv': 'file,label1,label2\nrouter.txt,product:router,kind:guide\nswitch.txt,,kind:faq\n',
    'router.txt': 'The router has four ports.',
    'switch.txt': 'The switch is silent.',
    'docs/modem.txt': 'The modem blinks green when online.',
  });
  const link = await call<UploadLink>('POST', `${DOCS}/upload-link`, {
    body: { ...dataset, fileName: 'batch.zip', label1: 'source:import', label2: 'kind:bulk' },
  });
  await putFile(link.body, archive);
  const done = await call('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.body.uploadId } });
  expect(done.body).toMatchObject({ type: 'zip_import', zipJobId: link.body.zipJobId });

  interface ZipJob {
    status: string;
    files: {
      fileName: string;
      documentId: string;
      s3Key: string;
      status: string;
      label1: string | null;
      label2: string | null;
    }[];
  }
  const job = await pollUntil(
    () => call<ZipJob>('GET', `/api/v1/knowledge/zip-jobs/${link.body.zipJobId}`),
    (r) => r.body.status === 'completed' || r.body.status === 'failed',
  );
  expect(job.body.status).toBe('completed');
  const byName = Object.fromEntries(job.body.files.map((f) => [f.fileName, f]));
  expect(Object.keys(byName).sort()).toEqual(['docs/modem.txt', 'router.txt', 'switch.txt']);
  expect(byName['router.txt']).toMatchObject({ status: 'ready', label1: 'product:router', label2: 'kind:guide' });
  expect(byName['switch.txt']).toMatchObject({ status: 'ready', label1: null, label2: 'kind:faq' });
  expect(byName['docs/modem.txt']).toMatchObject({ status: 'ready', label1: 'source:import', label2: 'kind:bulk' });
  const routerChunks = await chunksOf(byName['router.txt'].documentId, 'router four ports');
  expect(routerChunks.length).toBeGreaterThan(0);
  expect(routerChunks.every((c) => c.label1 === 'product:router' && c.label2 === 'kind:guide')).toBe(true);
  const doc = await call('GET', DOCS, { query: { ...dataset, s3Key: byName['docs/modem.txt'].s3Key } });
  expect(doc.body).toMatchObject({ status: 'ready', label1: 'source:import' });

  // The job belongs to this organization only.
  const other = client(service, service.tokens[1]);
  expect((await other('GET', `/api/v1/knowledge/zip-jobs/${link.body.zipJobId}`)).status).toBe(404);
});

it('processes a failed document again on retry, and refuses to retry one that is not failed', async () => {
  const { link } = await uploadDocument(call, dataset, { fileName: 'retry.pdf' }, Buffer.from('%PDF-1.7\nnot a pdf'));
  const failed = await finalStatus(link.s3Key);
  expect(failed).toMatchObject({ status: 'failed', error: { code: 'PARSE_ERROR' } });
  const failedAt = (failed as unknown as { updatedAt: string }).updatedAt;

  const retried = await call<DocumentBody>('POST', `${DOCS}/retry`, { body: { ...dataset, s3Key: link.s3Key } });
  expect(retried.status).toBe(200);
  expect(retried.body).toMatchObject({ status: 'uploaded', error: null });
  // The stored file was processed again: the same outcome, written anew.
  const again = await pollUntil(
    () => call<DocumentBody & { updatedAt: string }>('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } }),
    (r) => r.body.status === 'failed' && r.body.updatedAt > failedAt,
  );
  expect(again.body).toMatchObject({ status: 'failed', error: { code: 'PARSE_ERROR' } });

  const { link: fine } = await uploadDocument(call, dataset, { fileName: 'fine.txt' }, 'Nothing wrong here.');
  expect((await finalStatus(fine.s3Key)).status).toBe('ready');
  const refused = await call('POST', `${DOCS}/retry`, { body: { ...dataset, s3Key: fine.s3Key } });
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({ success: false, error: { code: 'DOCUMENT_NOT_FAILED' } });
});
