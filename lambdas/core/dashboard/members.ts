/**
 * People of an organization, seen from the organization (docs/people.md): sign-up (a person and a new organization
 * they own), the owners' invitations (offers, not memberships), the list of people and invitations, and removals. The
 * person's own side (their organizations, accepting or declining an invitation) is core/dashboard/my-account.ts. Only
 * an owner signed in manages people (core/auth/grants.ts); the people directory (Cognito) holds passwords, and no
 * account is ever deleted here: a person may belong to several organizations.
 */
import { requirePeopleManager, subOf } from '#core/auth/grants';
import { AppError, ConflictError, NotFoundError, ValidationError } from '#core/errors';
import { type Caller, requireWholeOrganization } from '#core/tenancy/tenancy';
import type { PeopleDirectory } from '#ports/people';
import type { Clock, IdGenerator } from '#ports/services';
import type {
  InvitationRecord,
  InvitationStore,
  MembershipRecord,
  MembershipStore,
  OrganizationStore,
  Role,
  TokenStore,
} from '#ports/stores';
import { revokeTokensWhere } from './dashboard';

export type SignUpMode = 'open' | 'invite';
export type { Role };

/** How long an invitation stays open unless INVITATION_TTL_DAYS says otherwise. */
export const DEFAULT_INVITATION_TTL_DAYS = 7;
/** Open invitations one organization may hold: past it, 409 INVITATION_LIMIT (cancel some first). */
export const MAX_OPEN_INVITATIONS = 100;
const DAY_MS = 86_400_000;

/** What a deployment without people's accounts answers (the local runtime with COGNITO=off). */
export function peopleNotConfigured(): AppError {
  return new ConflictError(
    'PEOPLE_NOT_CONFIGURED',
    "This deployment has no people's accounts (the local runtime was started with COGNITO=off)",
  );
}

/** An invitation as the local runtime announces it (in AWS only Cognito's own account e-mail goes out). */
export interface InvitationAnnouncement {
  readonly email: string;
  readonly organizationId: string;
  readonly organizationName: string | null;
  readonly role: Role;
}

export interface MembersDeps {
  readonly memberships: MembershipStore;
  readonly invitations: InvitationStore;
  readonly organizations: OrganizationStore;
  /** A removed person's tokens end with them. */
  readonly tokens: TokenStore;
  /** Read before anything is written: a deployment without one (COGNITO=off locally) refuses there, 409. */
  readonly directory: PeopleDirectory;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** `invite`: only the people an owner invites have accounts; sign-up and new organizations are 403 SIGNUP_CLOSED. */
  readonly signUpMode: SignUpMode;
  readonly invitationTtlDays: number;
  /** Tells the invited person (the local runtime prints it); absent in AWS. */
  readonly announce?: (invitation: InvitationAnnouncement) => void;
}

export function isOpen(invitation: Pick<InvitationRecord, 'expiresAt'>, now: Date): boolean {
  return invitation.expiresAt > now.toISOString();
}

export function signUpClosed(): AppError {
  return new AppError(403, 'SIGNUP_CLOSED', 'Sign-up is closed on this deployment: an owner invites people', [
    { field: '', rule: 'signUp.invite', message: 'ask an owner of your organization for an invitation' },
  ]);
}

/**
 * A new organization whose owner is the person `sub`: the organization's row, then the membership; the row goes again
 * when the membership cannot be written.
 */
export async function foundOrganization(
  deps: Pick<MembersDeps, 'memberships' | 'organizations' | 'clock' | 'ids'>,
  founder: { sub: string; email: string; organizationName: string },
): Promise<MembershipRecord & { name: string }> {
  const organizationId = deps.ids.uuid();
  const createdAt = deps.clock.now().toISOString();
  await deps.organizations.put({ organizationId, name: founder.organizationName, createdAt });
  const membership: MembershipRecord = {
    sub: founder.sub,
    organizationId,
    email: founder.email,
    role: 'owner',
    createdAt,
  };
  try {
    await deps.memberships.create(membership);
  } catch (error) {
    await deps.organizations.delete(organizationId);
    throw error;
  }
  return { ...membership, name: founder.organizationName };
}

