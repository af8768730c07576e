/**
 * A person's own side of the dashboard (docs/people.md, "Your organizations"): the organizations they belong to, the
 * invitations made to their verified address, accepting or declining one, and founding an organization. These need no
 * organization: a person of none uses them to get one. A token is no person: 403 there (lambdas/shared/http.ts).
 */
import { MAX_MEMBERSHIPS, type Person } from '#core/auth/people';
import { ConflictError, NotFoundError } from '#core/errors';
import type { InvitationRecord } from '#ports/stores';
import { foundOrganization, isOpen, type MembersDeps, signUpClosed } from './members';

type AccountDeps = Pick<MembersDeps, 'memberships' | 'invitations' | 'organizations' | 'clock' | 'ids' | 'signUpMode'>;

function organizationLimit(count: number): ConflictError {
  return new ConflictError('ORGANIZATION_LIMIT', `You belong to ${count} organizations, the most one person may`, [
    { field: '', rule: 'memberships.max', message: `leave one of your ${count} organizations first` },
  ]);
}

async function nameOf(deps: Pick<AccountDeps, 'organizations'>, organizationId: string): Promise<string | null> {
  return (await deps.organizations.get(organizationId))?.name ?? null;
}

/**
 * Who the person is: their organizations (oldest membership first) with their role in each, and the open invitations
 * to their address from organizations they are not in.
 */
export async function describeMe(deps: AccountDeps, person: Person) {
  const now = deps.clock.now();
  const [memberships, invitations] = await Promise.all([
    deps.memberships.listByPerson(person.sub),
    deps.invitations.listByEmail(person.email),
  ]);
  const joined = new Set(memberships.map((m) => m.organizationId));
  const open = invitations.filter((i) => isOpen(i, now) && !joined.has(i.organizationId));
  const [organizations, offers] = await Promise.all([
    Promise.all(
      memberships
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
        .map(async ({ organizationId, role, createdAt }) => ({
          organizationId,
          name: await nameOf(deps, organizationId),
          role,
          joinedAt: createdAt,
        })),
    ),
    Promise.all(open.sort((a, b) => b.createdAt.localeCompare(a.createdAt)).map((i) => offerView(deps, i))),
  ]);
  return { email: person.email, organizations, invitations: offers };
}

async function offerView(deps: Pick<AccountDeps, 'organizations'>, invitation: InvitationRecord) {
  const { organizationId, role, invitedByEmail, createdAt, expiresAt } = invitation;
  return {
    organizationId,
    organizationName: await nameOf(deps, organizationId),
    role,
    invitedBy: invitedByEmail,
    createdAt,
    expiresAt,
  };
}

async function openInvitation(deps: AccountDeps, person: Person, organizationId: string): Promise<InvitationRecord> {
  const invitation = await deps.invitations.get(person.email, organizationId);
  if (!invitation || !isOpen(invitation, deps.clock.now())) {
    throw new NotFoundError('INVITATION_NOT_FOUND', `You have no open invitation to organization ${organizationId}`);
  }
  return invitation;
}

/**
 * The person accepts an open invitation to their address: a membership of theirs (by `sub`) with the invitation's
 * role, and the invitation goes. Accepting again, once a member, answers the membership. 404 INVITATION_NOT_FOUND for
 * none (or an expired one); 409 ORGANIZATION_LIMIT past MAX_MEMBERSHIPS; 409 ALREADY_MEMBER when another account of
 * the same address is a member there (an account made anew for it: the organization removes that one first).
 */
export async function acceptInvitation(deps: AccountDeps, person: Person, organizationId: string) {
  const invitation = await openInvitation(deps, person, organizationId);
  const mine = await deps.memberships.listByPerson(person.sub);
  const existing = mine.find((m) => m.organizationId === organizationId);
  if (!existing) {
    if (mine.length >= MAX_MEMBERSHIPS) throw organizationLimit(mine.length);
    const members = await deps.memberships.listByOrganization(organizationId);
    if (members.some((m) => m.email === person.email && m.sub !== person.sub)) {
      throw new ConflictError('ALREADY_MEMBER', `Another account of ${person.email} is a member there`, [
        { field: 'organizationId', rule: 'member.otherAccount', message: 'ask an owner to remove that account first' },
      ]);
    }
  }
  const membership = existing ?? {
    sub: person.sub,
    organizationId,
    email: person.email,
    role: invitation.role,
    createdAt: deps.clock.now().toISOString(),
  };
  if (!existing) await deps.memberships.create(membership);
  await deps.invitations.delete(person.email, organizationId);
  return {
    organizationId,
    name: await nameOf(deps, organizationId),
    role: membership.role,
    joinedAt: membership.createdAt,
  };
}

/** The person declines an open invitation to their address; 404 INVITATION_NOT_FOUND when there is none. */
export async function declineInvitation(deps: AccountDeps, person: Person, organizationId: string) {
  await openInvitation(deps, person, organizationId);
  await deps.invitations.delete(person.email, organizationId);
  return { organizationId, declinedAt: deps.clock.now().toISOString() };
}

/**
 * A person signed in founds a new organization they own, where people may sign up (`open`); 403 SIGNUP_CLOSED where
 * an owner invites them (a deployment by invitation makes no organization on a person's own say).
 */
export async function createOrganization(deps: AccountDeps, person: Person, request: { name: string }) {
  if (deps.signUpMode !== 'open') throw signUpClosed();
  const mine = await deps.memberships.listByPerson(person.sub);
  if (mine.length >= MAX_MEMBERSHIPS) throw organizationLimit(mine.length);
  const founded = await foundOrganization(deps, {
    sub: person.sub,
    email: person.email,
    organizationName: request.name,
  });
  return {
    organizationId: founded.organizationId,
    name: founded.name,
    role: founded.role,
    joinedAt: founded.createdAt,
  };
}
