/**
 * People on the dashboard (docs/people.md): a Cognito ID token instead of an organization token, on `/dashboard/...`
 * only. The person is the caller of their organization (the members table), with the `dashboard` scope and their
 * role; their `tokenId` is `person:<sub>`, so logs and rate limits tell them apart from tokens.
 */
import { ForbiddenError, UnauthorizedError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import type { PersonVerifier } from '#ports/people';
import type { MemberStore } from '#ports/stores';

const PERSON = 'person:';
/** An ID token is about 1 KB; more than this is not one. */
const MAX_ID_TOKEN_LENGTH = 8192;
/** Three base64url parts; each class excludes the dot, so matching is linear. */
const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

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

/** The caller a person's ID token makes: 401 when it is not valid, or names no member of an organization. */
export async function authenticatePerson(
  deps: { readonly people: PersonVerifier | undefined; readonly members: MemberStore },
  idToken: string,
  now: Date,
): Promise<Caller> {
  const person = deps.people ? await deps.people.verify(idToken, now) : undefined;
  if (!person) throw new UnauthorizedError();
  const member = await deps.members.get(person.email);
  if (!member) throw new UnauthorizedError();
  return {
    organizationId: member.organizationId,
    tokenId: `${PERSON}${person.sub}`,
    scopes: ['dashboard'],
    role: member.role,
    email: member.email,
  };
}

/** Tokens and members are the owners' to manage: a member (a person with role `member`) gets 403. */
export function requireOwner(caller: Caller, action: string): void {
  if (caller.role !== 'member') return;
  throw new ForbiddenError(`Only an owner of the organization can ${action}`, [
    { field: '', rule: 'member.owner', message: 'this person is a member, not an owner, of the organization' },
  ]);
}
