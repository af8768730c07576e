/** Agents, knowledge bases and tokens through the dashboard endpoints. */
import { hashToken } from '#core/auth/tokens';
import { createDataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

/** How long a revoked token may still be answered in a deployment: API Gateway's 60 s, the read cache's 5 s, 5 s spare. */
const REVOCATION_BOUND_MS = 70_000;

let service: TestService;
let call: ReturnType<typeof client>;

beforeAll(async () => {
  service = await startService();
  call = client(service);
});
afterAll(() => service?.stop());

interface KnowledgeBase {
  knowledgeBaseId: string;
  agentId: string;
  name: string;
  description: string | null;
  createdAt: string;
  updatedAt: string;
}

it('creates and lists agents in creation order', async () => {
  const first = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: '  First  ' } });
  const second = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Second' } });
  const list = await call<{ data: { agentId: string; displayName: string; createdAt: string }[]; count: number }>(
    'GET',
    '/dashboard/agents',
  );
  expect(list.status).toBe(200);
  const ids = list.body.data.map((a) => a.agentId);
  expect(ids.indexOf(first.body.agentId)).toBeLessThan(ids.indexOf(second.body.agentId));
  expect(list.body.count).toBe(list.body.data.length);
  expect(list.body.data.find((a) => a.agentId === first.body.agentId)?.displayName).toBe('First');
});

it('reads and renames an agent; a bad name is a 400 naming the field, an unknown agent a 404, and nothing changes', async () => {
  const created = await call<{ agentId: string; createdAt: string }>('POST', '/dashboard/agents', {
    body: { displayName: 'Before' },
  });
  const path = `/dashboard/agents/${created.body.agentId}`;
  const read = await call<{ agentId: string; displayName: string; createdAt: string }>('GET', path);
  expect(read.status).toBe(200);
  expect(read.body).toMatchObject({
    agentId: created.body.agentId,
    displayName: 'Before',
    createdAt: created.body.createdAt,
  });

  const renamed = await call('PATCH', path, { body: { displayName: '  After  ' } });
  expect(renamed.status).toBe(200);
  expect(renamed.body).toMatchObject({
    agentId: created.body.agentId,
    displayName: 'After',
    createdAt: created.body.createdAt,
  });

  for (const body of [{ displayName: '   ' }, { displayName: 'x'.repeat(201) }, {}, { displayName: 'Ok', extra: 1 }]) {
    const refused = await call<{ success: boolean; error: { code: string; details: { field: string }[] } }>(
      'PATCH',
      path,
      { body },
    );
    expect(refused.status).toBe(400);
    expect(refused.body.success).toBe(false);
    expect(refused.body.error.code).toBe('VALIDATION_ERROR');
    expect(refused.body.error.details[0].field).toEqual(expect.any(String));
  }
  const unknown = '00000000-0000-4000-8000-000000000000';
  for (const method of ['GET', 'PATCH'] as const) {
    const missing = await call<{ error: { code: string } }>(method, `/dashboard/agents/${unknown}`, {
      body: method === 'PATCH' ? { displayName: 'Ghost' } : undefined,
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('AGENT_NOT_FOUND');
  }
  expect((await call<{ displayName: string }>('GET', path)).body.displayName).toBe('After');
  const list = await call<{ data: { agentId: string; displayName: string }[] }>('GET', '/dashboard/agents');
  expect(list.body.data.find((a) => a.agentId === created.body.agentId)?.displayName).toBe('After');
});

it('creates, reads, renames, lists and deletes a knowledge base', async () => {
  const { agentId } = (
    await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'KB owner' } })
  ).body;
  const bases = `/dashboard/agents/${agentId}/knowledge/bases`;
  const created = await call<KnowledgeBase>('POST', bases, { body: { name: 'Policies' } });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ agentId, name: 'Policies', description: null });
  const one = `${bases}/${created.body.knowledgeBaseId}`;

  const renamed = await call<KnowledgeBase>('PATCH', one, { body: { name: 'HR policies', description: 'For staff' } });
  expect(renamed.body).toMatchObject({
    name: 'HR policies',
    description: 'For staff',
    createdAt: created.body.createdAt,
  });
  const cleared = await call<KnowledgeBase>('PATCH', one, { body: { description: null } });
  expect(cleared.body).toMatchObject({ name: 'HR policies', description: null });
  expect((await call<KnowledgeBase>('GET', one)).body.name).toBe('HR policies');

  const list = await call<{ data: KnowledgeBase[]; count: number }>('GET', bases);
  expect(list.body.count).toBe(1);
  expect(list.body.data[0].knowledgeBaseId).toBe(created.body.knowledgeBaseId);

  const deleted = await call('DELETE', one);
  expect(deleted.status).toBe(202);
  expect(deleted.body).toEqual({
    success: true,
    knowledgeBaseId: created.body.knowledgeBaseId,
    agentId,
    status: 'deleting',
    startedAt: expect.any(String),
    defaultRetrievalChanged: [],
  });
  // Gone at once for every caller, while the job removes what it held.
  const gone = await call('GET', one);
  expect(gone.status).toBe(404);
  expect(gone.body).toMatchObject({ error: { code: 'KNOWLEDGE_BASE_NOT_FOUND' } });
  expect((await call<{ count: number }>('GET', bases)).body.count).toBe(0);
  expect((await call('PATCH', one, { body: { name: 'Back' } })).status).toBe(404);
  // Once the job has removed the row, a DELETE is a 404 like any unknown knowledge base.
  const after = await pollUntil(
    () => call('DELETE', one),
    (r) => r.status === 404,
  );
  expect(after.body).toMatchObject({ error: { code: 'KNOWLEDGE_BASE_NOT_FOUND' } });
});