/**
 * Sign-up: a new account in the directory, then a new organization it owns. An address the directory has already is
 * 409 EMAIL_TAKEN (as Cognito's own public SignUp answers anyone on an open deployment): that person signs in and
 * creates the organization from the console. A password or e-mail the directory's rules refuse is a 400 naming the
 * field. An account made whose organization could not be written is a person of no organization, who may create one.
 */
export async function signUp(
  deps: MembersDeps,
  request: { email: string; password: string; organizationName: string },
): Promise<{ organizationId: string; email: string; confirmed: boolean }> {
  if (deps.signUpMode !== 'open') throw signUpClosed();
  const { email } = request;
  const outcome = await deps.directory.signUp(email, request.password);
  if (outcome.kind === 'exists') {
    throw new ConflictError(
      'EMAIL_TAKEN',
      `${email} already has an account: sign in, then create the organization from the console`,
      [{ field: 'email', rule: 'unique', message: 'this address has an account; sign in with it' }],
    );
  }
  if (outcome.kind === 'refused') {
    const rule = outcome.field === 'password' ? 'password.policy' : 'email.directory';
    throw new ValidationError([{ field: outcome.field, rule, message: outcome.message }]);
  }
  const { organizationId } = await foundOrganization(deps, {
    sub: outcome.sub,
    email,
    organizationName: request.organizationName,
  });
  return { organizationId, email, confirmed: outcome.confirmed };
}

/**
 * The first owner of a deployment by invitation (`npm run first-owner`, README "Deploy to AWS"), run with the
 * deploying credentials: an account for the address (Cognito e-mails the temporary password) or the one it has, and a
 * new organization that account owns.
 */
export async function createOwner(
  deps: Omit<MembersDeps, 'signUpMode' | 'tokens' | 'invitations' | 'invitationTtlDays'>,
  request: { email: string; organizationName: string },
): Promise<{ organizationId: string; email: string; invitation: 'sent' | 'existing-account' }> {
  const invited = await deps.directory.invite(request.email);
  const sub = await deps.directory.lookup(request.email);
  if (!sub) throw new Error(`the people directory has no account for ${request.email} after inviting it`);
  const { organizationId } = await foundOrganization(deps, { sub, ...request });
  return { organizationId, email: request.email, invitation: invited === 'invited' ? 'sent' : 'existing-account' };
}

function invitationView(invitation: InvitationRecord) {
  const { email, role, createdAt, expiresAt } = invitation;
  return { email, role, status: 'invited' as const, createdAt, expiresAt };
}

/**
 * An owner signed in invites a person by e-mail: an offer that becomes a membership only when the person signs in
 * with that (verified) address and accepts it, and that expires. It blocks nobody: the address may have other
 * invitations, an account, memberships elsewhere. The answer is the same whether or not the address has an account
 * anywhere: a new address gets an account and its temporary password (by e-mail in AWS, printed locally), an existing
 * one nothing new. Inviting again renews the offer (role and expiry). 409 ALREADY_MEMBER for a person of this
 * organization.
 */
export async function inviteMember(deps: MembersDeps, caller: Caller, request: { email: string; role: Role }) {
  requirePeopleManager(caller, 'invite people');
  const { directory } = deps;
  const now = deps.clock.now();
  const organizationId = caller.organizationId;
  const [members, invitations] = await Promise.all([
    deps.memberships.listByOrganization(organizationId),
    deps.invitations.listByOrganization(organizationId),
  ]);
  if (members.some((member) => member.email === request.email)) {
    throw new ConflictError('ALREADY_MEMBER', `${request.email} is a member of this organization`, [
      { field: 'email', rule: 'member.exists', message: 'this person is in the organization already' },
    ]);
  }
  const open = invitations.filter((invitation) => isOpen(invitation, now) && invitation.email !== request.email);
  if (open.length >= MAX_OPEN_INVITATIONS) {
    throw new ConflictError('INVITATION_LIMIT', `The organization has ${open.length} open invitations`, [
      { field: 'email', rule: 'invitations.max', message: `cancel some of the ${open.length} open invitations first` },
    ]);
  }
  await directory.invite(request.email);
  const invitation: InvitationRecord = {
    email: request.email,
    organizationId,
    role: request.role,
    invitedBy: subOf(caller),
    invitedByEmail: caller.email,
    createdAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + deps.invitationTtlDays * DAY_MS).toISOString(),
  };
  await deps.invitations.put(invitation);
  if (deps.announce) {
    const organization = await deps.organizations.get(organizationId);
    deps.announce({ ...request, organizationId, organizationName: organization?.name ?? null });
  }
  return invitationView(invitation);
}

