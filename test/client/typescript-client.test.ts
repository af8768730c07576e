/**
 * The typed client (clients/typescript, issue 39 item 2), built with its own tsconfig as its package builds it and
 * used as a customer would, against the local runtime: uploadDocument runs upload-link → PUT → upload-complete and
 * waits until `ready` (then a typed query finds it), a file processing refuses answers `failed` with its code, an
 * update and a delete go through, and the API's errors arrive as ApiError with their code, message and details.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type * as Client from '../../clients/typescript/src';
import type { DocumentFields, KnowledgeDocument } from '../../clients/typescript/src';
import { startService, type TestService } from '../helpers/service';

jest.setTimeout(120_000);

const PACKAGE = resolve(__dirname, '../../clients/typescript');

let service: TestService;
let outDir: string;
let sdk: typeof Client;
let api: Client.PlatformClient;
let dataset: { agentId: string; knowledgeBaseId: string; environment: 'production' };

beforeAll(async () => {
  // Inside the package, so the build resolves openapi-fetch as an installed package would.
  outDir = mkdtempSync(join(PACKAGE, '.test-dist-'));
  await promisify(execFile)(process.execPath, [
    require.resolve('typescript/bin/tsc'),
    '-p',
    join(PACKAGE, 'tsconfig.json'),
    '--outDir',
    outDir,
  ]);
  sdk = require(join(outDir, 'index.js')) as typeof Client;

  service = await startService();
  api = sdk.createClient({ baseUrl: `${service.baseUrl}/`, token: service.tokens[0] });
  const agent = (await sdk.unwrap(
    api.POST('/dashboard/agents', { body: { displayName: 'Client bot' } }),
  )) as unknown as {
    agentId: string;
  };
  const knowledgeBase = (await sdk.unwrap(
    api.POST('/dashboard/agents/{agentId}/knowledge/bases', {
      params: { path: { agentId: agent.agentId } },
      body: { name: 'Manuals', description: 'Product manuals' },
    }),
  )) as unknown as { knowledgeBaseId: string };
  dataset = { agentId: agent.agentId, knowledgeBaseId: knowledgeBase.knowledgeBaseId, environment: 'production' };
});

afterAll(async () => {
  await service?.stop();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

it('uploads a document in one call and waits until it is ready, labels and all', async () => {
  const text = 'To reset the router, hold the power button for five seconds.';
  const answer: KnowledgeDocument = await api.uploadDocument(
    { name: 'guide.txt', content: text },
    {
      ...dataset,
      labels: { label1: 'topic:setup' },
      customMeta: { customMeta1: 'author=ops' },
      customDocumentId: 'guide-1',
      wait: { timeoutMs: 30_000 },
    },
  );
  // What the helpers read of a document is what the OpenAPI document says it is: once the document describes this
  // answer (npm run web:types), a field they read that it types otherwise fails the type-check here.
  const document: Pick<DocumentFields, 'status' | 'error' | 's3Key' | 'documentId'> = answer;
  expect(document).toMatchObject({
    status: 'ready',
    error: null,
    fileName: 'guide.txt',
    customDocumentId: 'guide-1',
    label1: 'topic:setup',
    customMeta1: 'author=ops',
    fileSize: Buffer.byteLength(text),
  });

  const query = (await sdk.unwrap(
    api.POST('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/query', {
      params: { path: dataset },
      body: { query: 'reset the router', filters: [{ key: 'label1', operator: 'equals', value: 'topic:setup' }] },
    }),
  )) as unknown as { results: { content: string; metadata: { documentId: string } }[] };
  expect(query.results.map((hit) => hit.metadata.documentId)).toEqual([document.documentId]);
});

it('answers upload-complete’s answer when not asked to wait, and the same document once waited for', async () => {
  const completion = await api.uploadDocument(
    { name: 'notes.md', content: Buffer.from('# Notes\n\nThe warranty lasts two years.') },
    { ...dataset },
  );
  expect(completion).toMatchObject({ type: 'document', status: 'uploaded' });
  const document = await api.waitForDocument({ ...dataset, s3Key: completion.s3Key });
  expect(document).toMatchObject({ documentId: completion.documentId, status: 'ready' });
});

it('answers a document processing refused as failed, with its error code', async () => {
  const document = await api.uploadDocument(
    { name: 'blank.txt', content: new Blob(['   \n\n  ']) },
    { ...dataset, wait: true },
  );
  expect(document.status).toBe('failed');
  expect(document.error?.code).toBe('EMPTY_DOCUMENT');
});

it('updates a document’s content and deletes it', async () => {
  await api.uploadDocument(
    { name: 'faq.txt', content: 'Shipping takes three days.' },
    {
      ...dataset,
      customDocumentId: 'faq',
      wait: true,
    },
  );
  const updated = await api.updateDocument(
    { name: 'faq.txt', content: 'Shipping takes five days.' },
    { ...dataset, customDocumentId: 'faq', labels: { label2: 'lang:en' }, wait: true },
  );
  expect(updated).toMatchObject({ status: 'ready', label2: 'lang:en', fileSize: 25 });

  await api.deleteDocument({ ...dataset, customDocumentId: 'faq' });
  const gone = await api.getDocument({ ...dataset, customDocumentId: 'faq' }).catch((error: unknown) => error);
  expect(gone).toBeInstanceOf(sdk.ApiError);
  expect(gone).toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND' });
});

it('raises the API’s errors as ApiError with their code, message and details', async () => {
  await api.uploadDocument({ name: 'a.txt', content: 'First.' }, { ...dataset, customDocumentId: 'taken' });
  const duplicate = await api
    .uploadDocument({ name: 'b.txt', content: 'Second.' }, { ...dataset, customDocumentId: 'taken' })
    .catch((error: unknown) => error);
  expect(duplicate).toBeInstanceOf(sdk.ApiError);
  expect(duplicate).toMatchObject({
    name: 'ApiError',
    status: 409,
    code: 'DUPLICATE_CUSTOM_DOCUMENT_ID',
    details: [{ field: 'customDocumentId', rule: 'unique' }],
  });
  expect((duplicate as Error).message).toMatch(/taken/);

  const invalid = await api
    .uploadDocument({ name: 'c.txt', content: 'Third.' }, { ...dataset, labels: { label1: 'topic:Setup' } })
    .catch((error: unknown) => error);
  expect(invalid).toMatchObject({
    status: 400,
    code: 'VALIDATION_ERROR',
    details: [{ field: 'label1', rule: 'label.characters' }],
  });

  const stranger = sdk.createClient({ baseUrl: service.baseUrl, token: 'not-a-token-0123456789' });
  await expect(sdk.unwrap(stranger.GET('/api/v1/agents/list'))).rejects.toMatchObject({
    status: 401,
    code: 'UNAUTHORIZED',
  });
});
