/**
 * The token rules of the core (issue 22): a token never creates a wider token, and a token restricted to agents
 * sees nothing of the other agents, against the real DynamoDB stores on dynalite.
 */
import { randomUUID } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoAgentStore } from '#adapters/store/dynamodb/agent-store';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { DynamoTokenStore } from '#adapters/store/dynamodb/token-store';
import { excessOver } from '#core/auth/grants';
import { authenticate, callerContext, callerFromContext, hashToken, issueToken } from '#core/auth/tokens';
import { createAgent, createToken, listAgents } from '#core/dashboard/dashboard';
import { AppError } from '#core/errors';
import {
  type Caller,
  mayUseAgent,
  ownsRecord,
  requireAgent,
  requireKnowledgeBase,
  requireWholeOrganization,
  visibleAgents,
} from '#core/tenancy/tenancy';
import { SCOPES, type Scope } from '../../../../lib/routes';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

let dynamo: LocalDynamo;
let deps: {
  agents: DynamoAgentStore;
  knowledgeBases: DynamoKnowledgeBaseStore;
  tokens: DynamoTokenStore;
  clock: { now: () => Date };
  ids: { uuid: () => string };
};
const ORG = randomUUID();
const OTHER_ORG = randomUUID();
const agentA = randomUUID();
const agentB = randomUUID();
const agentOfOtherOrg = randomUUID();
const kbOfB = randomUUID();

const caller = (scopes: readonly string[], agentIds?: readonly string[]): Caller => ({
  organizationId: ORG,
  tokenId: randomUUID(),
  scopes,
  ...(agentIds ? { agentIds } : {}),
});

async function tokenCount(): Promise<number> {
  const page = await dynamo.client.send(new ScanCommand({ TableName: 'tokens', Select: 'COUNT' }));
  return page.Count ?? 0;
}

/** A caller that is a token stored in the table (createToken reads its record: its end and lineage). */
async function minted(scopes: readonly Scope[], agentIds?: readonly string[]): Promise<Caller> {
  const { record } = await issueToken(deps.tokens, {
    organizationId: ORG,
    tokenId: randomUUID(),
    scopes,
    ...(agentIds ? { agentIds } : {}),
    name: 'issuer',
    createdAt: '2026-03-01T09:00:00.000Z',
  });
  return { organizationId: ORG, tokenId: record.tokenId, scopes, ...(agentIds ? { agentIds } : {}) };
}

/** The AppError a promise rejects with, as `{ status, code, details }`. */
async function failure(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return { status: error.status, code: error.code, message: error.message, details: error.details };
}

beforeAll(async () => {
  dynamo = await startDynalite();
  await Promise.all(
    (['tokens', 'agents', 'knowledgeBases'] as const).map((name) => dynamo.createTable(name, TABLES[name])),
  );
  deps = {
    agents: new DynamoAgentStore(dynamo.client, 'agents'),
    knowledgeBases: new DynamoKnowledgeBaseStore(dynamo.client, 'knowledgeBases'),
    tokens: new DynamoTokenStore(dynamo.client, 'tokens'),
    clock: { now: () => new Date('2026-03-01T10:00:00.000Z') },
    ids: { uuid: randomUUID },
  };
  const createdAt = '2026-03-01T09:00:00.000Z';
  await deps.agents.put({ organizationId: ORG, agentId: agentA, displayName: 'A', createdAt });
  await deps.agents.put({ organizationId: ORG, agentId: agentB, displayName: 'B', createdAt });
  await deps.agents.put({ organizationId: OTHER_ORG, agentId: agentOfOtherOrg, displayName: 'X', createdAt });
  await deps.knowledgeBases.put({
    organizationId: ORG,
    agentId: agentB,
    knowledgeBaseId: kbOfB,
    name: 'B manuals',
    description: null,
    createdAt,
    updatedAt: createdAt,
  });
});
afterAll(() => dynamo?.stop());

const auth = {
  get tokens() {
    return deps.tokens;
  },
  memberships: { get: async () => undefined },
};

/** Every non-empty subset of SCOPES. */
const scopeSets: Scope[][] = Array.from({ length: 2 ** SCOPES.length - 1 }, (_, i) =>
  SCOPES.filter((_, bit) => (i + 1) & (1 << bit)),
);

