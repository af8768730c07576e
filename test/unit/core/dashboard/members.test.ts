/**
 * People of an organization without engines (core/dashboard/members.ts, my-account.ts): sign-up, invitations that are
 * offers (they block nobody, reveal nothing, expire, become a membership only when accepted), removals that end the
 * person's tokens, and who may do each. Against the real engines and cognito-local, through HTTP:
 * test/integration/people-signup.test.ts.
 */
import { createToken } from '#core/dashboard/dashboard';
import { createOwner, inviteMember, listMembers, removeMember, signUp } from '#core/dashboard/members';
import { acceptInvitation, createOrganization, declineInvitation, describeMe } from '#core/dashboard/my-account';
import type { Caller } from '#core/tenancy/tenancy';
import { peopleWorld } from '../../../helpers/in-memory-people';
import { InMemoryAgentStore } from '../../../helpers/in-memory-ports';

const REQUEST = { email: 'ann@example.com', password: 'Pass-word-1', organizationName: 'Acme' };
const DAY = 86_400_000;

/** A world with Ann's organization (Ann its owner). */
async function acme(options: Parameters<typeof peopleWorld>[0] = {}) {
  const world = peopleWorld(options);
  const { organizationId } = await signUp(world.deps, REQUEST);
  return { world, organizationId, ann: await world.caller('ann@example.com', organizationId) };
}

/** Bob invited to `organizationId` by `by`, and his acceptance. */
async function join(world: ReturnType<typeof peopleWorld>, by: Caller, email: string, role: 'owner' | 'member') {
  await inviteMember(world.deps, by, { email, role });
  await acceptInvitation(world.deps, await world.person(email), by.organizationId);
  return world.caller(email, by.organizationId);
}

describe('sign-up', () => {
  it("makes the person's account and an organization they own, by their sub", async () => {
    const { world, organizationId } = await acme();
    const sub = world.directory.accounts.get('ann@example.com') as string;
    expect(await world.memberships.get(sub, organizationId)).toMatchObject({ role: 'owner', email: 'ann@example.com' });
    expect(await world.organizations.get(organizationId)).toMatchObject({ name: 'Acme' });
  });

  it('answers 409 EMAIL_TAKEN for an address with an account, and writes nothing', async () => {
    const { world } = await acme();
    await expect(signUp(world.deps, { ...REQUEST, organizationName: 'Other' })).rejects.toMatchObject({
      status: 409,
      code: 'EMAIL_TAKEN',
      details: [{ field: 'email', rule: 'unique' }],
    });
    expect({ organizations: world.organizations.records.size, memberships: world.memberships.records.size }).toEqual({
      organizations: 1,
      memberships: 1,
    });
  });

  it('names the field the directory refused, and writes nothing', async () => {
    const world = peopleWorld();
    world.directory.signUpAnswer = { kind: 'refused', field: 'password', message: 'Password did not conform' };
    await expect(signUp(world.deps, REQUEST)).rejects.toMatchObject({
      status: 400,
      details: [{ field: 'password', rule: 'password.policy', message: 'Password did not conform' }],
    });
    world.directory.signUpAnswer = new Error('Cognito is down');
    await expect(signUp(world.deps, REQUEST)).rejects.toThrow('Cognito is down');
    expect(world.organizations.records.size + world.memberships.records.size).toBe(0);
  });

  it('is closed on a deployment by invitation, and so is founding an organization', async () => {
    const world = peopleWorld({ signUpMode: 'invite' });
    await expect(signUp(world.deps, REQUEST)).rejects.toMatchObject({ status: 403, code: 'SIGNUP_CLOSED' });
    await expect(
      createOrganization(world.deps, await world.person('ann@example.com'), { name: 'X' }),
    ).rejects.toMatchObject({ status: 403, code: 'SIGNUP_CLOSED' });
    expect(world.directory.calls).toEqual([]);
  });

  it('makes the first owner of a deployment by invitation, an existing account included', async () => {
    const world = peopleWorld({ signUpMode: 'invite' });
    const first = await createOwner(world.deps, { email: 'ann@example.com', organizationName: 'Acme' });
    expect(first.invitation).toBe('sent');
    const again = await createOwner(world.deps, { email: 'ann@example.com', organizationName: 'Second' });
    expect(again.invitation).toBe('existing-account');
    expect((await world.person('ann@example.com')).memberships).toEqual([
      { organizationId: first.organizationId, role: 'owner' },
      { organizationId: again.organizationId, role: 'owner' },
    ]);
  });
});

