/**
 * The versions of an agent's definition over HTTP on the local runtime (dynalite behind it, the worker in its
 * process): who saved each version and when, an unchanged save, one version whole, a restore as the next version,
 * the version guard, paging, another organization, and an agent's deletion taking the history with it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { LOCAL_REGION } from '../../lib/local/engine-credentials';
import { helloAndTicketDefinition } from '../helpers/flow-definitions';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let call: ReturnType<typeof client>;
let agentId: string;

interface Author {
  kind: 'person' | 'token';
  email?: string;
  tokenId?: string;
}
interface Saved {
  version: number;
  updatedAt: string;
  updatedBy: Author | null;
  restoredFrom: number | null;
  unchanged: boolean;
  definition: { instructions?: string; flows: unknown[] };
}
interface VersionPage {
  data: {
    version: number;
    current: boolean;
    updatedAt: string;
    updatedBy: Author | null;
    restoredFrom: number | null;
    flowCount: number;
    nodeCount: number;
  }[];
  count: number;
  nextToken: string | null;
}

beforeAll(async () => {
  service = await startService();
  call = client(service);
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Versions' } });
  agentId = agent.body.agentId;
}, 120_000);
afterAll(async () => {
  await service?.stop();
});

const base = () => `/dashboard/agents/${agentId}/definition/production`;
const edited = (instructions: string) => ({ ...structuredClone(helloAndTicketDefinition), instructions });

/** Items of the agent in the agentDefinitions table, read past the API. */
async function storedItems(agent: string): Promise<string[]> {
  if (!service.dynamodbEndpoint) throw new Error('the local runtime did not print its DynamoDB endpoint');
  const dynamo = new DynamoDBClient({
    endpoint: service.dynamodbEndpoint,
    region: LOCAL_REGION,
    credentials: service.engineCredentials ?? undefined,
  });
  try {
    const { Items = [] } = await DynamoDBDocumentClient.from(dynamo).send(
      new ScanCommand({ TableName: 'agentDefinitions' }),
    );
    return Items.filter((item) => item.agentId === agent)
      .map((item) => String(item.environment))
      .sort();
  } finally {
    dynamo.destroy();
  }
}

it('keeps every saved version with who and when, newest first; an unchanged save stores nothing', async () => {
  // A second token of the organization saves the third version: the list tells the two callers apart.
  const made = await call<{ token: string; tokenId: string }>('POST', '/dashboard/tokens', {
    body: { scopes: ['dashboard'], name: 'ci' },
  });
  expect(made.status).toBe(201);
  const first = await call<Saved>('PUT', base(), { body: edited('one') });
  const second = await call<Saved>('PUT', base(), { body: { ...edited('two'), expectedVersion: 1 } });
  const third = await call<Saved>('PUT', base(), { body: edited('three'), token: made.body.token });
  expect([first, second, third].map((r) => [r.status, r.body.version, r.body.unchanged])).toEqual([
    [200, 1, false],
    [200, 2, false],
    [200, 3, false],
  ]);
  expect(first.body.updatedBy).toEqual({ kind: 'token', tokenId: expect.any(String) });
  expect(third.body.updatedBy).toEqual({ kind: 'token', tokenId: made.body.tokenId });
  expect(first.body.updatedBy?.tokenId).not.toBe(made.body.tokenId);

  // The same definition again (its keys in another order): 200, the current version, nothing stored.
  const same = Object.fromEntries(Object.entries(edited('three')).reverse());
  const unchanged = await call<Saved>('PUT', base(), { body: same });
  expect(unchanged.status).toBe(200);
  expect(unchanged.body).toMatchObject({ version: 3, unchanged: true, updatedAt: third.body.updatedAt });

  const list = await call<VersionPage>('GET', `${base()}/versions`);
  expect(list.status).toBe(200);
  expect(list.body).toMatchObject({ success: true, count: 3, nextToken: null });
  expect(list.body.data).toEqual([
    {
      version: 3,
      current: true,
      updatedAt: third.body.updatedAt,
      updatedBy: { kind: 'token', tokenId: made.body.tokenId },
      restoredFrom: null,
      flowCount: 2,
      nodeCount: 4,
    },
    { ...list.body.data[1], version: 2, current: false, updatedAt: second.body.updatedAt },
    { ...list.body.data[2], version: 1, current: false, updatedAt: first.body.updatedAt },
  ]);
  expect(list.body.data[2].updatedBy).toEqual(first.body.updatedBy);
  expect(list.body.data.map((v) => v.updatedAt)).toEqual([...list.body.data.map((v) => v.updatedAt)].sort().reverse());
});

