/**
 * Nobody becomes more than they were given (issue 33), as a property: random sequences of invitations, acceptances,
 * declines, mints, revocations, removals and time passing, each tried by every kind of caller (an owner signed in, a
 * member, a token of the whole organization, a token restricted to an agent, an expired token, a removed person, a
 * person of another organization), and clean-ups cut off half-way, through the use cases with in-memory ports. After
 * every step:
 * - every token that authenticates is worth no more than who made it (scopes, agents, end), and who made it still
 *   holds: the token above it authenticates, or the person at its root is an owner;
 * - every membership was made by sign-up or by accepting an owner's invitation, with the invitation's role;
 * - people were invited or removed by owners signed in only, and each organization keeps an owner.
 */
import fc from 'fast-check';
import { SCOPES, type Scope } from '#core/auth/scopes';
import { authenticate } from '#core/auth/tokens';
import { createToken, revokeToken } from '#core/dashboard/dashboard';
import { inviteMember, removeMember, signUp } from '#core/dashboard/members';
import { acceptInvitation, declineInvitation } from '#core/dashboard/my-account';
import { AppError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import type { TokenRecord } from '#ports/stores';
import { peopleWorld } from '../../../helpers/in-memory-people';
import { InMemoryAgentStore } from '../../../helpers/in-memory-ports';
import { proofSize } from '../../../proof/size';

const DAY = 86_400_000;
const PEOPLE = ['ann@a.com', 'bea@b.com', 'p1@x.com', 'p2@x.com', 'p3@x.com'] as const;
const AGENTS = ['agent-1', 'agent-2'] as const;

/** Who acts: a person (in one of their organizations), or one of the tokens minted so far (by its index). */
type Actor = { kind: 'person'; email: string; organization: 0 | 1 } | { kind: 'token'; index: number };

type Step =
  | { op: 'invite'; by: Actor; email: string; role: 'owner' | 'member' }
  | { op: 'accept' | 'decline'; email: string; organization: 0 | 1 }
  /** `scopes`/`agents` 'inherit': those of the caller (what a careful client asks); otherwise what the test picked. */
  | { op: 'mint'; by: Actor; scopes: Scope[] | 'inherit'; agents: string[] | null | 'inherit'; days: number | null }
  | { op: 'revoke'; by: Actor; target: number }
  | { op: 'remove'; by: Actor; email: string }
  | { op: 'advance'; days: number }
  /** A clean-up cut off: a token's record gone without its descendants (an operator's delete, a crash mid-way). */
  | { op: 'loseToken'; target: number }
  /** A removal cut off after the membership went, before the person's tokens did. */
  | { op: 'loseMembership'; email: string; organization: 0 | 1 };

const email = fc.constantFrom(...PEOPLE);
const organization = fc.constantFrom(0 as const, 1 as const);
/** Actors that can do something weigh more: the founders in their own organization, and the first tokens. */
const founder = fc.constantFrom(
  { kind: 'person' as const, email: 'ann@a.com', organization: 0 as const },
  { kind: 'person' as const, email: 'bea@b.com', organization: 1 as const },
  { kind: 'person' as const, email: 'p1@x.com', organization: 0 as const },
  { kind: 'person' as const, email: 'p2@x.com', organization: 1 as const },
);
const tokenIndex = fc.nat(6);
const actor: fc.Arbitrary<Actor> = fc.oneof(
  { arbitrary: founder, weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('person' as const), email, organization }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('token' as const), index: tokenIndex }), weight: 4 },
);
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constant('invite' as const),
      by: actor,
      email,
      role: fc.constantFrom('owner' as const, 'member' as const),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({ op: fc.constantFrom('accept' as const, 'decline' as const), email, organization }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('mint' as const),
      by: actor,
      scopes: fc.oneof(fc.constant('inherit' as const), fc.subarray([...SCOPES], { minLength: 1 })),
      agents: fc.oneof(fc.constant('inherit' as const), fc.constant(null), fc.subarray([...AGENTS], { minLength: 1 })),
      days: fc.option(fc.constantFrom(1, 3, 30), { nil: null }),
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ op: fc.constant('revoke' as const), by: actor, target: tokenIndex }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('remove' as const), by: actor, email }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('advance' as const), days: fc.constantFrom(1, 2, 8) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('loseToken' as const), target: tokenIndex }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('loseMembership' as const), email, organization }), weight: 1 },
);

