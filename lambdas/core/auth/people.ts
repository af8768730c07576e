/**
 * People on the dashboard (docs/people.md): a Cognito ID token instead of an organization token, on `/dashboard/...`
 * only. A person is their `sub`, never their e-mail (which they could change): the authorizer finds their memberships
 * by it and hands them all on (`personContext`: API Gateway caches its answer per ID token, whatever organization the
 * next request names); each request then acts in the organization its `X-Organization-Id` header names
 * (`callerOfPerson`), as an owner or a member there, with the `dashboard` scope. Their `tokenId` is `person:<sub>`,
 * so logs and rate limits tell them apart from tokens.
 */
import { AppError, ForbiddenError, UnauthorizedError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import type { PersonVerifier } from '#ports/people';
import type { MemberStore, MembershipRecord, MembershipStore, Role } from '#ports/stores';

const PERSON = 'person:';
/** An ID token is about 1 KB; more than this is not one. */
const MAX_ID_TOKEN_LENGTH = 8192;
/** Three base64url parts; each class excludes the dot, so matching is linear. */
const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/**
 * Organizations one person may belong to: every one travels in each authorizer answer (about 45 characters each).
 * Accepting an invitation or creating an organization past it is 409 ORGANIZATION_LIMIT.
 */
export const MAX_MEMBERSHIPS = 20;
/** The header a person names the organization of a request with (the console sends it on every request). */
export const ORGANIZATION_HEADER = 'x-organization-id';

/** A person signed in: who they are and where they belong. */
export interface Person {
  readonly sub: string;
  /** Lower case, verified by the pool. */
  readonly email: string;
  readonly memberships: readonly { readonly organizationId: string; readonly role: Role }[];
}

/** The ID token of `Authorization: Bearer <jwt>`, or undefined when the header holds anything else (a token). */
export function idTokenOf(authorizationHeader: string | undefined): string | undefined {
  if (!authorizationHeader || authorizationHeader.length > MAX_ID_TOKEN_LENGTH + 7) return undefined;
  const match = /^Bearer ([^ ]+)$/.exec(authorizationHeader);
  const token = match?.[1];
  return token && JWT_SHAPE.test(token) ? token : undefined;
}

export function isPerson(caller: Pick<Caller, 'tokenId'>): boolean {
  return caller.tokenId.startsWith(PERSON);
}

export interface PersonDeps {
  readonly people: PersonVerifier | undefined;
  readonly memberships: MembershipStore;
  /** The members table of before issue 33 (e-mail → organization), moved to memberships one person at a time. */
  readonly legacyMembers: MemberStore;
}

/**
 * The person a valid ID token names, with their memberships; 401 for a token that is not valid or whose address the
 * pool has not verified (an unverified address proves nothing: the pool lets a person type any). A person of no
 * organization is still a person: they may read and accept their invitations, or create an organization.
 */
export async function authenticatePerson(deps: PersonDeps, idToken: string, now: Date): Promise<Person> {
  const token = deps.people ? await deps.people.verify(idToken, now) : undefined;
  if (!token?.emailVerified) throw new UnauthorizedError();
  const memberships = await deps.memberships.listByPerson(token.sub);
  const adopted = await adoptLegacyMembership(deps, token, memberships);
  return {
    sub: token.sub,
    email: token.email,
    memberships: [...memberships, ...(adopted ? [adopted] : [])]
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.organizationId.localeCompare(b.organizationId))
      .map(({ organizationId, role }) => ({ organizationId, role })),
  };
}

/**
 * A row of the members table of before issue 33 (e-mail → organization, no `sub`) becomes the membership of the first
 * person who signs in with that verified address, and goes: from then on the membership is theirs by `sub`, so an
 * account made later for the same address (another `sub`) does not inherit it.
 */
async function adoptLegacyMembership(
  deps: PersonDeps,
  person: { sub: string; email: string },
  memberships: readonly MembershipRecord[],
): Promise<MembershipRecord | undefined> {
  const legacy = await deps.legacyMembers.get(person.email);
  if (!legacy) return undefined;
  const membership: MembershipRecord = {
    sub: person.sub,
    organizationId: legacy.organizationId,
    email: person.email,
    role: legacy.role,
    createdAt: legacy.createdAt,
  };
  const known = memberships.some((m) => m.organizationId === legacy.organizationId);
  const created = known ? false : await deps.memberships.create(membership);
  await deps.legacyMembers.delete(person.email, legacy.organizationId);
  return created ? membership : undefined;
}

/** What the authorizer hands on for a person: no organization yet, every membership (core/auth/tokens.ts, callerContext). */
export function personContext(person: Person): Record<string, string> {
  return {
    tokenId: `${PERSON}${person.sub}`,
    scopes: 'dashboard',
    email: person.email,
    memberships: person.memberships.map(({ organizationId, role }) => `${organizationId}:${role}`).join(','),
  };
}

/** The person of an authorizer answer made by personContext; undefined for a token's (or no) answer. */
export function personFromContext(context: Record<string, unknown> | null | undefined): Person | undefined {
  if (!context || typeof context.organizationId === 'string') return undefined;
  const { tokenId, email, memberships } = context;
  if (typeof tokenId !== 'string' || !tokenId.startsWith(PERSON) || typeof memberships !== 'string') return undefined;
  return {
    sub: tokenId.slice(PERSON.length),
    email: typeof email === 'string' ? email : '',
    memberships: memberships
      .split(',')
      .filter(Boolean)
      .map((entry) => {
        const at = entry.lastIndexOf(':');
        // Anything but `owner` is a member: a role never widens.
        return { organizationId: entry.slice(0, at), role: entry.slice(at + 1) === 'owner' ? 'owner' : 'member' };
      }),
  };
}

/**
 * The caller a person is in the organization the request names (`X-Organization-Id`), or in their only one when it
 * names none. 403 NOT_A_MEMBER for an organization they are not in (whether or not it exists), 403 NO_ORGANIZATION
 * for a person of none, 400 ORGANIZATION_REQUIRED for a person of several who names none.
 */
export function callerOfPerson(person: Person, requested: string | undefined): Caller {
  let membership = person.memberships[0];
  if (requested !== undefined) {
    membership = person.memberships.find((m) => m.organizationId === requested) as typeof membership;
    if (!membership) {
      throw new AppError(403, 'NOT_A_MEMBER', 'You are not a member of the organization this request names', [
        { field: 'X-Organization-Id', rule: 'organization.member', message: 'name one of your organizations' },
      ]);
    }
  } else if (person.memberships.length === 0) {
    throw new AppError(403, 'NO_ORGANIZATION', 'You belong to no organization yet: accept an invitation first', [
      { field: '', rule: 'organization.none', message: 'GET /dashboard/me lists your invitations' },
    ]);
  } else if (person.memberships.length > 1) {
    throw new AppError(400, 'ORGANIZATION_REQUIRED', 'You belong to several organizations: name one', [
      {
        field: 'X-Organization-Id',
        rule: 'required',
        message: `send the header X-Organization-Id with one of your ${person.memberships.length} organizations`,
      },
    ]);
  }
  return {
    organizationId: membership.organizationId,
    tokenId: `${PERSON}${person.sub}`,
    scopes: ['dashboard'],
    role: membership.role,
    email: person.email,
  };
}

/** Tokens and members are the owners' to manage: a member (a person with role `member`) gets 403. */
export function requireOwner(caller: Caller, action: string): void {
  if (caller.role !== 'member') return;
  throw new ForbiddenError(`Only an owner of the organization can ${action}`, [
    { field: '', rule: 'member.owner', message: 'this person is a member, not an owner, of the organization' },
  ]);
}
