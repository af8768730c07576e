/**
 * GET /knowledge/documents/list through HTTP against the real engines: counts per status that stay exact through
 * many concurrent uploads, failures, content updates, retries and deletes; pages newest first; filters; tokens bound
 * to their list; reservations never listed.
 */
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

const DOCS = '/api/v1/knowledge/documents';
let service: TestService;
let call: ReturnType<typeof client>;

interface Listed {
  s3Key: string;
  documentId: string;
  fileName: string;
  status: 'uploaded' | 'ready' | 'failed';
  label1: string | null;
  createdAt: string;
}
interface ListBody {
  documents: Listed[];
  counts: { uploaded: number; ready: number; failed: number; total: number };
  nextToken: string | null;
}

beforeAll(async () => {
  service = await startService();
  call = client(service);
});
afterAll(() => service?.stop());

const list = (dataset: Dataset, query: Record<string, string> = {}) =>
  call<ListBody>('GET', `${DOCS}/list`, { query: { ...dataset, ...query } });

/** Every page of the list, in order. */
async function listAll(dataset: Dataset, query: Record<string, string> = {}): Promise<Listed[]> {
  const all: Listed[] = [];
  let nextToken: string | null = null;
  do {
    const page = await list(dataset, { ...query, ...(nextToken ? { nextToken } : {}) });
    expect(page.status).toBe(200);
    all.push(...page.body.documents);
    nextToken = page.body.nextToken;
  } while (nextToken);
  return all;
}

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

const BROKEN_PDF = Buffer.from('%PDF-1.7\nnot a pdf');
const settled = (dataset: Dataset) =>
  pollUntil(
    () => list(dataset, { limit: '1' }),
    (r) => r.status === 200 && r.body.counts.uploaded === 0,
    60_000,
  );

it('keeps the counts exact through 200 concurrent uploads, failures, updates, retries and deletes', async () => {
  const dataset = await createDataset(call);
  const names = Array.from(
    { length: 200 },
    (_, i) => `doc-${String(i).padStart(3, '0')}.${i % 5 === 0 ? 'pdf' : 'txt'}`,
  );
  const keys = new Map<string, string>();
  await inParallel(names, 8, async (fileName) => {
    const broken = fileName.endsWith('.pdf');
    const { link } = await uploadDocument(
      call,
      dataset,
      { fileName, label1: fileName < 'doc-100' ? 'team:a' : 'team:b' },
      broken ? BROKEN_PDF : `The text of ${fileName}.`,
    );
    keys.set(fileName, link.s3Key);
  });
  const first = await settled(dataset);
  expect(first.body.counts).toEqual({ uploaded: 0, ready: 160, failed: 40, total: 200 });

  // Then at once: 10 failed and 20 ready deleted, 10 ready given new content, 10 failed retried (they fail again).
  const failedNames = names.filter((n) => n.endsWith('.pdf'));
  const readyNames = names.filter((n) => n.endsWith('.txt'));
  const deletes = [...failedNames.slice(0, 10), ...readyNames.slice(0, 20)];
  const updates = readyNames.slice(20, 30);
  const retries = failedNames.slice(10, 20);
  const work = [
    ...deletes.map((name) => async () => {
      const removed = await call('DELETE', DOCS, { body: { ...dataset, s3Key: keys.get(name) } });
      expect(removed.status).toBe(200);
    }),
    ...updates.map((name) => async () => {
      const link = await call<{ uploadUrl: string; requiredHeaders: Record<string, string>; uploadId: string }>(
        'POST',
        `${DOCS}/update/upload-link`,
        { body: { ...dataset, s3Key: keys.get(name), fileName: name } },
      );
      expect(link.status).toBe(200);
      const put = await fetch(link.body.uploadUrl, {
        method: 'PUT',
        headers: link.body.requiredHeaders,
        body: `New text of ${name}.`,
      });
      expect(put.status).toBe(200);
      expect(
        (await call('POST', `${DOCS}/update/upload-complete`, { body: { uploadId: link.body.uploadId } })).status,
      ).toBe(200);
    }),
    ...retries.map((name) => async () => {
      const retried = await call('POST', `${DOCS}/retry`, { body: { ...dataset, s3Key: keys.get(name) } });
      expect(retried.status).toBe(200);
    }),
  ];
  await inParallel(work, 8, (run) => run());
  const after = await settled(dataset);
  expect(after.body.counts).toEqual({ uploaded: 0, ready: 140, failed: 30, total: 170 });

  // The list holds each document once, newest first, and its statuses tally to the counts.
  const listed = await listAll(dataset, { limit: '37' });
  expect(listed).toHaveLength(170);
  expect(new Set(listed.map((doc) => doc.documentId)).size).toBe(170);
  for (let i = 1; i < listed.length; i++) expect(listed[i - 1].createdAt >= listed[i].createdAt).toBe(true);
  const tally = { uploaded: 0, ready: 0, failed: 0 };
  for (const doc of listed) tally[doc.status] += 1;
  expect({ ...tally, total: listed.length }).toEqual(after.body.counts);
  const deleted = new Set(deletes.map((name) => keys.get(name)));
  expect(listed.filter((doc) => deleted.has(doc.s3Key))).toEqual([]);

  // The filters narrow the page, never the counts (they are the whole dataset's).
  const failed = await listAll(dataset, { status: 'failed' });
  expect(failed).toHaveLength(30);
  expect(failed.every((doc) => doc.fileName.endsWith('.pdf'))).toBe(true);
  const teamA = await listAll(dataset, { label1: 'team:a', status: 'ready' });
  expect(teamA.map((doc) => doc.fileName).sort()).toEqual(
    readyNames.filter((n) => n < 'doc-100' && !deletes.includes(n)).sort(),
  );
  const prefixed = await list(dataset, { fileNamePrefix: 'doc-19' });
  expect(prefixed.body.documents.map((doc) => doc.fileName).sort()).toEqual(
    names.filter((n) => n.startsWith('doc-19')),
  );
  expect(prefixed.body.counts).toEqual(after.body.counts);
});