describe('excessOver: a token never grants a scope it lacks', () => {
  const pairs = scopeSets.flatMap((held) => scopeSets.map((asked) => [held, asked] as const));

  it.each(pairs.map(([held, asked]) => [held.join('+'), asked.join('+'), held, asked]))(
    'held %s, asked %s',
    (_h, _a, held, asked) => {
      const notHeld = asked.filter((scope) => !held.includes(scope));
      const excess = excessOver({ scopes: asked, expiresAt: null }, { scopes: held, expiresAt: null });
      expect(excess).toEqual(
        notHeld.map((scope) => ({ field: 'scopes', rule: 'scopes.notHeld', message: expect.stringContaining(scope) })),
      );
    },
  );

  it('counts a repeated scope once', () => {
    expect(
      excessOver({ scopes: ['webhook', 'webhook'], expiresAt: null }, { scopes: ['dashboard'], expiresAt: null }),
    ).toHaveLength(1);
  });

  it('refuses an unrestricted token to a restricted issuer, whatever its scopes', () => {
    const issuer = { scopes: SCOPES, agentIds: [agentA], expiresAt: null };
    expect(excessOver({ scopes: ['analytics'], expiresAt: null }, issuer)).toEqual([
      expect.objectContaining({ field: 'agentIds', rule: 'agentIds.notHeld' }),
    ]);
    expect(excessOver({ scopes: ['analytics'], agentIds: [agentA], expiresAt: null }, issuer)).toEqual([]);
  });

  it('refuses a later end, or none, to an issuer that ends', () => {
    const issuer = { scopes: SCOPES, expiresAt: '2026-03-02T10:00:00.000Z' };
    const lifetime = (expiresAt: string | null) => excessOver({ scopes: ['analytics'], expiresAt }, issuer);
    expect(lifetime(null)).toEqual([
      expect.objectContaining({ field: 'expiresInDays', rule: 'expiresAt.beyondIssuer' }),
    ]);
    expect(lifetime('2026-03-02T10:00:00.001Z')).toHaveLength(1);
    expect(lifetime('2026-03-02T10:00:00.000Z')).toEqual([]);
    expect(excessOver({ scopes: ['analytics'], expiresAt: null }, { scopes: SCOPES, expiresAt: null })).toEqual([]);
  });
});

describe('the agent restriction', () => {
  it('lets an unrestricted caller use every agent and a restricted one only its own', () => {
    expect(mayUseAgent(caller(SCOPES), agentB)).toBe(true);
    expect(mayUseAgent(caller(SCOPES, [agentA]), agentA)).toBe(true);
    expect(mayUseAgent(caller(SCOPES, [agentA]), agentB)).toBe(false);
    expect(mayUseAgent(caller(SCOPES, []), agentA)).toBe(false);
  });

  it('owns a record only of its organization and, when restricted, of its agents', () => {
    expect(ownsRecord(caller(SCOPES), { organizationId: ORG, agentId: agentB })).toBe(true);
    expect(ownsRecord(caller(SCOPES), { organizationId: OTHER_ORG, agentId: agentA })).toBe(false);
    expect(ownsRecord(caller(SCOPES, [agentA]), { organizationId: ORG, agentId: agentA })).toBe(true);
    expect(ownsRecord(caller(SCOPES, [agentA]), { organizationId: ORG, agentId: agentB })).toBe(false);
    expect(ownsRecord(caller(SCOPES, [agentA]), { organizationId: OTHER_ORG, agentId: agentA })).toBe(false);
  });

  it('answers another agent of the organization exactly as an agent of another organization', async () => {
    const restricted = caller(SCOPES, [agentA]);
    await expect(requireAgent(deps, restricted, agentA)).resolves.toMatchObject({ agentId: agentA });
    const sibling = await failure(requireAgent(deps, restricted, agentB));
    const foreign = await failure(requireAgent(deps, caller(SCOPES), agentOfOtherOrg));
    expect(sibling).toEqual({ ...foreign, message: `Agent ${agentB} was not found` });
    expect(sibling).toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND', details: [] });
    // The knowledge base of the sibling is not found through its agent either.
    expect(await failure(requireKnowledgeBase(deps, restricted, agentB, kbOfB))).toMatchObject({
      status: 404,
      code: 'AGENT_NOT_FOUND',
    });
    await expect(requireKnowledgeBase(deps, caller(SCOPES), agentB, kbOfB)).resolves.toMatchObject({
      knowledgeBaseId: kbOfB,
    });
  });

  it('lists only the agents of the restriction', async () => {
    const all = await listAgents(deps, caller(SCOPES));
    expect(all.map((a) => a.agentId).sort()).toEqual([agentA, agentB].sort());
    expect((await listAgents(deps, caller(SCOPES, [agentA]))).map((a) => a.agentId)).toEqual([agentA]);
    expect(visibleAgents(caller(SCOPES, [agentB, randomUUID()]), all).map((a) => a.agentId)).toEqual([agentB]);
  });

  it('refuses organization-wide actions to a restricted token: it creates no agent', async () => {
    expect(() => requireWholeOrganization(caller(SCOPES), 'create an agent')).not.toThrow();
    const before = (await deps.agents.list(ORG)).length;
    expect(await failure(createAgent(deps, caller(SCOPES, [agentA]), 'Escape'))).toMatchObject({
      status: 403,
      code: 'FORBIDDEN',
      details: [{ field: '', rule: 'token.agentRestricted' }],
    });
    expect(await deps.agents.list(ORG)).toHaveLength(before);
  });
});

