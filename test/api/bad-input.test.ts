/** Each broken field, sent over HTTP, answers 400 with the error code and the field and rule it broke. */
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;
let s3Key: string;

beforeAll(async () => {
  service = await startService();
  call = client(service);
  dataset = await createDataset(call);
  s3Key = (await uploadDocument(call, dataset, { fileName: 'base.txt' })).link.s3Key;
});
afterAll(() => service?.stop());

const UPLOAD_LINK = '/api/v1/knowledge/documents/upload-link';
const long = (n: number) => 'x'.repeat(n);

type Case = [
  description: string,
  method: string,
  path: string,
  body: () => Record<string, unknown>,
  field: string,
  rule: string,
];

const uploadLinkBody = (changes: Record<string, unknown>) => () => ({ ...dataset, fileName: 'a.txt', ...changes });
const withoutField = (field: string) => () => {
  const body: Record<string, unknown> = { ...dataset, fileName: 'a.txt' };
  delete body[field];
  return body;
};
const patchBody = (changes: Record<string, unknown>) => () => ({ ...dataset, s3Key, ...changes });

const cases: Case[] = [
  ['label without namespace', 'POST', UPLOAD_LINK, uploadLinkBody({ label1: 'billing' }), 'label1', 'label.format'],
  [
    'label with uppercase',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ label2: 'Topic:billing' }),
    'label2',
    'label.characters',
  ],
  [
    'label with a space',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ label1: 'topic:bill ing' }),
    'label1',
    'label.characters',
  ],
  [
    'label over 50 characters',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ label1: `topic:${long(45)}` }),
    'label1',
    'label.maxLength',
  ],
  [
    'label with a UUID',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ label1: 'doc:123e4567-e89b-12d3-a456-426614174000' }),
    'label1',
    'label.noUuid',
  ],
  [
    'label with a timestamp',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ label1: 'at:1700000000' }),
    'label1',
    'label.noTimestamp',
  ],
  [
    'label with an ISO date',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ label2: 'day:2024-05-01' }),
    'label2',
    'label.noIsoDate',
  ],
  ['label that is a number', 'POST', UPLOAD_LINK, uploadLinkBody({ label1: 42 }), 'label1', 'type'],
  [
    'custom metadata of 501 characters',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ customMeta1: long(501) }),
    'customMeta1',
    'maxLength',
  ],
  [
    'custom metadata that is an object',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ customMeta4: { a: 1 } }),
    'customMeta4',
    'type',
  ],
  ['unknown environment', 'POST', UPLOAD_LINK, uploadLinkBody({ environment: 'prod' }), 'environment', 'enum'],
  ['missing environment', 'POST', UPLOAD_LINK, withoutField('environment'), 'environment', 'required'],
  ['missing fileName', 'POST', UPLOAD_LINK, withoutField('fileName'), 'fileName', 'required'],
  [
    'fileName without extension',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ fileName: 'README' }),
    'fileName',
    'fileName.extension',
  ],
  [
    'fileName with a slash',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ fileName: '../etc/passwd.txt' }),
    'fileName',
    'fileName.characters',
  ],
  ['agentId that is not a UUID', 'POST', UPLOAD_LINK, uploadLinkBody({ agentId: 'agent-1' }), 'agentId', 'format.uuid'],
  [
    'customDocumentId with a slash',
    'POST',
    UPLOAD_LINK,
    uploadLinkBody({ customDocumentId: 'a/b' }),
    'customDocumentId',
    'customDocumentId.format',
  ],
  ['an unknown field', 'POST', UPLOAD_LINK, uploadLinkBody({ label3: 'a:b' }), 'label3', 'unknownField'],
  [
    'uploadId that is not a UUID',
    'POST',
    '/api/v1/knowledge/documents/upload-complete',
    () => ({ uploadId: 'abc' }),
    'uploadId',
    'format.uuid',
  ],
  [
    'neither s3Key nor customDocumentId',
    'PATCH',
    '/api/v1/knowledge/documents/metadata',
    () => ({ ...dataset, label1: 'a:b' }),
    's3Key',
    'exactlyOneOf',
  ],
  [
    'both s3Key and customDocumentId',
    'PATCH',
    '/api/v1/knowledge/documents/metadata',
    patchBody({ customDocumentId: 'x', label1: 'a:b' }),
    'customDocumentId',
    'exactlyOneOf',
  ],
  [
    'invalid label in PATCH',
    'PATCH',
    '/api/v1/knowledge/documents/metadata',
    patchBody({ label2: 'UPPER:case' }),
    'label2',
    'label.characters',
  ],
  [
    'custom metadata too long in PATCH',
    'PATCH',
    '/api/v1/knowledge/documents/metadata',
    patchBody({ customMeta2: long(501) }),
    'customMeta2',
    'maxLength',
  ],
  [
    'update without fileName',
    'POST',
    '/api/v1/knowledge/documents/update/upload-link',
    patchBody({}),
    'fileName',
    'required',
  ],
  ['agent without displayName', 'POST', '/dashboard/agents', () => ({}), 'displayName', 'required'],
  ['token with an unknown scope', 'POST', '/dashboard/tokens', () => ({ scopes: ['admin'] }), 'scopes.0', 'enum'],
  ['token with no scopes', 'POST', '/dashboard/tokens', () => ({ scopes: [] }), 'scopes', 'minItems'],
];

