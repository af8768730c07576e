/**
 * Nobody becomes more than they were given, for tokens (core/auth/grants.ts through core/dashboard/dashboard.ts and
 * core/auth/tokens.ts, in-memory ports): a child's end is at most its issuer's, it records who made it, and it
 * authenticates only while its lineage and the owner at its root do; revoking ends the descendants; a token revokes
 * nothing wider than itself. The random sequences of every caller kind: no-escalation.test.ts.
 */
import { MAX_LINEAGE } from '#core/auth/grants';
import { authenticate } from '#core/auth/tokens';
import { createToken, listTokens, revokeToken } from '#core/dashboard/dashboard';
import { removeMember, signUp } from '#core/dashboard/members';
import type { Caller } from '#core/tenancy/tenancy';
import { peopleWorld } from '../../../helpers/in-memory-people';
import { InMemoryAgentStore } from '../../../helpers/in-memory-ports';

const DAY = 86_400_000;

async function world() {
  const people = peopleWorld();
  const { organizationId } = await signUp(people.deps, {
    email: 'ann@example.com',
    password: 'Pass-word-1',
    organizationName: 'Acme',
  });
  const deps = { ...people.deps, agents: new InMemoryAgentStore() };
  const ann = await people.caller('ann@example.com', organizationId);
  /** The caller a minted token is (what the authorizer makes of it), or the 401 it gets. */
  const as = (token: string) =>
    authenticate({ tokens: people.tokens, memberships: people.memberships }, `Bearer ${token}`, people.now());
  return { people, deps, organizationId, ann, as };
}

describe('a token made by a token', () => {
  it('ends no later than its issuer: an end asked past it, or none, is the issuer’s', async () => {
    const { people, deps, ann, as } = await world();
    const day = await createToken(deps, ann, { scopes: ['dashboard', 'analytics'], expiresInDays: 1 });
    const issuer = await as(day.token);
    const unbounded = await createToken(deps, issuer, { scopes: ['analytics'] });
    const longer = await createToken(deps, issuer, { scopes: ['analytics'], expiresInDays: 30 });
    expect([unbounded.expiresAt, longer.expiresAt]).toEqual([day.expiresAt, day.expiresAt]);
    // The owner's own tokens may run as long as asked, or forever.
    expect((await createToken(deps, ann, { scopes: ['analytics'] })).expiresAt).toBeNull();
    people.advance(DAY);
    for (const token of [day, unbounded, longer]) await expect(as(token.token)).rejects.toMatchObject({ status: 401 });
  });

  it('holds no scope and no agent its issuer lacks', async () => {
    const { deps, ann, as } = await world();
    const narrow = await as((await createToken(deps, ann, { scopes: ['dashboard'] })).token);
    await expect(createToken(deps, narrow, { scopes: ['dashboard', 'webhook'] })).rejects.toMatchObject({
      status: 403,
      details: [{ field: 'scopes', rule: 'scopes.notHeld' }],
    });
    await deps.agents.put({ organizationId: ann.organizationId, agentId: 'agent-1', displayName: 'A', createdAt: '' });
    const restricted = await as((await createToken(deps, ann, { scopes: ['dashboard'], agentIds: ['agent-1'] })).token);
    await expect(createToken(deps, restricted, { scopes: ['dashboard'] })).rejects.toMatchObject({
      status: 403,
      details: [{ field: 'agentIds', rule: 'agentIds.notHeld' }],
    });
  });

  it('records who made it and works only while each token above it does', async () => {
    const { people, deps, ann, as } = await world();
    const parent = await createToken(deps, ann, { scopes: ['dashboard', 'analytics'] });
    const child = await createToken(deps, await as(parent.token), { scopes: ['dashboard', 'analytics'] });
    const grandchild = await createToken(deps, await as(child.token), { scopes: ['analytics'] });
    const listed = (await listTokens(deps, ann)).data;
    expect(listed.find((t) => t.tokenId === grandchild.tokenId)?.createdBy).toEqual({
      kind: 'token',
      tokenId: child.tokenId,
    });
    expect(listed.find((t) => t.tokenId === parent.tokenId)?.createdBy).toEqual({
      kind: 'person',
      email: 'ann@example.com',
    });
    // Behind the clean-up's back (a record deleted by an operator, a clean-up cut off): the lineage check refuses it.
    await deps.tokens.delete(
      [...people.tokens.records.values()].find((t) => t.tokenId === child.tokenId)?.tokenHash ?? '',
    );
    await expect(as(grandchild.token)).rejects.toMatchObject({ status: 401 });
    await expect(as(parent.token)).resolves.toMatchObject({ tokenId: parent.tokenId });
  });

  it('is ended with the token that made it, and with the person at its root', async () => {
    const { people, deps, ann, as } = await world();
    const parent = await createToken(deps, ann, { scopes: ['dashboard', 'analytics'] });
    const child = await createToken(deps, await as(parent.token), { scopes: ['analytics'] });
    const sibling = await createToken(deps, ann, { scopes: ['analytics'] });
    expect(await revokeToken(deps, ann, parent.tokenId)).toMatchObject({ descendantsRevoked: 1 });
    await expect(as(child.token)).rejects.toMatchObject({ status: 401 });
    await expect(as(sibling.token)).resolves.toBeDefined();
    expect((await listTokens(deps, ann)).data.map((t) => t.tokenId)).toEqual([sibling.tokenId]);

    // Bob, an owner, makes a token; he is removed: it ends, whatever the removal's clean-up missed.
    await people.invitations.put({
      email: 'bob@example.com',
      organizationId: ann.organizationId,
      role: 'owner',
      invitedBy: 'x',
      invitedByEmail: 'ann@example.com',
      createdAt: '',
      expiresAt: '2099-01-01T00:00:00.000Z',
    });
    const bobSub = people.directory.account('bob@example.com');
    await people.memberships.create({
      sub: bobSub,
      organizationId: ann.organizationId,
      email: 'bob@example.com',
      role: 'owner',
      createdAt: '',
    });
    const bob = await people.caller('bob@example.com', ann.organizationId);
    const bobs = await createToken(deps, bob, { scopes: ['analytics'] });
    const bobsChild = await createToken(deps, await as(bobs.token), { scopes: ['analytics'] });
    await people.memberships.delete(bobSub, ann.organizationId);
    await expect(as(bobs.token)).rejects.toMatchObject({ status: 401 });
    await expect(as(bobsChild.token)).rejects.toMatchObject({ status: 401 });
    await people.memberships.create({
      sub: bobSub,
      organizationId: ann.organizationId,
      email: 'bob@example.com',
      role: 'owner',
      createdAt: '',
    });
    expect(await removeMember(deps, ann, 'bob@example.com')).toMatchObject({ tokensRevoked: 2 });
  });

  it(`goes ${MAX_LINEAGE} tokens deep at most`, async () => {
    const { deps, ann, as } = await world();
    let issuer: Caller = ann;
    for (let depth = 0; depth <= MAX_LINEAGE; depth++) {
      issuer = await as((await createToken(deps, issuer, { scopes: ['dashboard'] })).token);
    }
    await expect(createToken(deps, issuer, { scopes: ['dashboard'] })).rejects.toMatchObject({
      status: 403,
      details: [{ rule: 'lineage.depth' }],
    });
  });
});

