/** Knowledge API document rules through HTTP against the real engines of the local runtime. */
import { createDataset, type Dataset, putFile, type UploadLink, uploadDocument } from '../helpers/fixtures';
import { client, startService, type TestService } from '../helpers/service';

const DOCS = '/api/v1/knowledge/documents';
let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;

beforeAll(async () => {
  service = await startService();
  call = client(service);
  dataset = await createDataset(call);
});
afterAll(() => service?.stop());

const uploadLink = (body: Record<string, unknown>) => call<UploadLink>('POST', `${DOCS}/upload-link`, { body });
const complete = (uploadId: string, path = 'upload-complete') =>
  call('POST', `${DOCS}/${path}`, { body: { uploadId } });

describe('customDocumentId', () => {
  it('becomes the documentId and is unique per agent, environment and knowledge base', async () => {
    const first = await uploadLink({ ...dataset, fileName: 'a.txt', customDocumentId: 'faq-001' });
    expect(first.status).toBe(200);
    expect(first.body.documentId).toBe('faq-001');

    // Taken while the first upload is still open...
    const pending = await uploadLink({ ...dataset, fileName: 'b.txt', customDocumentId: 'faq-001' });
    expect(pending.status).toBe(409);
    expect(pending.body).toMatchObject({
      success: false,
      error: { code: 'DUPLICATE_CUSTOM_DOCUMENT_ID', details: [{ field: 'customDocumentId', rule: 'unique' }] },
    });

    // ...and after it completed.
    await putFile(first.body, 'first');
    expect((await complete(first.body.uploadId)).status).toBe(200);
    expect((await uploadLink({ ...dataset, fileName: 'c.txt', customDocumentId: 'faq-001' })).status).toBe(409);

    // Free in another environment and in another knowledge base.
    expect(
      (await uploadLink({ ...dataset, environment: 'staging', fileName: 'a.txt', customDocumentId: 'faq-001' })).status,
    ).toBe(200);
    const other = await createDataset(call);
    expect((await uploadLink({ ...other, fileName: 'a.txt', customDocumentId: 'faq-001' })).status).toBe(200);

    const got = await call('GET', DOCS, { query: { ...dataset, customDocumentId: 'faq-001' } });
    expect(got.body).toMatchObject({ documentId: 'faq-001', customDocumentId: 'faq-001', fileName: 'a.txt' });
  });
});

describe('upload-complete', () => {
  it('answers 404 UPLOAD_NOT_FOUND for an unknown uploadId', async () => {
    const response = await complete('5f0c6a43-3c1e-4a8e-9d59-1b2c3d4e5f60');
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ error: { code: 'UPLOAD_NOT_FOUND' } });
  });

  it('answers 409 UPLOAD_NOT_RECEIVED before the file was PUT, then completes once it was', async () => {
    const link = await uploadLink({ ...dataset, fileName: 'late.txt' });
    const early = await complete(link.body.uploadId);
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ error: { code: 'UPLOAD_NOT_RECEIVED' } });
    await putFile(link.body, 'now it is here');
    expect((await complete(link.body.uploadId)).status).toBe(200);
  });

  it('answers a repeated upload-complete with the first answer and creates no second document', async () => {
    const link = await uploadLink({ ...dataset, fileName: 'twice.txt', customDocumentId: 'twice-1' });
    await putFile(link.body, 'twice');
    const answers = await Promise.all([complete(link.body.uploadId), complete(link.body.uploadId)]);
    const again = await complete(link.body.uploadId);
    for (const answer of [...answers, again]) {
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual(answers[0].body);
    }
    // The documentId is held by one document: a new upload with the same id is refused.
    expect((await uploadLink({ ...dataset, fileName: 'x.txt', customDocumentId: 'twice-1' })).status).toBe(409);
  });

  it('refuses an update uploadId, naming the endpoint to use', async () => {
    const { link } = await uploadDocument(call, dataset, { fileName: 'kind.txt' });
    const update = await call<UploadLink>('POST', `${DOCS}/update/upload-link`, {
      body: { ...dataset, s3Key: link.s3Key, fileName: 'kind-2.txt' },
    });
    const wrong = await complete(update.body.uploadId);
    expect(wrong.status).toBe(400);
    expect(wrong.body).toMatchObject({ error: { details: [{ field: 'uploadId', rule: 'uploadKind' }] } });
    expect(JSON.stringify(wrong.body)).toContain('update/upload-complete');
  });
});