it('refuses an empty PATCH of a knowledge base', async () => {
  const dataset = await createDataset(call);
  const response = await call(
    'PATCH',
    `/dashboard/agents/${dataset.agentId}/knowledge/bases/${dataset.knowledgeBaseId}`,
    {
      body: {},
    },
  );
  expect(response.status).toBe(400);
  expect(response.body).toMatchObject({ error: { details: [{ rule: 'atLeastOneOf' }] } });
});

it('deleting a knowledge base hides its documents at once, then removes them in every environment', async () => {
  const dataset = await createDataset(call, 'development');
  await uploadDocument(call, dataset, { fileName: 'dev.txt' });
  await uploadDocument(call, { ...dataset, environment: 'staging' }, { fileName: 'staging.txt' });
  const prod = await uploadDocument(call, { ...dataset, environment: 'production' }, { fileName: 'prod.txt' });
  const path = `/dashboard/agents/${dataset.agentId}/knowledge/bases/${dataset.knowledgeBaseId}`;
  const deleted = await call('DELETE', path);
  expect(deleted.status).toBe(202);
  expect(deleted.body).toMatchObject({ knowledgeBaseId: dataset.knowledgeBaseId, status: 'deleting' });
  // The customer API: its documents are 404 at once, and so is a new upload into it.
  const get = await call('GET', '/api/v1/knowledge/documents', {
    query: { ...dataset, environment: 'production', s3Key: prod.link.s3Key },
  });
  expect(get.status).toBe(404);
  expect(get.body).toMatchObject({ error: { code: 'KNOWLEDGE_BASE_NOT_FOUND' } });
  const link = await call('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...dataset, fileName: 'late.txt' },
  });
  expect(link.status).toBe(404);
  expect(link.body).toMatchObject({ error: { code: 'KNOWLEDGE_BASE_NOT_FOUND' } });

  // The job ends with the row: then a DELETE is a 404 (a repeat while it runs: test/integration/knowledge-base-delete).
  const end = await pollUntil(
    () => call('DELETE', path),
    (r) => r.status === 404,
  );
  expect(end.status).toBe(404);
});

interface TokenView {
  tokenId: string;
  name: string | null;
  prefix: string | null;
  scopes: string[];
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  status: 'active' | 'expired';
}