describe('invitations are offers', () => {
  it('makes no membership until the invited person accepts, and then one of their sub and the offered role', async () => {
    const { world, organizationId, ann } = await acme();
    const offer = await inviteMember(world.deps, ann, { email: 'bob@example.com', role: 'owner' });
    expect(offer).toEqual({
      email: 'bob@example.com',
      role: 'owner',
      status: 'invited',
      createdAt: '2026-11-26T10:00:00.000Z',
      expiresAt: '2026-12-03T10:00:00.000Z',
    });
    const bob = await world.person('bob@example.com');
    expect(bob.memberships).toEqual([]);
    expect(await describeMe(world.deps, bob)).toEqual({
      email: 'bob@example.com',
      organizations: [],
      invitations: [
        {
          organizationId,
          organizationName: 'Acme',
          role: 'owner',
          invitedBy: 'ann@example.com',
          createdAt: offer.createdAt,
          expiresAt: offer.expiresAt,
        },
      ],
    });
    expect(await acceptInvitation(world.deps, bob, organizationId)).toMatchObject({ organizationId, role: 'owner' });
    expect((await world.person('bob@example.com')).memberships).toEqual([{ organizationId, role: 'owner' }]);
    expect(await world.invitations.get('bob@example.com', organizationId)).toBeUndefined();
    // Accepting again answers the membership; the invitation is gone for declining.
    await expect(declineInvitation(world.deps, bob, organizationId)).rejects.toMatchObject({ status: 404 });
  });

  it('blocks nobody and reveals nothing: the same answer whether the address has an account elsewhere or none', async () => {
    const { world, ann } = await acme();
    const other = await signUp(world.deps, { ...REQUEST, email: 'cy@example.com', organizationName: 'Cyco' });
    const cyOwner = await world.caller('cy@example.com', other.organizationId);
    const toMember = await inviteMember(world.deps, ann, { email: 'cy@example.com', role: 'member' });
    const toNobody = await inviteMember(world.deps, ann, { email: 'new@example.com', role: 'member' });
    expect(Object.keys(toMember)).toEqual(Object.keys(toNobody));
    expect({ ...toMember, email: '' }).toEqual({ ...toNobody, email: '' });
    // Another organization invites the same people at the same time; Cy may sign up nothing new but keeps Cyco.
    await inviteMember(world.deps, cyOwner, { email: 'new@example.com', role: 'owner' });
    const newcomer = await world.person('new@example.com');
    expect((await describeMe(world.deps, newcomer)).invitations).toHaveLength(2);
    await acceptInvitation(world.deps, await world.person('cy@example.com'), ann.organizationId);
    expect((await world.person('cy@example.com')).memberships.map((m) => m.role)).toEqual(['owner', 'member']);
  });

  it('expires after the configured days and is renewed by inviting again', async () => {
    const { world, organizationId, ann } = await acme({ invitationTtlDays: 2 });
    await inviteMember(world.deps, ann, { email: 'bob@example.com', role: 'member' });
    world.advance(2 * DAY);
    const bob = await world.person('bob@example.com');
    await expect(acceptInvitation(world.deps, bob, organizationId)).rejects.toMatchObject({
      status: 404,
      code: 'INVITATION_NOT_FOUND',
    });
    expect((await describeMe(world.deps, bob)).invitations).toEqual([]);
    expect((await listMembers(world.deps, ann)).data.map((m) => m.email)).toEqual(['ann@example.com']);
    await inviteMember(world.deps, ann, { email: 'bob@example.com', role: 'owner' });
    expect(await acceptInvitation(world.deps, bob, organizationId)).toMatchObject({ role: 'owner' });
  });

  it('is declined by the person, and cancelled by an owner', async () => {
    const { world, organizationId, ann } = await acme();
    await inviteMember(world.deps, ann, { email: 'bob@example.com', role: 'member' });
    const bob = await world.person('bob@example.com');
    expect(await declineInvitation(world.deps, bob, organizationId)).toMatchObject({ organizationId });
    await expect(acceptInvitation(world.deps, bob, organizationId)).rejects.toMatchObject({ status: 404 });
    await inviteMember(world.deps, ann, { email: 'bob@example.com', role: 'member' });
    expect(await removeMember(world.deps, ann, 'bob@example.com')).toMatchObject({ status: 'invitationCancelled' });
    await expect(acceptInvitation(world.deps, bob, organizationId)).rejects.toMatchObject({ status: 404 });
  });

  it('refuses an address already a member (409 ALREADY_MEMBER), and an account made anew for a member address', async () => {
    const { world, organizationId, ann } = await acme();
    await join(world, ann, 'bob@example.com', 'member');
    await expect(inviteMember(world.deps, ann, { email: 'bob@example.com', role: 'owner' })).rejects.toMatchObject({
      status: 409,
      code: 'ALREADY_MEMBER',
    });
    // The same address, another account (another sub) with an invitation of before: the member's sub stays the member.
    await world.invitations.put({
      email: 'bob@example.com',
      organizationId,
      role: 'owner',
      invitedBy: 'x',
      invitedByEmail: 'ann@example.com',
      createdAt: world.now().toISOString(),
      expiresAt: new Date(world.now().getTime() + DAY).toISOString(),
    });
    const impostor = { sub: 'another-sub', email: 'bob@example.com', memberships: [] };
    await expect(acceptInvitation(world.deps, impostor, organizationId)).rejects.toMatchObject({
      status: 409,
      code: 'ALREADY_MEMBER',
    });
  });

  it('caps the open invitations of an organization and the organizations of a person', async () => {
    const { world, ann } = await acme();
    for (let i = 0; i < 100; i++) await inviteMember(world.deps, ann, { email: `p${i}@example.com`, role: 'member' });
    await expect(
      inviteMember(world.deps, ann, { email: 'one-more@example.com', role: 'member' }),
    ).rejects.toMatchObject({ status: 409, code: 'INVITATION_LIMIT' });
    // Renewing one of them is not one more.
    await expect(inviteMember(world.deps, ann, { email: 'p1@example.com', role: 'owner' })).resolves.toBeDefined();
    const person = await world.person('ann@example.com');
    for (let i = 1; i < 20; i++) await createOrganization(world.deps, person, { name: `Org ${i}` });
    await expect(createOrganization(world.deps, person, { name: 'Org 21' })).rejects.toMatchObject({
      status: 409,
      code: 'ORGANIZATION_LIMIT',
    });
  });
});

