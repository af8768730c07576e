/**
 * The README's walk-through, step by step, against the local runtime (or a LocalStack deployment):
 * create agent, create knowledge base, upload-link, PUT, upload-complete, GET shows `uploaded`, PATCH labels,
 * GET shows them, DELETE, GET is 404.
 */
import { type Dataset, putFile, type UploadLink } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;

beforeAll(async () => {
  service = await startService();
  call = client(service);
});
afterAll(() => service?.stop());

const DOCS = '/api/v1/knowledge/documents';

it('runs the whole document life cycle through the HTTP API', async () => {
  const health = await call('GET', '/health', { token: null });
  expect(health.status).toBe(200);

  const agent = await call<{ agentId: string; displayName: string; createdAt: string }>('POST', '/dashboard/agents', {
    body: { displayName: 'Support bot' },
  });
  expect(agent.status).toBe(201);
  expect(agent.body).toMatchObject({ success: true, displayName: 'Support bot' });
  expect(new Date(agent.body.createdAt).toISOString()).toBe(agent.body.createdAt);

  const kb = await call<{ knowledgeBaseId: string }>(
    'POST',
    `/dashboard/agents/${agent.body.agentId}/knowledge/bases`,
    {
      body: { name: 'Manuals', description: 'Product manuals' },
    },
  );
  expect(kb.status).toBe(201);
  expect(kb.body).toMatchObject({ name: 'Manuals', description: 'Product manuals' });
  const dataset: Dataset = {
    agentId: agent.body.agentId,
    environment: 'production',
    knowledgeBaseId: kb.body.knowledgeBaseId,
  };

  const link = await call<UploadLink>('POST', `${DOCS}/upload-link`, {
    body: { ...dataset, fileName: 'guide.txt', label1: 'topic:setup', customMeta1: 'author=ops' },
  });
  expect(link.status).toBe(200);
  expect(link.body).toMatchObject({
    expiresIn: 900,
    requiredHeaders: { 'Content-Type': 'text/plain', 'If-None-Match': '*', 'x-amz-tagging': 'upload=pending' },
  });
  expect(link.body.s3Key).toBe(
    `${dataset.agentId}/production/${dataset.knowledgeBaseId}/${link.body.documentId}/guide.txt`,
  );

  const content = 'To set up the device, hold the power button for five seconds.';
  const put = await putFile(link.body, content);
  expect(put.status).toBe(200);

  const complete = await call('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.body.uploadId } });
  expect(complete.status).toBe(200);
  expect(complete.body).toMatchObject({
    type: 'document',
    s3Key: link.body.s3Key,
    documentId: link.body.documentId,
    status: 'uploaded',
  });

  const identify = { ...dataset, s3Key: link.body.s3Key };
  const get = await call('GET', DOCS, { query: identify });
  expect(get.status).toBe(200);
  expect(get.body).toMatchObject({
    s3Key: link.body.s3Key,
    documentId: link.body.documentId,
    // `uploaded` until the worker has processed it, then `ready`; a small file gets there fast.
    status: expect.stringMatching(/^(uploaded|ready)$/),
    contentType: 'text/plain',
    fileSize: Buffer.byteLength(content),
    label1: 'topic:setup',
    label2: null,
    customMeta1: 'author=ops',
    customMeta2: null,
  });

  const ready = await pollUntil(
    () => call('GET', DOCS, { query: identify }),
    (r) => r.body.status !== 'uploaded',
  );
  expect(ready.body).toMatchObject({ status: 'ready', error: null });

  const patch = await call('PATCH', `${DOCS}/metadata`, {
    body: { ...identify, label1: 'topic:installation', label2: 'product:router', customMeta1: null },
  });
  expect(patch.status).toBe(200);
  expect(patch.body).toMatchObject({ label1: 'topic:installation', label2: 'product:router', customMeta1: null });

  const after = await call('GET', DOCS, { query: identify });
  expect(after.body).toMatchObject({ label1: 'topic:installation', label2: 'product:router', customMeta1: null });

  const removed = await call('DELETE', DOCS, { body: identify });
  expect(removed.status).toBe(200);
  expect(removed.body).toEqual({
    success: true,
    documentId: link.body.documentId,
    s3Key: link.body.s3Key,
    deleted: true,
  });

  const gone = await call('GET', DOCS, { query: identify });
  expect(gone.status).toBe(404);
  expect(gone.body).toMatchObject({ success: false, error: { code: 'DOCUMENT_NOT_FOUND' } });

  // The object is gone too: the old pre-signed URL's object cannot be read back through the API, and a second
  // DELETE is a 404 rather than a silent success.
  expect((await call('DELETE', DOCS, { body: identify })).status).toBe(404);
});