it(
  "lists the organization's tokens without their secrets, records their use, and revokes one at once",
  async () => {
    const created = await call<{
      token: string;
      tokenId: string;
      prefix: string;
      createdAt: string;
      expiresAt: string;
    }>('POST', '/dashboard/tokens', { body: { scopes: ['analytics'], name: 'reporting', expiresInDays: 30 } });
    expect(created.status).toBe(201);
    const { token, tokenId } = created.body;
    expect(created.body.prefix).toBe(token.slice(0, 8));
    expect(Date.parse(created.body.expiresAt) - Date.parse(created.body.createdAt)).toBe(30 * 86_400_000);

    const listed = async () => {
      const list = await call<{ data: TokenView[]; count: number }>('GET', '/dashboard/tokens');
      expect(list.status).toBe(200);
      expect(list.body.count).toBe(list.body.data.length);
      // Never the secret, nor its hash.
      expect(JSON.stringify(list.body)).not.toContain(token);
      expect(JSON.stringify(list.body)).not.toContain(hashToken(token));
      return list.body.data;
    };
    const before = (await listed()).find((t) => t.tokenId === tokenId);
    expect(before).toEqual({
      tokenId,
      name: 'reporting',
      prefix: token.slice(0, 8),
      scopes: ['analytics'],
      agentIds: null,
      createdAt: created.body.createdAt,
      expiresAt: created.body.expiresAt,
      lastUsedAt: null,
      // Made by the organization's DEV_TOKEN: its id, never its secret or hash.
      createdBy: { kind: 'token', tokenId: expect.stringMatching(/^[0-9a-f-]{36}$/) },
      status: 'active',
    });
    // Newest first.
    const all = await listed();
    expect(all.map((t) => t.createdAt)).toEqual([...all.map((t) => t.createdAt)].sort().reverse());

    const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Used' } });
    const use = () => call('POST', '/api/v1/events/agent', { token, body: { agentId: agent.body.agentId } });
    expect((await use()).status).toBe(200);
    const used = (await listed()).find((t) => t.tokenId === tokenId);
    expect(Date.parse(used?.lastUsedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(created.body.createdAt));

    const revoked = await call<{ tokenId: string; revokedAt: string }>('DELETE', `/dashboard/tokens/${tokenId}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ tokenId, revokedAt: expect.any(String) });
    // At once where one process serves every route (the local runtime); in a deployment within the documented bound:
    // API Gateway keeps an authorizer's answer 60 s, and the authorizer's container its token reads 5 s (README).
    const bound = service.dataDir === null ? REVOCATION_BOUND_MS : 0;
    expect((await pollUntil(use, (r) => r.status === 401, bound)).status).toBe(401);
    expect((await listed()).some((t) => t.tokenId === tokenId)).toBe(false);
    const again = await call<{ error: { code: string } }>('DELETE', `/dashboard/tokens/${tokenId}`);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('TOKEN_NOT_FOUND');
    const malformed = await call<{ error: { code: string; details: { field: string }[] } }>(
      'DELETE',
      '/dashboard/tokens/not-a-token-id',
    );
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details[0].field).toBe('tokenId');
  },
  REVOCATION_BOUND_MS + 30_000,
);

it('refuses expiresInDays out of 1..3650 with a 400 naming the field (expiry itself: token-expiry.test.ts)', async () => {
  for (const expiresInDays of [0, 3651, 1.5, '7']) {
    const refused = await call<{ error: { code: string; details: { field: string }[] } }>('POST', '/dashboard/tokens', {
      body: { scopes: ['dashboard'], expiresInDays },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details[0].field).toBe('expiresInDays');
  }
});

it('creates a token of the same organization that works at once', async () => {
  const created = await call<{ token: string; tokenId: string; scopes: string[] }>('POST', '/dashboard/tokens', {
    body: { scopes: ['dashboard', 'knowledge-management'], name: 'ci' },
  });
  expect(created.status).toBe(201);
  expect(created.body.token).toMatch(/^aps_[A-Za-z0-9_-]{43}$/);
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', {
    token: created.body.token,
    body: { displayName: 'made with the new token' },
  });
  expect(agent.status).toBe(201);
  // Same organization: the original token sees the agent.
  const list = await call<{ data: { agentId: string }[] }>('GET', '/dashboard/agents');
  expect(list.body.data.map((a) => a.agentId)).toContain(agent.body.agentId);
});