it.each(cases)('answers 400 for %s', async (_description, method, path, body, field, rule) => {
  const response = await call<{
    success: boolean;
    error: { code: string; message: string; details: { field: string; rule: string }[] };
  }>(method, path, { body: body() });
  expect(response.status).toBe(400);
  expect(response.body.success).toBe(false);
  expect(response.body.error.code).toBe('VALIDATION_ERROR');
  expect(response.body.error.message).toEqual(expect.any(String));
  expect(response.body.error.details).toContainEqual(expect.objectContaining({ field, rule }));
});

it('names a broken query parameter of GET', async () => {
  const response = await call('GET', '/api/v1/knowledge/documents', {
    query: { ...dataset, environment: 'live', s3Key },
  });
  expect(response.status).toBe(400);
  expect(response.body).toMatchObject({ error: { details: [{ field: 'environment', rule: 'enum' }] } });
});

it.each([
  ['malformed JSON', '{"agentId":', 'application/json', 400, 'INVALID_JSON'],
  ['a JSON array', '[1,2]', 'application/json', 400, 'VALIDATION_ERROR'],
  ['a form body', 'agentId=1', 'application/x-www-form-urlencoded', 415, 'UNSUPPORTED_MEDIA_TYPE'],
])('answers %s with its own code', async (_name, rawBody, contentType, status, code) => {
  const response = await call('POST', UPLOAD_LINK, { rawBody, headers: { 'content-type': contentType } });
  expect(response.status).toBe(status);
  expect(response.body).toMatchObject({ success: false, error: { code, details: expect.any(Array) } });
});

it('answers 413 for a JSON body over 1 MiB', async () => {
  const response = await call('POST', UPLOAD_LINK, {
    body: { ...dataset, fileName: 'a.txt', customMeta1: long(1024 * 1024) },
  });
  expect(response.status).toBe(413);
  expect(response.body).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
});

// Found by test/proof/fuzz.test.ts: each of these was a 500, a lost answer or a stalled connection.