const activeFirst = (a: { role: Role; email: string }, b: { role: Role; email: string }) =>
  a.role === b.role ? a.email.localeCompare(b.email) : a.role === 'owner' ? -1 : 1;

/**
 * The organization's people, owners first, then by e-mail, and after them its open invitations. Owners, members and
 * the organization's tokens read it; a token restricted to agents does not.
 */
export async function listMembers(deps: Pick<MembersDeps, 'memberships' | 'invitations' | 'clock'>, caller: Caller) {
  requireWholeOrganization(caller, 'list members');
  const now = deps.clock.now();
  const [members, invitations] = await Promise.all([
    deps.memberships.listByOrganization(caller.organizationId),
    deps.invitations.listByOrganization(caller.organizationId),
  ]);
  const data = [
    ...members
      .sort(activeFirst)
      .map(({ email, role, createdAt }) => ({ email, role, status: 'active' as const, createdAt, expiresAt: null })),
    ...invitations
      .filter((invitation) => isOpen(invitation, now))
      .sort(activeFirst)
      .map(invitationView),
  ];
  return { data, count: data.length };
}

/**
 * An owner signed in removes a person from the organization, or cancels an invitation of that address. The person's
 * membership goes (their next request in the organization is refused; in AWS the authorizer's answer for one ID token
 * is cached for at most 60 s), and with it every token they made there and the tokens made from those. Their account
 * stays: it may belong elsewhere. The last owner cannot be removed (409 LAST_OWNER). 404 MEMBER_NOT_FOUND for an
 * address neither a member nor invited here.
 */
export async function removeMember(deps: MembersDeps, caller: Caller, email: string) {
  requirePeopleManager(caller, 'remove people');
  const organizationId = caller.organizationId;
  const members = await deps.memberships.listByOrganization(organizationId);
  const member = members.find((person) => person.email === email);
  const removedAt = deps.clock.now().toISOString();
  if (!member) {
    if (!(await deps.invitations.delete(email, organizationId))) {
      throw new NotFoundError('MEMBER_NOT_FOUND', `${email} is not a member of this organization`);
    }
    return { email, removedAt, status: 'invitationCancelled' as const, tokensRevoked: 0 };
  }
  if (member.role === 'owner' && members.filter((person) => person.role === 'owner').length <= 1) {
    throw new ConflictError('LAST_OWNER', `${email} is the organization's last owner`, [
      { field: 'email', rule: 'owner.last', message: 'invite another owner before removing this one' },
    ]);
  }
  await deps.memberships.delete(member.sub, organizationId);
  const tokensRevoked = await revokeTokensWhere(deps, organizationId, (token) => token.rootSub === member.sub);
  return { email, removedAt, status: 'removed' as const, tokensRevoked };
}

/** The caller's organization and who they are in it (the console shows owners what only they can do). */
export async function describeOrganization(
  deps: Pick<MembersDeps, 'organizations'>,
  caller: Caller,
): Promise<{
  organizationId: string;
  name: string | null;
  createdAt: string | null;
  caller: { kind: 'person' | 'token'; email: string | null; role: Role };
}> {
  const organization = await deps.organizations.get(caller.organizationId);
  return {
    organizationId: caller.organizationId,
    name: organization?.name ?? null,
    createdAt: organization?.createdAt ?? null,
    caller: caller.role
      ? { kind: 'person', email: caller.email ?? null, role: caller.role }
      : // A token of the whole organization manages tokens as an owner does (never people); a restricted one does not.
        { kind: 'token', email: null, role: caller.agentIds ? 'member' : 'owner' },
  };
}