describe('who manages people', () => {
  it('lets an owner signed in invite and remove; a member, a token and a restricted token get 403', async () => {
    const { world, organizationId, ann } = await acme();
    const bob = await join(world, ann, 'bob@example.com', 'member');
    const token: Caller = { organizationId, tokenId: 't', scopes: ['dashboard'] };
    const restricted: Caller = { ...token, agentIds: ['agent-1'] };
    const cases: [Caller, string][] = [
      [bob, 'member.owner'],
      [token, 'members.person'],
      [restricted, 'members.person'],
    ];
    for (const [who, rule] of cases) {
      await expect(inviteMember(world.deps, who, { email: 'x@example.com', role: 'owner' })).rejects.toMatchObject({
        status: 403,
        details: [{ rule }],
      });
      await expect(removeMember(world.deps, who, 'ann@example.com')).rejects.toMatchObject({
        status: 403,
        details: [{ rule }],
      });
    }
    expect(world.invitations.records.size).toBe(0);
    // Members and the organization's tokens read the list (owners first, then invitations); a restricted token not.
    await inviteMember(world.deps, ann, { email: 'zed@example.com', role: 'owner' });
    for (const reader of [bob, token]) {
      expect((await listMembers(world.deps, reader)).data.map((m) => `${m.status} ${m.role} ${m.email}`)).toEqual([
        'active owner ann@example.com',
        'active member bob@example.com',
        'invited owner zed@example.com',
      ]);
    }
    await expect(listMembers(world.deps, restricted)).rejects.toMatchObject({ status: 403 });
  });

  it('keeps the last owner; removes a person, their account kept and their tokens ended', async () => {
    const { world, organizationId, ann } = await acme();
    await expect(removeMember(world.deps, ann, 'ann@example.com')).rejects.toMatchObject({
      status: 409,
      code: 'LAST_OWNER',
    });
    const bob = await join(world, ann, 'bob@example.com', 'owner');
    const tokenDeps = { ...world.deps, agents: new InMemoryAgentStore() };
    const bobs = await createToken(tokenDeps, bob, { scopes: ['analytics'] });
    const anns = await createToken(tokenDeps, ann, { scopes: ['analytics'] });
    expect(await removeMember(world.deps, ann, 'bob@example.com')).toEqual({
      email: 'bob@example.com',
      removedAt: '2026-11-26T10:00:00.000Z',
      status: 'removed',
      tokensRevoked: 1,
    });
    expect((await world.person('bob@example.com')).memberships).toEqual([]);
    expect(world.directory.accounts.has('bob@example.com')).toBe(true);
    const left = [...world.tokens.records.values()].map((t) => t.tokenId);
    expect(left).toEqual([anns.tokenId]);
    expect(left).not.toContain(bobs.tokenId);
    // Another organization's person, or nobody: the same 404.
    const other = await signUp(world.deps, { ...REQUEST, email: 'cy@example.com' });
    const cy = await world.caller('cy@example.com', other.organizationId);
    for (const email of ['ann@example.com', 'nobody@example.com']) {
      await expect(removeMember(world.deps, cy, email)).rejects.toMatchObject({
        status: 404,
        code: 'MEMBER_NOT_FOUND',
      });
    }
    expect(organizationId).not.toBe(other.organizationId);
  });
});
