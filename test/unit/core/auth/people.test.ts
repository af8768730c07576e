/**
 * The rules of people on the dashboard that need no engine (core/auth/people.ts and the authorizer's policy): which
 * Authorization headers hold an ID token, the policy a person's token gets (the dashboard's routes only), a person is
 * their `sub` with a verified address, the organization a request names, and the move of a members row of before
 * issue 33. Their behaviour against cognito-local: test/integration/cognito-local.test.ts and people-signup.test.ts.
 */
import {
  authenticatePerson,
  callerOfPerson,
  idTokenOf,
  isPerson,
  type Person,
  personContext,
  personFromContext,
  requireOwner,
} from '#core/auth/people';
import { callerFromContext } from '#core/auth/tokens';
import type { PersonToken, PersonVerifier } from '#ports/people';
import { dashboardArn, wholeApiArn } from '../../../../lambdas/handlers/auth/authorizer';
import { InMemoryMemberStore, InMemoryMembershipStore } from '../../../helpers/in-memory-ports';

const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
const NOW = new Date('2026-11-27T10:00:00.000Z');

it('reads an ID token only from a bearer header of the JWT shape and bounded length', () => {
  expect(idTokenOf(`Bearer ${JWT}`)).toBe(JWT);
  expect(idTokenOf('Bearer aps_0123456789abcdef0123')).toBeUndefined();
  expect(idTokenOf(`Basic ${JWT}`)).toBeUndefined();
  expect(idTokenOf(`Bearer ${JWT}.extra`)).toBeUndefined();
  expect(idTokenOf(`Bearer eyJ${'a'.repeat(9000)}.b.c`)).toBeUndefined();
  expect(idTokenOf(undefined)).toBeUndefined();
});

it("gives a person's token a policy of the dashboard's routes only", () => {
  const arn = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/GET/dashboard/agents';
  expect(wholeApiArn(arn)).toBe('arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*');
  expect(dashboardArn(arn)).toBe('arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/dashboard/*');
});

/** A verifier that knows the tokens `token-<name>` of these people. */
function verifierOf(people: Record<string, Omit<PersonToken, 'expiresAt'>>): PersonVerifier {
  return { verify: async (token) => (people[token] ? { ...people[token], expiresAt: NOW } : undefined) };
}

function stores() {
  return { memberships: new InMemoryMembershipStore(), legacyMembers: new InMemoryMemberStore() };
}

describe('authenticatePerson', () => {
  it("finds a person's memberships by their sub, oldest first, whatever their address says", async () => {
    const { memberships, legacyMembers } = stores();
    await memberships.create({ sub: 's-1', organizationId: 'org-b', email: 'a@x.com', role: 'member', createdAt: '2' });
    await memberships.create({ sub: 's-1', organizationId: 'org-a', email: 'a@x.com', role: 'owner', createdAt: '1' });
    await memberships.create({ sub: 's-2', organizationId: 'org-c', email: 'b@x.com', role: 'owner', createdAt: '1' });
    const people = verifierOf({
      ann: { sub: 's-1', email: 'a@x.com', emailVerified: true },
      // Eve changed her address to Ann's: she is still s-3, a member of nothing.
      eve: { sub: 's-3', email: 'a@x.com', emailVerified: true },
    });
    const ann = await authenticatePerson({ people, memberships, legacyMembers }, 'ann', NOW);
    expect(ann).toEqual({
      sub: 's-1',
      email: 'a@x.com',
      memberships: [
        { organizationId: 'org-a', role: 'owner' },
        { organizationId: 'org-b', role: 'member' },
      ],
    });
    expect(await authenticatePerson({ people, memberships, legacyMembers }, 'eve', NOW)).toEqual({
      sub: 's-3',
      email: 'a@x.com',
      memberships: [],
    });
  });

  it('refuses an invalid token, an unverified address, and any person where no verifier is configured', async () => {
    const deps = {
      ...stores(),
      people: verifierOf({ unverified: { sub: 's-1', email: 'a@x.com', emailVerified: false } }),
    };
    for (const token of ['unverified', 'forged']) {
      await expect(authenticatePerson(deps, token, NOW)).rejects.toMatchObject({ status: 401 });
    }
    await expect(authenticatePerson({ ...deps, people: undefined }, 'unverified', NOW)).rejects.toMatchObject({
      status: 401,
    });
  });

  it('moves a members row of before issue 33 to the first verified sign-in of its address, once', async () => {
    const { memberships, legacyMembers } = stores();
    legacyMembers.records.set('a@x.com', { email: 'a@x.com', organizationId: 'org-a', role: 'owner', createdAt: '0' });
    const people = verifierOf({
      first: { sub: 's-1', email: 'a@x.com', emailVerified: true },
      later: { sub: 's-9', email: 'a@x.com', emailVerified: true },
    });
    const first = await authenticatePerson({ people, memberships, legacyMembers }, 'first', NOW);
    expect(first.memberships).toEqual([{ organizationId: 'org-a', role: 'owner' }]);
    expect(legacyMembers.records.size).toBe(0);
    expect(await memberships.get('s-1', 'org-a')).toMatchObject({ email: 'a@x.com', role: 'owner', createdAt: '0' });
    // An account made later for the same address (another sub) inherits nothing.
    const later = await authenticatePerson({ people, memberships, legacyMembers }, 'later', NOW);
    expect(later.memberships).toEqual([]);
  });
});

describe('the organization a request names', () => {
  const person: Person = {
    sub: 's-1',
    email: 'a@x.com',
    memberships: [
      { organizationId: 'org-a', role: 'owner' },
      { organizationId: 'org-b', role: 'member' },
    ],
  };

  it('makes the caller of that organization with the role there, through the context and back', () => {
    const back = personFromContext(personContext(person)) as Person;
    expect(back).toEqual(person);
    expect(callerFromContext(personContext(person))).toBeUndefined();
    const asMember = callerOfPerson(back, 'org-b');
    expect(asMember).toEqual({
      organizationId: 'org-b',
      tokenId: 'person:s-1',
      scopes: ['dashboard'],
      role: 'member',
      email: 'a@x.com',
    });
    expect(isPerson(asMember)).toBe(true);
    expect(() => requireOwner(asMember, 'manage tokens')).toThrow(
      'Only an owner of the organization can manage tokens',
    );
    expect(() => requireOwner(callerOfPerson(back, 'org-a'), 'manage tokens')).not.toThrow();
  });

  it('refuses an organization the person is not in, and asks a person of several to name one', () => {
    expect(() => callerOfPerson(person, 'org-c')).toThrow(
      expect.objectContaining({ status: 403, code: 'NOT_A_MEMBER' }),
    );
    expect(() => callerOfPerson(person, undefined)).toThrow(
      expect.objectContaining({ status: 400, code: 'ORGANIZATION_REQUIRED' }),
    );
    expect(callerOfPerson({ ...person, memberships: [person.memberships[1]] }, undefined).organizationId).toBe('org-b');
    expect(() => callerOfPerson({ ...person, memberships: [] }, undefined)).toThrow(
      expect.objectContaining({ status: 403, code: 'NO_ORGANIZATION' }),
    );
  });

  it('never widens a role: anything but owner read back is a member', () => {
    const context = { ...personContext(person), memberships: 'org-a:admin,org-b:owner' };
    expect(personFromContext(context)?.memberships).toEqual([
      { organizationId: 'org-a', role: 'member' },
      { organizationId: 'org-b', role: 'owner' },
    ]);
    // A token's context is no person's.
    expect(personFromContext({ organizationId: 'org-a', tokenId: 'person:s-1', scopes: 'dashboard' })).toBeUndefined();
  });
});
