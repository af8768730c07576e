/**
 * Tokens that cannot escalate (issue 22, finding 8), against the running local runtime: a token mints no scope it
 * lacks; a token restricted to agents sees the other agents of its organization exactly as another organization's;
 * a deleted token stops working at once locally (no authorizer cache here).
 */

import { createDataset, type Dataset, putFile, type UploadLink, uploadDocument } from '../helpers/fixtures';
import { helloAndTicketDefinition as definition } from '../helpers/flow-definitions';
import { type ApiResponse, client, startService, type TestService } from '../helpers/service';
import { type TokenTable, tokenTable } from '../helpers/token-table';

type Body = Record<string, unknown>;
type Created = { token: string; tokenId: string; scopes: string[]; agentIds: string[] | null; name: string | null };

const ALL = ['knowledge-management', 'analytics', 'dashboard', 'webhook'];
const DOCS = '/api/v1/knowledge/documents';

let service: TestService;
let orgA: ReturnType<typeof client>;
let orgB: ReturnType<typeof client>;
let tokens: TokenTable;
/** Two agents of org A: the restricted tokens below may use `mine`, never `sibling`. */
let mine: Dataset;
let sibling: Dataset;
let otherOrg: Dataset;
let siblingZipJobId: string;
let mineZipJobId: string;

const tokenCount = () => tokens.count();

async function mint(body: Body, token: string = service.tokens[0]): Promise<ApiResponse<Created & Body>> {
  return orgA<Created & Body>('POST', '/dashboard/tokens', { token, body });
}

async function minted(body: Body, token?: string): Promise<string> {
  const response = await mint(body, token);
  expect(response.status).toBe(201);
  return response.body.token;
}

function expectError(response: ApiResponse<Body>, status: number, code: string) {
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { success: false, error: { code, message: expect.any(String), details: expect.any(Array) } },
  });
}

async function zipJobOf(dataset: Dataset): Promise<string> {
  const empty = Buffer.from('PK\u0005\u0006'.padEnd(22, '\u0000'));
  return (await uploadDocument(orgA, dataset, { fileName: 'batch.zip' }, empty)).link.zipJobId as string;
}

beforeAll(async () => {
  service = await startService();
  const table = tokenTable(service);
  if (!table) throw new Error('these tests count and delete tokens in the local runtime’s DynamoDB');
  tokens = table;
  orgA = client(service, service.tokens[0]);
  orgB = client(service, service.tokens[1]);
  [mine, sibling, otherOrg] = await Promise.all([createDataset(orgA), createDataset(orgA), createDataset(orgB)]);
  for (const dataset of [mine, sibling]) {
    expect(
      (
        await orgA('PUT', `/dashboard/agents/${dataset.agentId}/definition/${dataset.environment}`, {
          body: definition,
        })
      ).status,
    ).toBe(200);
    await uploadDocument(orgA, dataset, { fileName: 'guide.txt' }, 'Hold the power button for five seconds.');
  }
  [mineZipJobId, siblingZipJobId] = await Promise.all([zipJobOf(mine), zipJobOf(sibling)]);
}, 60_000);
afterAll(async () => {
  tokens?.close();
  await service?.stop();
});

describe('a token never creates a wider token', () => {
  it('answers 403 FORBIDDEN to the dashboard-only token asking for every scope, naming the others; nothing is created', async () => {
    const dashboardOnly = await minted({ scopes: ['dashboard'] });
    const before = await tokenCount();
    const response = await mint({ scopes: ALL }, dashboardOnly);
    expect(response.status).toBe(403);
    expect(response.body).toEqual({
      success: false,
      error: {
        code: 'FORBIDDEN',
        message:
          'A token cannot create a token with a scope it does not hold: knowledge-management, analytics, webhook',
        details: ['knowledge-management', 'analytics', 'webhook'].map((scope) => ({
          field: 'scopes',
          rule: 'scopes.notHeld',
          message: `this token does not hold scope ${scope}`,
        })),
      },
    });
    expect(await tokenCount()).toBe(before);
  });

  it('lets a token create tokens with its scopes or fewer', async () => {
    const narrow = await minted({ scopes: ['dashboard', 'analytics'] });
    const child = await mint({ scopes: ['analytics', 'dashboard'], name: 'same' }, narrow);
    expect(child.status).toBe(201);
    expect(child.body).toMatchObject({ scopes: ['analytics', 'dashboard'], agentIds: null, name: 'same' });
    expect((await mint({ scopes: ['analytics'] }, narrow)).status).toBe(201);
    // The child really has no more than asked: analytics works, knowledge management is refused.
    expect((await orgA('GET', '/api/v1/agents/list', { token: child.body.token })).status).toBe(200);
    expectError(await orgA('GET', DOCS, { token: child.body.token, query: { ...mine, s3Key: 'x' } }), 403, 'FORBIDDEN');
  });
});