/** What a token was worth and who made it, as the test saw at its creation. */
interface Minted {
  readonly token: string;
  readonly record: TokenRecord;
  readonly issuer: { kind: 'person'; sub: string } | { kind: 'token'; index: number; worth: TokenRecord };
}

async function run(steps: readonly Step[]): Promise<void> {
  const people = peopleWorld();
  const agents = new InMemoryAgentStore();
  const deps = { ...people.deps, agents };
  const organizations: string[] = [];
  for (const [founder, name] of [
    ['ann@a.com', 'A'],
    ['bea@b.com', 'B'],
  ] as const) {
    const { organizationId } = await signUp(deps, { email: founder, password: 'Pass-word-1', organizationName: name });
    organizations.push(organizationId);
    for (const agentId of AGENTS) await agents.put({ organizationId, agentId, displayName: agentId, createdAt: '' });
  }
  /** Memberships made by the run, each from an owner's invitation with its role (founders aside). */
  const expectedMemberships = new Map<string, string>(
    organizations.map((org, i) => [`${people.directory.accounts.get(PEOPLE[i])}|${org}`, 'owner']),
  );
  // A second owner in each organization, invited and accepted, so that owners can be removed and removals cut off.
  for (const [index, coOwner] of ['p1@x.com', 'p2@x.com'].entries()) {
    const organizationId = organizations[index];
    await inviteMember(deps, await people.caller(PEOPLE[index], organizationId), { email: coOwner, role: 'owner' });
    await acceptInvitation(deps, await people.person(coOwner), organizationId);
    expectedMemberships.set(`${people.directory.accounts.get(coOwner)}|${organizationId}`, 'owner');
  }
  /** The role each open invitation offers, and whether an owner signed in made it. */
  const offered = new Map<string, string>();
  const minted: Minted[] = [];
  const auth = { tokens: people.tokens, memberships: people.memberships };
  /** Token indexes pick among the tokens minted so far (modulo their number), so most name one. */
  const pick = (index: number) => (minted.length > 0 ? index % minted.length : -1);
  const tokenCaller = async (index: number): Promise<Caller | undefined> => {
    const found = minted[index];
    if (!found) return undefined;
    return authenticate(auth, `Bearer ${found.token}`, people.now()).catch(() => undefined);
  };
  /** The caller an actor is right now; undefined when it is no caller (a person of no such organization). */
  const callerOf = async (who: Actor): Promise<Caller | undefined> => {
    if (who.kind === 'token') {
      // An expired, revoked or orphaned token is refused by the authorizer: it never reaches a use case.
      return tokenCaller(pick(who.index));
    }
    const organizationId = organizations[who.organization];
    const person = await people.person(who.email);
    if (!person.memberships.some((m) => m.organizationId === organizationId)) return undefined;
    return people.caller(who.email, organizationId);
  };
  const isOwnerPerson = (caller: Caller) => caller.tokenId.startsWith('person:') && caller.role === 'owner';
  /** Runs a use case; a refusal (an AppError) is an answer, anything else fails the property. */
  const attempt = async <T>(call: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await call();
    } catch (error) {
      if (error instanceof AppError && error.status < 500) return undefined;
      throw error;
    }
  };

  for (const s of steps) {
    if (s.op === 'advance') {
      people.advance(s.days * DAY);
    } else if (s.op === 'loseToken') {
      const target = minted[pick(s.target)];
      if (target) await people.tokens.delete(target.record.tokenHash);
    } else if (s.op === 'loseMembership') {
      const sub = people.directory.accounts.get(s.email);
      const organizationId = organizations[s.organization];
      const owners = [...people.memberships.records.values()].filter(
        (m) => m.organizationId === organizationId && m.role === 'owner' && m.sub !== sub,
      );
      // Only where the removal itself would have been allowed: another owner stays.
      if (sub && owners.length > 0 && (await people.memberships.delete(sub, organizationId))) {
        expectedMemberships.delete(`${sub}|${organizationId}`);
      }
    } else if (s.op === 'invite') {
      const caller = await callerOf(s.by);
      if (!caller) continue;
      const done = await attempt(() => inviteMember(deps, caller, { email: s.email, role: s.role }));
      if (done) {
        expect(isOwnerPerson(caller)).toBe(true);
        offered.set(`${s.email}|${caller.organizationId}`, s.role);
      }
    } else if (s.op === 'accept' || s.op === 'decline') {
      const person = await people.person(s.email);
      const organizationId = organizations[s.organization];
      const done = await attempt<unknown>(() =>
        s.op === 'accept'
          ? acceptInvitation(deps, person, organizationId)
          : declineInvitation(deps, person, organizationId),
      );
      const key = `${s.email}|${organizationId}`;
      if (done && s.op === 'accept' && !expectedMemberships.has(`${person.sub}|${organizationId}`)) {
        expect(offered.has(key)).toBe(true);
        expectedMemberships.set(`${person.sub}|${organizationId}`, offered.get(key) as string);
      }
      if (done) offered.delete(key);
    } else if (s.op === 'mint') {
      const caller = await callerOf(s.by);
      if (!caller) continue;
      const scopes = s.scopes === 'inherit' ? (caller.scopes as Scope[]) : s.scopes;
      const agentIds = s.agents === 'inherit' ? caller.agentIds : (s.agents ?? undefined);
      const done = await attempt(() =>
        createToken(deps, caller, {
          scopes,
          ...(agentIds ? { agentIds } : {}),
          ...(s.days ? { expiresInDays: s.days } : {}),
        }),
      );
      if (!done) continue;
      expect(caller.role).not.toBe('member');
      const record = [...people.tokens.records.values()].find((t) => t.tokenId === done.tokenId) as TokenRecord;
      const issuer =
        s.by.kind === 'person'
          ? { kind: 'person' as const, sub: caller.tokenId.slice('person:'.length) }
          : { kind: 'token' as const, index: pick(s.by.index), worth: minted[pick(s.by.index)].record };
      minted.push({ token: done.token, record, issuer });
    } else if (s.op === 'revoke') {
      const caller = await callerOf(s.by);
      const target = minted[pick(s.target)];
      if (!caller || !target) continue;
      await attempt(() => revokeToken(deps, caller, target.record.tokenId));
    } else if (s.op === 'remove') {
      const caller = await callerOf(s.by);
      if (!caller) continue;
      const removedSub = people.directory.accounts.get(s.email);
      const done = await attempt(() => removeMember(deps, caller, s.email));
      if (done) {
        // The last person-owner can only be removed by a person (and never is: LAST_OWNER).
        expect(isOwnerPerson(caller)).toBe(true);
        if (done.status === 'removed') expectedMemberships.delete(`${removedSub}|${caller.organizationId}`);
        else offered.delete(`${s.email}|${caller.organizationId}`);
      }
    }

    // Every membership is one the run expects, with the role it was offered.
    const stored = [...people.memberships.records.values()];
    expect(new Map(stored.map((m) => [`${m.sub}|${m.organizationId}`, m.role]))).toEqual(expectedMemberships);
    // Each organization keeps an owner.
    for (const organizationId of organizations) {
      expect(stored.some((m) => m.organizationId === organizationId && m.role === 'owner')).toBe(true);
    }
    // No token that authenticates is worth more than who made it, nor outlives them.
    for (const [index, token] of minted.entries()) {
      if (!(await tokenCaller(index))) continue;
      const { record, issuer } = token;
      if (issuer.kind === 'token') {
        const parent = issuer.worth;
        for (const scope of record.scopes) expect(parent.scopes).toContain(scope);
        if (parent.agentIds)
          for (const agentId of record.agentIds ?? ['every agent']) expect(parent.agentIds).toContain(agentId);
        if (parent.expiresAt) expect(record.expiresAt && record.expiresAt <= parent.expiresAt).toBeTruthy();
        expect(await tokenCaller(issuer.index)).toBeDefined();
      } else {
        const root = await people.memberships.get(issuer.sub, record.organizationId);
        expect(root?.role).toBe('owner');
      }
    }
  }
}

it('keeps every credential within what made it, whatever anyone tries', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: proofSize(60, 150) }), (steps) => run(steps)),
    { numRuns: proofSize(150, 2000) },
  );
});