describe('pages and filters', () => {
  let dataset: Dataset;
  beforeAll(async () => {
    dataset = await createDataset(call);
    for (const fileName of ['alpha.txt', 'beta.txt', 'gamma.txt', 'Alpha-upper.txt']) {
      await uploadDocument(call, dataset, { fileName, label2: fileName.startsWith('a') ? 'kind:a' : 'kind:other' });
    }
    await settled(dataset);
  });

  it('answers newest first, a page at a time, and the last page has no nextToken', async () => {
    const first = await list(dataset, { limit: '3' });
    expect(first.status).toBe(200);
    expect(first.body.documents.map((doc) => doc.fileName)).toEqual(['Alpha-upper.txt', 'gamma.txt', 'beta.txt']);
    expect(first.body.nextToken).toEqual(expect.any(String));
    const second = await list(dataset, { limit: '3', nextToken: first.body.nextToken as string });
    expect(second.body.documents.map((doc) => doc.fileName)).toEqual(['alpha.txt']);
    expect(second.body.nextToken).toBeNull();
    const exact = await list(dataset, { limit: '4' });
    expect(exact.body.documents).toHaveLength(4);
    expect(exact.body.nextToken).toBeNull();
  });

  it('matches the file name prefix as written and labels exactly', async () => {
    expect((await list(dataset, { fileNamePrefix: 'alpha' })).body.documents.map((d) => d.fileName)).toEqual([
      'alpha.txt',
    ]);
    expect((await list(dataset, { label2: 'kind:a' })).body.documents.map((d) => d.fileName)).toEqual(['alpha.txt']);
    expect((await list(dataset, { label2: 'kind:none' })).body).toMatchObject({ documents: [], nextToken: null });
  });

  it('never lists a reservation, nor counts it', async () => {
    const link = await call('POST', `${DOCS}/upload-link`, { body: { ...dataset, fileName: 'pending.txt' } });
    expect(link.status).toBe(200);
    const page = await list(dataset);
    expect(page.body.documents.map((doc) => doc.fileName)).not.toContain('pending.txt');
    expect(page.body.counts).toEqual({ uploaded: 0, ready: 4, failed: 0, total: 4 });
  });

  it('refuses a token of another list, a token it did not issue, and a limit out of range, naming the field', async () => {
    const first = await list(dataset, { limit: '1' });
    const token = first.body.nextToken as string;
    const other = await list(dataset, { limit: '1', status: 'ready', nextToken: token });
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject({
      success: false,
      error: { code: 'VALIDATION_ERROR', details: [{ field: 'nextToken', rule: 'nextToken.query' }] },
    });
    const forged = await list(dataset, { nextToken: Buffer.from('{"v":1,"q":"x","p":"y"}').toString('base64url') });
    expect(forged.status).toBe(400);
    expect(forged.body).toMatchObject({ error: { details: [{ field: 'nextToken', rule: 'nextToken.format' }] } });
    for (const limit of ['0', '101', 'ten']) {
      const refused = await list(dataset, { limit });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ error: { details: [expect.objectContaining({ field: 'limit' })] } });
    }
    const badStatus = await list(dataset, { status: 'reserved' });
    expect(badStatus.status).toBe(400);
    expect(badStatus.body).toMatchObject({ error: { details: [expect.objectContaining({ field: 'status' })] } });
  });
});