it('answers one version whole, and 404 DEFINITION_VERSION_NOT_FOUND for one never stored', async () => {
  const one = await call<Saved>('GET', `${base()}/versions/1`);
  expect(one.status).toBe(200);
  expect(one.body).toMatchObject({ agentId, environment: 'production', version: 1, restoredFrom: null });
  expect(one.body.definition).toMatchObject({ instructions: 'one', flows: helloAndTicketDefinition.flows });
  const current = await call<Saved>('GET', `${base()}/versions/3`);
  expect(current.body.definition.instructions).toBe('three');
  for (const version of ['4', '99']) {
    const missing = await call<{ error: { code: string } }>('GET', `${base()}/versions/${version}`);
    expect([missing.status, missing.body.error.code]).toEqual([404, 'DEFINITION_VERSION_NOT_FOUND']);
  }
  const bad = await call<{ error: { code: string; details: { field: string }[] } }>('GET', `${base()}/versions/0`);
  expect([bad.status, bad.body.error.code, bad.body.error.details[0].field]).toEqual([
    400,
    'VALIDATION_ERROR',
    'version',
  ]);
  const elsewhere = await call('GET', `/dashboard/agents/${agentId}/definition/staging/versions/1`);
  expect(elsewhere.status).toBe(404);
});

it('restores a version as the next one; restoring it again, or a stale guard, stores nothing', async () => {
  const stale = await call<{ error: { code: string; details: { field: string }[] } }>(
    'POST',
    `${base()}/versions/1/restore`,
    { body: { expectedVersion: 2 } },
  );
  expect([stale.status, stale.body.error.code, stale.body.error.details[0].field]).toEqual([
    409,
    'VERSION_CONFLICT',
    'expectedVersion',
  ]);
  const restored = await call<Saved>('POST', `${base()}/versions/1/restore`, { body: { expectedVersion: 3 } });
  expect(restored.status).toBe(200);
  expect(restored.body).toMatchObject({ version: 4, restoredFrom: 1, unchanged: false });
  const one = await call<Saved>('GET', `${base()}/versions/1`);
  const current = await call<Saved>('GET', base());
  expect(current.body.version).toBe(4);
  expect(current.body.definition).toEqual(one.body.definition);
  // No body at all is a restore without a guard; the same content again is the unchanged case.
  const again = await call<Saved>('POST', `${base()}/versions/1/restore`);
  expect(again.body).toMatchObject({ version: 4, unchanged: true });
  // A PUT on a version that is no longer current is refused, and stores nothing.
  const late = await call<{ error: { code: string } }>('PUT', base(), {
    body: { ...edited('late'), expectedVersion: 3 },
  });
  expect([late.status, late.body.error.code]).toEqual([409, 'VERSION_CONFLICT']);
  expect((await call<Saved>('GET', base())).body.version).toBe(4);
});

it('pages through the versions with limit and nextToken, and keeps a token to its own list', async () => {
  const seen: number[][] = [];
  let nextToken: string | null | undefined;
  do {
    const page = await call<VersionPage>('GET', `${base()}/versions`, {
      query: { limit: '3', ...(nextToken ? { nextToken } : {}) },
    });
    expect(page.status).toBe(200);
    seen.push(page.body.data.map((v) => v.version));
    nextToken = page.body.nextToken;
  } while (nextToken);
  expect(seen).toEqual([[4, 3, 2], [1]]);
  const first = await call<VersionPage>('GET', `${base()}/versions`, { query: { limit: '1' } });
  const foreign = await call<{ error: { details: { field: string; rule: string }[] } }>(
    'GET',
    `/dashboard/agents/${agentId}/definition/staging/versions`,
    { query: { nextToken: first.body.nextToken as string } },
  );
  expect([foreign.status, foreign.body.error.details[0]]).toEqual([
    400,
    expect.objectContaining({ field: 'nextToken', rule: 'nextToken.query' }),
  ]);
  const tooMany = await call('GET', `${base()}/versions`, { query: { limit: '101' } });
  expect(tooMany.status).toBe(400);
  const empty = await call<VersionPage>('GET', `/dashboard/agents/${agentId}/definition/staging/versions`);
  expect(empty.body).toMatchObject({ data: [], count: 0, nextToken: null });
});

it('is not found for another organization', async () => {
  const stranger = client(service, service.tokens[1]);
  for (const [method, path] of [
    ['GET', `${base()}/versions`],
    ['GET', `${base()}/versions/1`],
    ['POST', `${base()}/versions/1/restore`],
  ] as const) {
    const answer = await stranger<{ error: { code: string } }>(method, path);
    expect([method, path, answer.status, answer.body.error.code]).toEqual([method, path, 404, 'AGENT_NOT_FOUND']);
  }
  expect((await call<Saved>('GET', base())).body.version).toBe(4);
});

it('deletes the history with its agent', async () => {
  expect(await storedItems(agentId)).toEqual([
    'production',
    'production#v#0000000001',
    'production#v#0000000002',
    'production#v#0000000003',
  ]);
  expect((await call('DELETE', `/dashboard/agents/${agentId}`)).status).toBe(202);
  const gone = await pollUntil(
    () => call('DELETE', `/dashboard/agents/${agentId}`),
    (r) => r.status === 404,
    90_000,
  );
  expect(gone.status).toBe(404);
  expect(await storedItems(agentId)).toEqual([]);
}, 120_000);