it('answers query keys named like Object.prototype members as unknown fields', async () => {
  const response = await call('GET', '/dashboard/agents', {
    // fromEntries: in an object literal `__proto__` would set the prototype instead of making a key.
    query: Object.fromEntries([
      ['__proto__', 'x'],
      ['constructor', 'y'],
      ['toString', 'z'],
    ]),
  });
  expect(response.status).toBe(400);
  expect(response.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
  const fields = (response.body as { error: { details: { field: string; rule: string }[] } }).error.details;
  expect(fields).toEqual(
    expect.arrayContaining(
      ['__proto__', 'constructor', 'toString'].map((field) => expect.objectContaining({ field, rule: 'unknownField' })),
    ),
  );
});

it.each([
  ['objects', `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`],
  ['arrays', `{"flows":${'['.repeat(5000)}${']'.repeat(5000)}}`],
])('answers a body of %s nested 5000 deep with 400 maxDepth', async (_kind, rawBody) => {
  for (const path of [
    `/dashboard/agents/${dataset.agentId}/definition/production/validate`,
    `/api/v1/webhooks/${dataset.agentId}/production/Start`,
  ]) {
    const response = await call('POST', path, { rawBody, headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      error: { code: 'VALIDATION_ERROR', details: [{ field: '', rule: 'maxDepth' }] },
    });
  }
});

it('answers a default retrieval minScore that DynamoDB cannot store with 400', async () => {
  const response = await call('PUT', `/dashboard/agents/${dataset.agentId}/retrieval/production`, {
    body: { enabled: true, knowledgeBases: [{ knowledgeBaseId: dataset.knowledgeBaseId, minScore: 1e-200 }] },
  });
  expect(response.status).toBe(400);
  expect(response.body).toMatchObject({
    error: { details: [{ field: 'knowledgeBases.0.minScore', rule: 'minScore.precision' }] },
  });
});

it('answers 413 to a body over 10 MB and then the next request on the same connection', async () => {
  // One keep-alive socket: the oversized body must be read to its end, not left to be parsed as the next request.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const { hostname, port } = new URL(service.baseUrl);
  const send = (method: string, path: string, headers: Record<string, string>, body?: Buffer) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = httpRequest({ agent, host: hostname, port, method, path, headers, timeout: 10_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      });
      request.on('timeout', () => request.destroy(new Error('no answer within 10 s')));
      request.on('error', reject);
      request.end(body);
    });
  try {
    const body = Buffer.alloc(11 * 1024 * 1024, 0x20);
    const big = await send(
      'POST',
      '/dashboard/agents',
      {
        authorization: `Bearer ${service.tokens[0]}`,
        'content-type': 'application/json',
        'content-length': String(body.length),
      },
      body,
    );
    expect(big.status).toBe(413);
    expect(JSON.parse(big.text)).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE', details: [] } });
    const next = await send('GET', '/health', {});
    expect(next.status).toBe(200);
  } finally {
    agent.destroy();
  }
});

// Node's HTTP parser refuses these before any route; in AWS, API Gateway's front does, so only the local runtime
// is asked.
if (!process.env.TEST_BASE_URL) {
  /** Raw bytes to the service's port; the whole answer once the server closes the connection. */
  function sendRaw(bytes: Buffer): Promise<string> {
    const { hostname, port } = new URL(service.baseUrl);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      const chunks: Buffer[] = [];
      socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
      socket.on('error', reject);
      socket.end(bytes);
    });
  }

  it.each([
    [
      'bytes that are not HTTP in the request line',
      Buffer.from('GET /h\xe9alth HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1'),
      400,
      'BAD_REQUEST',
    ],
    [
      'headers over 16 KB',
      Buffer.from(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      431,
      'HEADERS_TOO_LARGE',
    ],
  ])('answers %s with the error body, before any route', async (_name, bytes, status, code) => {
    const answer = await sendRaw(bytes);
    const [head, body] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe(
      `HTTP/1.1 ${status} ${status === 400 ? 'Bad Request' : 'Request Header Fields Too Large'}`,
    );
    expect(head.toLowerCase()).toContain('content-type: application/json');
    expect(JSON.parse(body)).toEqual({ success: false, error: { code, message: expect.any(String), details: [] } });
    expect((await client(service)('GET', '/health')).status).toBe(200);
  });
}
