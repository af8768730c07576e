/**
 * ZIP import through HTTP against the local runtime (its worker included): an archive made by "compress folder",
 * whose label CSV is in that folder, and the custom metadata of the upload-link and of the CSV reaching every
 * document, the job's file list and GET /knowledge/documents.
 */
import { createDataset, type Dataset, putFile, type UploadLink, zipOf } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

const DOCS = '/api/v1/knowledge/documents';
let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;

beforeAll(async () => {
  service = await startService();
  call = client(service);
  dataset = await createDataset(call);
}, 90_000);
afterAll(() => service?.stop());

interface ZipJobFile {
  fileName: string;
  documentId: string | null;
  s3Key: string | null;
  status: string;
  label1: string | null;
  label2: string | null;
  customMeta1: string | null;
  customMeta2: string | null;
  customMeta3: string | null;
  customMeta4: string | null;
  error: { code: string; message: string } | null;
}

interface ZipJob {
  status: string;
  failedCount: number;
  warnings: string[];
  files: ZipJobFile[];
}

/** upload-link (with `fields`) → PUT → upload-complete → the job once it has finished. */
async function importArchive(files: Record<string, string>, fields: Record<string, unknown>, into = dataset) {
  const link = await call<UploadLink>('POST', `${DOCS}/upload-link`, {
    body: { ...into, fileName: 'reports.zip', ...fields },
  });
  expect(link.status).toBe(200);
  expect(link.body).not.toHaveProperty('documentId');
  expect((await putFile(link.body, await zipOf(files))).status).toBe(200);
  const done = await call('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.body.uploadId } });
  expect(done.status).toBe(200);
  const job = await pollUntil(
    () => call<ZipJob>('GET', `/api/v1/knowledge/zip-jobs/${link.body.zipJobId}`),
    (r) => r.body.status === 'completed' || r.body.status === 'failed',
  );
  expect(job.body.status).toBe('completed');
  return {
    zipJobId: link.body.zipJobId as string,
    job: job.body,
    byName: Object.fromEntries(job.body.files.map((f) => [f.fileName, f])),
  };
}

const getDocument = (s3Key: string) => call<Record<string, unknown>>('GET', DOCS, { query: { ...dataset, s3Key } });

it('takes the label CSV from the folder that holds every file, matching names with or without that folder', async () => {
  const { job, byName } = await importArchive(
    {
      'reports/labels.csv':
        'file,label1,label2\nrouter.txt,product:router,\nguides/switch.txt,product:switch,kind:faq\n',
      'reports/router.txt': 'The router has four ports.',
      'reports/guides/switch.txt': 'The switch is silent.',
      'reports/modem.txt': 'The modem blinks green when online.',
    },
    { label1: 'source:import' },
  );
  expect(job.warnings).toEqual([]);
  // The label file is not a document.
  expect(Object.keys(byName).sort()).toEqual(['reports/guides/switch.txt', 'reports/modem.txt', 'reports/router.txt']);
  expect(byName['reports/router.txt']).toMatchObject({ status: 'ready', label1: 'product:router', label2: null });
  expect(byName['reports/guides/switch.txt']).toMatchObject({ label1: 'product:switch', label2: 'kind:faq' });
  expect(byName['reports/modem.txt']).toMatchObject({ label1: 'source:import', label2: null });
  const doc = await getDocument(byName['reports/router.txt'].s3Key as string);
  expect(doc.body).toMatchObject({ status: 'ready', label1: 'product:router', label2: null });
});

it('gives every file the upload-link custom metadata, and a file named by the CSV its own columns 4 to 7', async () => {
  const emoji = '📦'.repeat(500); // 500 characters, 1,000 UTF-16 units
  const { byName } = await importArchive(
    {
      'labels.csv': [
        'file,label1,label2,customMeta1,customMeta2',
        'router.txt,product:router,,Owner: Ann,',
        `switch.txt,,,${emoji}`,
        `modem.txt,,,${'x'.repeat(501)}`,
      ].join('\n'),
      'router.txt': 'The router has four ports.',
      'switch.txt': 'The switch is silent.',
      'modem.txt': 'The modem blinks green when online.',
      'docs/hub.txt': 'The hub is old.',
    },
    { label1: 'source:import', customMeta1: 'batch:7', customMeta2: 'from the request', customMeta4: 'kept' },
  );
  // Not named by the CSV: the request's values. Named: the row's cells for columns the CSV has (empty = none),
  // the request's for the columns it has not (customMeta3, customMeta4).
  expect(byName['docs/hub.txt']).toMatchObject({
    status: 'ready',
    label1: 'source:import',
    customMeta1: 'batch:7',
    customMeta2: 'from the request',
    customMeta3: null,
    customMeta4: 'kept',
  });
  expect(byName['router.txt']).toMatchObject({
    status: 'ready',
    label1: 'product:router',
    customMeta1: 'Owner: Ann',
    customMeta2: null,
    customMeta3: null,
    customMeta4: 'kept',
  });
  expect(byName['switch.txt']).toMatchObject({ status: 'ready', customMeta1: emoji, customMeta4: 'kept' });
  expect(byName['modem.txt']).toMatchObject({
    status: 'failed',
    documentId: expect.any(String),
    error: { code: 'INVALID_CUSTOM_META', message: expect.stringContaining('column 4 (customMeta1)') },
  });

  const hub = await getDocument(byName['docs/hub.txt'].s3Key as string);
  expect(hub.body).toMatchObject({
    customMeta1: 'batch:7',
    customMeta2: 'from the request',
    customMeta3: null,
    customMeta4: 'kept',
  });
  const router = await getDocument(byName['router.txt'].s3Key as string);
  expect(router.body).toMatchObject({ label1: 'product:router', customMeta1: 'Owner: Ann', customMeta4: 'kept' });
  const switchDoc = await getDocument(byName['switch.txt'].s3Key as string);
  expect(switchDoc.body).toMatchObject({ customMeta1: emoji });
});

it('makes every refused file a failed document with its code: counted in the job, the list and the dataset', async () => {
  const own = await createDataset(call);
  const { zipJobId, job, byName } = await importArchive(
    {
      'labels.csv': ['file,label1', 'a.txt,no colon', 'b.txt,UPPER:case', 'c.txt,product:router'].join('\n'),
      'a.txt': 'Alpha.',
      'b.txt': 'Beta.',
      'c.txt': 'Gamma.',
    },
    {},
    own,
  );
  expect(job.failedCount).toBe(2);
  expect(byName['c.txt']).toMatchObject({ status: 'ready', error: null });
  for (const name of ['a.txt', 'b.txt']) {
    expect(byName[name]).toMatchObject({ status: 'failed', error: { code: 'INVALID_LABEL' } });
    // The refused file is a document of the dataset: failed, with the refusal's code, no content.
    const doc = await call<Record<string, unknown>>('GET', DOCS, {
      query: { ...own, s3Key: byName[name].s3Key as string },
    });
    expect(doc.body).toMatchObject({
      documentId: byName[name].documentId,
      fileName: name,
      status: 'failed',
      fileSize: 0,
      label1: null,
      error: { code: 'INVALID_LABEL' },
    });
  }
  const listed = await call<{ documents: { fileName: string; status: string }[]; counts: Record<string, number> }>(
    'GET',
    `${DOCS}/list`,
    { query: { ...own } },
  );
  expect(listed.body.counts).toMatchObject({ ready: 1, failed: 2, uploaded: 0 });
  expect(listed.body.documents.map((d) => `${d.fileName} ${d.status}`).sort()).toEqual([
    'a.txt failed',
    'b.txt failed',
    'c.txt ready',
  ]);
  const jobs = () =>
    call<{ data: { zipJobId: string; status: string; failedCount: number }[] }>('GET', '/api/v1/knowledge/zip-jobs', {
      query: { ...own },
    });
  expect((await jobs()).body.data).toEqual([
    expect.objectContaining({ zipJobId, status: 'completed', failedCount: 2 }),
  ]);

  // Nothing of it is stored: retrying cannot help, and says so.
  const retry = await call<{ error: { code: string; details: { field: string }[] } }>('POST', `${DOCS}/retry`, {
    body: { ...own, s3Key: byName['a.txt'].s3Key },
  });
  expect(retry.status).toBe(409);
  expect(retry.body.error).toMatchObject({ code: 'DOCUMENT_NOT_RETRYABLE', details: [{ field: 'error.code' }] });

  // Deleted, it no longer counts as the import's failure, in the list as in GET.
  const deleted = await call('DELETE', DOCS, { body: { ...own, s3Key: byName['a.txt'].s3Key } });
  expect(deleted.status).toBe(200);
  const after = await pollUntil(jobs, (r) => r.body.data[0]?.failedCount === 1);
  expect(after.body.data[0]).toMatchObject({ status: 'completed', failedCount: 1 });
  const one = await call<ZipJob>('GET', `/api/v1/knowledge/zip-jobs/${zipJobId}`);
  expect(one.body.failedCount).toBe(1);
});