describe('a token restricted to agents', () => {
  let restricted: string;

  beforeAll(async () => {
    const created = await mint({ scopes: ALL, agentIds: [mine.agentId], name: 'mine only' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ scopes: ALL, agentIds: [mine.agentId], name: 'mine only' });
    restricted = created.body.token;
  });

  it('lists only its agents at GET /dashboard/agents and /api/v1/agents/list', async () => {
    for (const path of ['/dashboard/agents', '/api/v1/agents/list']) {
      const list = await orgA<{ data: { agentId: string }[]; count: number }>('GET', path, { token: restricted });
      expect(list.status).toBe(200);
      expect({ ids: list.body.data.map((a) => a.agentId), count: list.body.count }).toEqual({
        ids: [mine.agentId],
        count: 1,
      });
    }
    const whole = await orgA<{ data: { agentId: string }[] }>('GET', '/dashboard/agents');
    expect(whole.body.data.map((a) => a.agentId)).toEqual(expect.arrayContaining([mine.agentId, sibling.agentId]));
  });

  /** Requests naming an agent; each is sent for `mine`, `sibling` (same organization) and org B's agent. */
  const requests: [string, string, (d: Dataset) => string, (d: Dataset) => Body | undefined, 'query' | 'body'][] = [
    ['get a document', 'GET', () => DOCS, (d) => ({ ...d, customDocumentId: 'none' }), 'query'],
    ['get an upload link', 'POST', () => `${DOCS}/upload-link`, (d) => ({ ...d, fileName: 'x.txt' }), 'body'],
    ['query analytics events', 'POST', () => '/api/v1/events/agent', (d) => ({ agentId: d.agentId }), 'body'],
    ['list knowledge bases', 'GET', (d) => `/dashboard/agents/${d.agentId}/knowledge/bases`, () => undefined, 'body'],
    [
      'query a knowledge base',
      'POST',
      (d) => `/dashboard/agents/${d.agentId}/knowledge/${d.environment}/kb/${d.knowledgeBaseId}/query`,
      () => ({ query: 'power button' }),
      'body',
    ],
    [
      'get the definition',
      'GET',
      (d) => `/dashboard/agents/${d.agentId}/definition/${d.environment}`,
      () => undefined,
      'body',
    ],
    [
      'call a webhook',
      'POST',
      (d) => `/api/v1/webhooks/${d.agentId}/${d.environment}/Start`,
      () => ({ message: 'hi' }),
      'body',
    ],
    [
      'send an app event',
      'POST',
      (d) => `/api/v1/app-events/${d.agentId}/${d.environment}`,
      () => ({ appName: 'crm', eventName: 'ticket.created', payload: {} }),
      'body',
    ],
  ];

  it.each(requests)(
    'gets 404 AGENT_NOT_FOUND to %s of a sibling agent, as for another organization',
    async (name, method, path, input, where) => {
      const send = (d: Dataset, token: string) =>
        orgA<Body>(method, path(d), {
          token,
          ...(where === 'query' ? { query: input(d) as never } : { body: input(d) }),
        });
      const toSibling = await send(sibling, restricted);
      const toOtherOrg = await send(otherOrg, restricted);
      expectError(toSibling, 404, 'AGENT_NOT_FOUND');
      expect(toSibling.body).toEqual(
        JSON.parse(JSON.stringify(toOtherOrg.body).replaceAll(otherOrg.agentId, sibling.agentId)),
      );
      // Its own agent answers as to an unrestricted token (only "get a document" names a document that is not there).
      const own = await send(mine, restricted);
      const whole = await send(mine, service.tokens[0]);
      expect(own.status).toBe(whole.status);
      expect(own.status).toBe(name === 'get a document' ? 404 : 200);
      if (name === 'get a document') expectError(own, 404, 'DOCUMENT_NOT_FOUND');
    },
  );

  it("gets 404 for the sibling's ZIP import and upload, and can use its own", async () => {
    expectError(
      await orgA('GET', `/api/v1/knowledge/zip-jobs/${siblingZipJobId}`, { token: restricted }),
      404,
      'ZIP_JOB_NOT_FOUND',
    );
    expect((await orgA('GET', `/api/v1/knowledge/zip-jobs/${mineZipJobId}`, { token: restricted })).status).toBe(200);
    expect((await orgA('GET', `/api/v1/knowledge/zip-jobs/${siblingZipJobId}`)).status).toBe(200);

    const link = await orgA<UploadLink>('POST', `${DOCS}/upload-link`, { body: { ...sibling, fileName: 'p.txt' } });
    expect((await putFile(link.body, 'pending')).status).toBe(200);
    expectError(
      await orgA('POST', `${DOCS}/upload-complete`, { token: restricted, body: { uploadId: link.body.uploadId } }),
      404,
      'UPLOAD_NOT_FOUND',
    );
    // Nothing happened to it: the organization's unrestricted token completes it.
    expect((await orgA('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.body.uploadId } })).status).toBe(
      200,
    );
    const ownLink = await orgA<UploadLink>('POST', `${DOCS}/upload-link`, {
      token: restricted,
      body: { ...mine, fileName: 'own.txt' },
    });
    expect((await putFile(ownLink.body, 'own')).status).toBe(200);
    expect(
      (await orgA('POST', `${DOCS}/upload-complete`, { token: restricted, body: { uploadId: ownLink.body.uploadId } }))
        .status,
    ).toBe(200);
  });

  it('cannot create an agent (403 FORBIDDEN), and none is created', async () => {
    const before = (await orgA<{ count: number }>('GET', '/dashboard/agents')).body.count;
    const response = await orgA('POST', '/dashboard/agents', { token: restricted, body: { displayName: 'Escape' } });
    expectError(response, 403, 'FORBIDDEN');
    expect(response.body).toMatchObject({ error: { details: [{ field: '', rule: 'token.agentRestricted' }] } });
    expect((await orgA<{ count: number }>('GET', '/dashboard/agents')).body.count).toBe(before);
  });

  it('creates only tokens restricted to some of its agents', async () => {
    const before = await tokenCount();
    const unrestricted = await mint({ scopes: ['analytics'] }, restricted);
    expectError(unrestricted, 403, 'FORBIDDEN');
    expect(unrestricted.body).toMatchObject({ error: { details: [{ field: 'agentIds', rule: 'agentIds.notHeld' }] } });
    const wider = await mint({ scopes: ['analytics'], agentIds: [mine.agentId, sibling.agentId] }, restricted);
    expectError(wider, 404, 'AGENT_NOT_FOUND');
    expect(wider.body).toMatchObject({ error: { message: expect.stringContaining(sibling.agentId) } });
    expect(await tokenCount()).toBe(before);

    const child = await mint({ scopes: ['analytics'], agentIds: [mine.agentId] }, restricted);
    expect(child.status).toBe(201);
    expect(child.body.agentIds).toEqual([mine.agentId]);
    expectError(
      await orgA('POST', '/api/v1/events/agent', { token: child.body.token, body: { agentId: sibling.agentId } }),
      404,
      'AGENT_NOT_FOUND',
    );
    expect(await tokenCount()).toBe(before + 1);
  });
});

describe('agentIds of POST /dashboard/tokens', () => {
  const uuid = () => crypto.randomUUID();

  it.each([
    ['an empty list', () => [], 'agentIds', 'minItems'],
    ['101 agents', () => Array.from({ length: 101 }, uuid), 'agentIds', 'maxItems'],
    ['a repeated agent', () => [mine.agentId, sibling.agentId, mine.agentId], 'agentIds.2', 'unique'],
    ['an id that is not a UUID', () => [mine.agentId, 'agent-1'], 'agentIds.1', 'format.uuid'],
    ['a string', () => mine.agentId, 'agentIds', 'type'],
  ])('answers 400 VALIDATION_ERROR to %s', async (_name, agentIds, field, rule) => {
    const before = await tokenCount();
    const response = await mint({ scopes: ['analytics'], agentIds: agentIds() });
    expectError(response, 400, 'VALIDATION_ERROR');
    expect(response.body).toMatchObject({ error: { details: [{ field, rule }] } });
    expect(await tokenCount()).toBe(before);
  });

  it.each([
    ['an agent that does not exist', () => [mine.agentId, uuid()]],
    ["another organization's agent", () => [otherOrg.agentId]],
  ])('answers 404 AGENT_NOT_FOUND to %s', async (_name, agentIds) => {
    const before = await tokenCount();
    expectError(await mint({ scopes: ['analytics'], agentIds: agentIds() }), 404, 'AGENT_NOT_FOUND');
    expect(await tokenCount()).toBe(before);
  });

  it('is described in the OpenAPI document', async () => {
    const doc = await orgA<{
      paths: Record<string, { post: { requestBody: { content: { 'application/json': { schema: Body } } } } }>;
    }>('GET', '/api/v1/openapi.json', { token: null });
    const schema = doc.body.paths['/dashboard/tokens'].post.requestBody.content['application/json'].schema as {
      properties: Record<string, Body>;
      required: string[];
    };
    expect(schema.required).toEqual(['scopes']);
    expect(schema.properties.agentIds).toMatchObject({
      type: 'array',
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      items: { type: 'string', format: 'uuid' },
    });
  });
});

describe('revocation', () => {
  it('a token deleted from the tokens table is refused on the next request (no authorizer cache locally)', async () => {
    const token = await minted({ scopes: ['dashboard'] });
    expect((await orgA('GET', '/dashboard/agents', { token })).status).toBe(200);
    await tokens.remove(token);
    expectError(await orgA('GET', '/dashboard/agents', { token }), 401, 'UNAUTHORIZED');
  });
});