describe('revoking', () => {
  it('lets a token revoke itself and tokens no wider than itself, and an owner any', async () => {
    const { deps, ann, as } = await world();
    const wide = await createToken(deps, ann, { scopes: ['dashboard', 'analytics', 'knowledge-management'] });
    const narrow = await createToken(deps, ann, { scopes: ['dashboard'], expiresInDays: 1 });
    const narrowCaller = await as(narrow.token);
    await expect(revokeToken(deps, narrowCaller, wide.tokenId)).rejects.toMatchObject({
      status: 403,
      details: [
        { field: 'tokenId', rule: 'token.beyondOwn' },
        { field: 'tokenId', rule: 'token.beyondOwn' },
        { field: 'tokenId', rule: 'token.beyondOwn' },
      ],
    });
    const smaller = await createToken(deps, ann, { scopes: ['dashboard'], expiresInDays: 1 });
    await expect(revokeToken(deps, narrowCaller, smaller.tokenId)).resolves.toMatchObject({ tokenId: smaller.tokenId });
    await expect(revokeToken(deps, narrowCaller, narrow.tokenId)).resolves.toMatchObject({ tokenId: narrow.tokenId });
    await expect(revokeToken(deps, ann, wide.tokenId)).resolves.toMatchObject({ tokenId: wide.tokenId });
  });

  it('refuses a member signed in anything of tokens', async () => {
    const { people, deps, ann } = await world();
    const member: Caller = { ...ann, role: 'member', tokenId: `person:${people.directory.account('m@example.com')}` };
    const token = await createToken(deps, ann, { scopes: ['analytics'] });
    for (const attempt of [
      createToken(deps, member, { scopes: ['analytics'] }),
      listTokens(deps, member),
      revokeToken(deps, member, token.tokenId),
    ]) {
      await expect(attempt).rejects.toMatchObject({ status: 403, details: [{ rule: 'member.owner' }] });
    }
  });
});