describe('update of content', () => {
  it('replaces the content, keeps s3Key and documentId, applies new labels and reprocesses', async () => {
    const { link } = await uploadDocument(call, dataset, {
      fileName: 'manual.txt',
      customDocumentId: 'manual-1',
      label1: 'topic:setup',
      customMeta2: 'keep me',
    });
    const update = await call<UploadLink>('POST', `${DOCS}/update/upload-link`, {
      body: { ...dataset, customDocumentId: 'manual-1', fileName: 'manual-v2.md', label2: 'version:v2' },
    });
    expect(update.status).toBe(200);
    expect(update.body).toMatchObject({
      s3Key: link.s3Key,
      documentId: 'manual-1',
      expiresIn: 900,
      requiredHeaders: { 'Content-Type': 'text/markdown', 'If-None-Match': '*', 'x-amz-tagging': 'upload=pending' },
    });

    // Nothing changes before the update completes.
    const before = await call('GET', DOCS, { query: { ...dataset, customDocumentId: 'manual-1' } });
    expect(before.body).toMatchObject({ fileName: 'manual.txt', label2: null });

    const content = '# Manual v2\n\nNew content.';
    expect((await putFile(update.body, content)).status).toBe(200);
    const done = await complete(update.body.uploadId, 'update/upload-complete');
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      type: 'document',
      s3Key: link.s3Key,
      documentId: 'manual-1',
      status: 'uploaded',
    });
    expect((await complete(update.body.uploadId, 'update/upload-complete')).body).toEqual(done.body);

    const after = await call('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } });
    expect(after.body).toMatchObject({
      s3Key: link.s3Key,
      fileName: 'manual-v2.md',
      contentType: 'text/markdown',
      fileSize: Buffer.byteLength(content),
      // `uploaded` while reprocessing, `ready` after: the worker may already be done.
      status: expect.stringMatching(/^(uploaded|ready)$/),
      label1: 'topic:setup',
      label2: 'version:v2',
      customMeta2: 'keep me',
    });
  });

  it('answers 404 for an update of a document that does not exist', async () => {
    const response = await call('POST', `${DOCS}/update/upload-link`, {
      body: { ...dataset, customDocumentId: 'never-was', fileName: 'x.txt' },
    });
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ error: { code: 'DOCUMENT_NOT_FOUND' } });
  });

  it('refuses to complete an update of a document deleted in the meantime', async () => {
    const { link } = await uploadDocument(call, dataset, { fileName: 'doomed.txt' });
    const update = await call<UploadLink>('POST', `${DOCS}/update/upload-link`, {
      body: { ...dataset, s3Key: link.s3Key, fileName: 'doomed-2.txt' },
    });
    await putFile(update.body, 'v2');
    expect((await call('DELETE', DOCS, { body: { ...dataset, s3Key: link.s3Key } })).status).toBe(200);
    const response = await complete(update.body.uploadId, 'update/upload-complete');
    expect(response.status).toBe(404);
    expect((await call('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } })).status).toBe(404);
  });
});

describe('metadata', () => {
  it('changes only the fields given, and null clears a label or a custom field', async () => {
    const { link } = await uploadDocument(call, dataset, {
      fileName: 'meta.txt',
      label1: 'topic:a',
      label2: 'team:b',
      customMeta1: 'one',
      customMeta4: 'four',
    });
    const identify = { ...dataset, s3Key: link.s3Key };
    const patched = await call('PATCH', `${DOCS}/metadata`, {
      body: { ...identify, label2: null, customMeta4: 'FOUR' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ label1: 'topic:a', label2: null, customMeta1: 'one', customMeta4: 'FOUR' });
  });

  it('answers 400 when nothing would change', async () => {
    const { link } = await uploadDocument(call, dataset, { fileName: 'nothing.txt' });
    const response = await call('PATCH', `${DOCS}/metadata`, { body: { ...dataset, s3Key: link.s3Key } });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: { code: 'VALIDATION_ERROR', details: [{ rule: 'atLeastOneOf' }] } });
  });
});

describe('delete', () => {
  it('accepts the identifier as query parameters when the DELETE has no body', async () => {
    const { link } = await uploadDocument(call, dataset, { fileName: 'query-delete.txt' });
    const response = await call('DELETE', DOCS, { query: { ...dataset, s3Key: link.s3Key } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ deleted: true, s3Key: link.s3Key });
  });

  it('answers 404 for an s3Key of another knowledge base', async () => {
    const { link } = await uploadDocument(call, dataset, { fileName: 'mine.txt' });
    const other = await createDataset(call);
    const response = await call('GET', DOCS, { query: { ...other, s3Key: link.s3Key } });
    expect(response.status).toBe(404);
  });
});

describe('ZIP import', () => {
  it('answers upload-link with a zipJobId and upload-complete with type zip_import', async () => {
    const link = await uploadLink({ ...dataset, fileName: 'batch.zip', label1: 'source:import' });
    expect(link.status).toBe(200);
    // The spec types documentId as a string: an archive is no document, so the field is left out, not null.
    expect(link.body).not.toHaveProperty('documentId');
    expect(link.body.zipJobId).toMatch(/^[0-9a-f-]{36}$/);
    expect(link.body.requiredHeaders).toEqual({
      'Content-Type': 'application/zip',
      'If-None-Match': '*',
      'x-amz-tagging': 'upload=pending',
    });
    await putFile(link.body, Buffer.from('PK\u0005\u0006'.padEnd(22, '\u0000')));
    const done = await complete(link.body.uploadId);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ type: 'zip_import', zipJobId: link.body.zipJobId, status: 'uploaded' });
  });

  it('refuses a customDocumentId on a ZIP upload', async () => {
    const response = await uploadLink({ ...dataset, fileName: 'batch.zip', customDocumentId: 'nope' });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      error: { details: [{ field: 'customDocumentId', rule: 'customDocumentId.notForZip' }] },
    });
  });
});

describe('pre-signed upload URLs', () => {
  it('refuse a tampered signature, another key and a different Content-Type', async () => {
    const link = await uploadLink({ ...dataset, fileName: 'signed.txt' });
    const url = new URL(link.body.uploadUrl);
    const signature = url.searchParams.get('X-Amz-Signature') as string;
    const tampered = new URL(url);
    tampered.searchParams.set('X-Amz-Signature', `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`);
    const otherKey = new URL(url);
    otherKey.pathname = otherKey.pathname.replace('signed.txt', 'evil.txt');

    const attempts = [
      await fetch(tampered, { method: 'PUT', headers: link.body.requiredHeaders, body: 'x' }),
      await fetch(otherKey, { method: 'PUT', headers: link.body.requiredHeaders, body: 'x' }),
      await fetch(url, { method: 'PUT', headers: { 'Content-Type': 'text/html' }, body: 'x' }),
    ];
    expect(attempts.map((r) => r.status)).toEqual([403, 403, 403]);
    // None of them stored anything: the upload is still not received.
    expect((await complete(link.body.uploadId)).body).toMatchObject({ error: { code: 'UPLOAD_NOT_RECEIVED' } });
  });
});