describe('the caller through the authorizer context', () => {
  it('carries the restriction and nothing else changes', () => {
    const restricted = caller(['dashboard', 'analytics'], [agentA, agentB]);
    expect(callerContext(restricted)).toEqual({
      organizationId: ORG,
      tokenId: restricted.tokenId,
      scopes: 'dashboard,analytics',
      agentIds: `${agentA},${agentB}`,
    });
    expect(callerFromContext(callerContext(restricted))).toEqual(restricted);
    const whole = caller(['dashboard']);
    expect(callerContext(whole)).not.toHaveProperty('agentIds');
    expect(callerFromContext(callerContext(whole))).toEqual(whole);
    expect(callerFromContext(callerContext(whole))).not.toHaveProperty('agentIds');
  });

  it('never widens: an empty restriction is a restriction to no agent; no organization is no caller', () => {
    expect(callerFromContext({ organizationId: ORG, tokenId: 't', scopes: 'dashboard', agentIds: '' })).toEqual({
      organizationId: ORG,
      tokenId: 't',
      scopes: ['dashboard'],
      agentIds: [],
    });
    expect(callerFromContext({ scopes: 'dashboard' })).toBeUndefined();
    expect(callerFromContext(null)).toBeUndefined();
  });
});

describe('createToken', () => {
  it('stores the restriction and authenticates with it', async () => {
    const created = await createToken(deps, await minted(SCOPES), {
      scopes: ['analytics'],
      agentIds: [agentB, agentA],
    });
    expect(created).toMatchObject({ scopes: ['analytics'], agentIds: [agentB, agentA], name: null });
    const back = await authenticate(auth, `Bearer ${created.token}`, new Date());
    expect(back).toEqual({
      organizationId: ORG,
      tokenId: created.tokenId,
      scopes: ['analytics'],
      agentIds: [agentB, agentA],
      tokenHash: hashToken(created.token),
    });
    const whole = await createToken(deps, await minted(SCOPES), { scopes: ['dashboard'] });
    expect(whole.agentIds).toBeNull();
    expect(await authenticate(auth, `Bearer ${whole.token}`, new Date())).not.toHaveProperty('agentIds');
  });

  it.each([
    [
      'a scope the caller lacks',
      () => minted(['dashboard']),
      { scopes: ['dashboard', 'webhook'] as Scope[] },
      403,
      'FORBIDDEN',
    ],
    [
      'an unrestricted child of a restricted caller',
      () => minted(SCOPES, [agentA]),
      { scopes: ['dashboard'] as Scope[] },
      403,
      'FORBIDDEN',
    ],
    [
      "an agent outside the caller's restriction",
      () => minted(SCOPES, [agentA]),
      { scopes: ['dashboard'] as Scope[], agentIds: [agentA, agentB] },
      404,
      'AGENT_NOT_FOUND',
    ],
    [
      'an agent of another organization',
      () => minted(SCOPES),
      { scopes: ['dashboard'] as Scope[], agentIds: [agentA, agentOfOtherOrg] },
      404,
      'AGENT_NOT_FOUND',
    ],
    [
      'an agent that does not exist',
      () => minted(SCOPES),
      { scopes: ['dashboard'] as Scope[], agentIds: [randomUUID()] },
      404,
      'AGENT_NOT_FOUND',
    ],
  ])('refuses %s and stores nothing', async (_name, who, request, status, code) => {
    const issuer = await who();
    const before = await tokenCount();
    expect(await failure(createToken(deps, issuer, request))).toMatchObject({ status, code });
    expect(await tokenCount()).toBe(before);
  });

  it('reports the first unknown agent in request order', async () => {
    const [first, second] = [randomUUID(), randomUUID()];
    const refused = await failure(
      createToken(deps, await minted(SCOPES), { scopes: ['dashboard'], agentIds: [agentA, first, second] }),
    );
    expect(refused.message).toBe(`Agent ${first} was not found`);
  });

  it('lets a restricted caller create a token restricted to some of its agents', async () => {
    const parent = await minted(['dashboard', 'analytics'], [agentA, agentB]);
    const child = await createToken(deps, parent, { scopes: ['analytics'], agentIds: [agentB] });
    expect(child).toMatchObject({ scopes: ['analytics'], agentIds: [agentB] });
  });
});
