/**
 * People of an organization (docs/people.md): sign-up (a person and a new organization they own) and the owners'
 * management of members. The members table decides who may enter (core/auth/people.ts); the people directory
 * (Cognito) holds their passwords. Every write to the table comes first and is undone when the directory refuses, so
 * a refused sign-up or invitation leaves nothing behind.
 */
import { requireOwner } from '#core/auth/people';
import { AppError, ConflictError, NotFoundError, ValidationError } from '#core/errors';
import { type Caller, requireWholeOrganization } from '#core/tenancy/tenancy';
import type { PeopleDirectory } from '#ports/people';
import type { Clock, IdGenerator } from '#ports/services';
import type { MemberRecord, MemberStore, OrganizationStore } from '#ports/stores';

export type SignUpMode = 'open' | 'invite';

/** What a deployment without people's accounts answers (the local runtime with COGNITO=off). */
export function peopleNotConfigured(): AppError {
  return new ConflictError(
    'PEOPLE_NOT_CONFIGURED',
    "This deployment has no people's accounts (the local runtime was started with COGNITO=off)",
  );
}

export interface MembersDeps {
  readonly members: MemberStore;
  readonly organizations: OrganizationStore;
  /** Read before anything is written: a deployment without one (COGNITO=off locally) refuses there, 409. */
  readonly directory: PeopleDirectory;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** `invite`: only the people an owner invites have accounts; POST /dashboard/signup is 403 SIGNUP_CLOSED. */
  readonly signUpMode: SignUpMode;
}

export type Role = MemberRecord['role'];

function memberView({ email, role, createdAt }: MemberRecord) {
  return { email, role, createdAt };
}

function emailTaken(email: string): ConflictError {
  return new ConflictError('EMAIL_TAKEN', `${email} already has an account`, [
    { field: 'email', rule: 'unique', message: 'a person with this e-mail has an account (one organization each)' },
  ]);
}

/** Undoes `undo`, then throws `error` (an undo that fails throws its own error instead). */
async function rollBack(undo: () => Promise<unknown>, error: unknown): Promise<never> {
  await undo();
  throw error;
}

/**
 * A new organization with `email` as its owner: the member row first, on the condition that the e-mail has none (two
 * at once: one wins, the other is 409 EMAIL_TAKEN), then the organization, then `enroll` (the person in the
 * directory). When `enroll` refuses or fails, both rows are removed before its error goes on.
 */
async function newOrganization<T>(
  deps: Pick<MembersDeps, 'members' | 'organizations' | 'clock' | 'ids'>,
  request: { email: string; organizationName: string },
  enroll: () => Promise<T>,
): Promise<{ organizationId: string; enrolled: T }> {
  const { email } = request;
  const organizationId = deps.ids.uuid();
  const createdAt = deps.clock.now().toISOString();
  if (!(await deps.members.create({ email, organizationId, role: 'owner', createdAt }))) throw emailTaken(email);
  try {
    await deps.organizations.put({ organizationId, name: request.organizationName, createdAt });
    return { organizationId, enrolled: await enroll() };
  } catch (error) {
    return rollBack(async () => {
      await deps.members.delete(email, organizationId);
      await deps.organizations.delete(organizationId);
    }, error);
  }
}

/**
 * Sign-up: the person becomes the owner of a new organization (newOrganization). The directory's refusals undo it: an
 * e-mail it has already is 409 EMAIL_TAKEN, a password or e-mail its own rules refuse a 400 naming the field.
 */
export async function signUp(
  deps: MembersDeps,
  request: { email: string; password: string; organizationName: string },
): Promise<{ organizationId: string; email: string; confirmed: boolean }> {
  if (deps.signUpMode !== 'open') {
    throw new AppError(403, 'SIGNUP_CLOSED', 'Sign-up is closed on this deployment: an owner invites people', [
      { field: '', rule: 'signUp.invite', message: 'ask an owner of your organization for an invitation' },
    ]);
  }
  const { directory } = deps;
  const { email } = request;
  const { organizationId, enrolled } = await newOrganization(deps, request, async () => {
    const outcome = await directory.signUp(email, request.password);
    if (outcome.kind === 'exists') throw emailTaken(email);
    if (outcome.kind === 'refused') {
      const rule = outcome.field === 'password' ? 'password.policy' : 'email.directory';
      throw new ValidationError([{ field: outcome.field, rule, message: outcome.message }]);
    }
    return outcome.confirmed;
  });
  return { organizationId, email, confirmed: enrolled };
}

/**
 * The first owner of a deployment by invitation (`npm run first-owner`, README "Deploy to AWS"): a new organization
 * and its owner (newOrganization), invited as any member is (Cognito e-mails the temporary password).
 */
export async function createOwner(
  deps: Omit<MembersDeps, 'signUpMode'>,
  request: { email: string; organizationName: string },
): Promise<{ organizationId: string; email: string; invitation: 'sent' | 'existing-account' }> {
  const { directory } = deps;
  const { organizationId, enrolled } = await newOrganization(deps, request, () => directory.invite(request.email));
  return { organizationId, email: request.email, invitation: enrolled === 'invited' ? 'sent' : 'existing-account' };
}

/** Members are managed by the organization's owners, or by a token of the whole organization with `dashboard`. */
function requireManager(caller: Caller, action: string): void {
  requireWholeOrganization(caller, action);
  requireOwner(caller, 'manage members');
}

/**
 * An owner invites a person by e-mail: the member row first (409 EMAIL_TAKEN if the person belongs to an
 * organization), then the directory's invitation (a temporary password by e-mail; printed by the local runtime).
 * A person the directory has already (an account left without a membership) keeps their password: `invitation` says
 * `existing-account` and nothing is sent.
 */
export async function inviteMember(deps: MembersDeps, caller: Caller, request: { email: string; role: Role }) {
  requireManager(caller, 'invite members');
  const { directory } = deps;
  const record: MemberRecord = {
    email: request.email,
    organizationId: caller.organizationId,
    role: request.role,
    createdAt: deps.clock.now().toISOString(),
  };
  if (!(await deps.members.create(record))) throw emailTaken(request.email);
  let invited: 'invited' | 'exists';
  try {
    invited = await directory.invite(request.email);
  } catch (error) {
    return rollBack(() => deps.members.delete(request.email, caller.organizationId), error);
  }
  return {
    ...memberView(record),
    invitation: invited === 'invited' ? ('sent' as const) : ('existing-account' as const),
  };
}

/** The organization's people, owners first, then by e-mail. Members see it too (they cannot change it). */
export async function listMembers(deps: Pick<MembersDeps, 'members'>, caller: Caller) {
  requireWholeOrganization(caller, 'list members');
  const members = (await deps.members.list(caller.organizationId)).sort((a, b) =>
    a.role === b.role ? a.email.localeCompare(b.email) : a.role === 'owner' ? -1 : 1,
  );
  return { data: members.map(memberView), count: members.length };
}

/**
 * An owner removes a person: their account is removed from the directory, then their membership, so the person's
 * next request is refused (the authorizer reads the membership each time; in AWS its answer is cached for at most
 * 60 s). A repeat after a failure between the two finishes the job. The last owner cannot be removed (409 LAST_OWNER):
 * the organization would have nobody to manage it. 404 MEMBER_NOT_FOUND for anyone not of this organization.
 */
export async function removeMember(deps: MembersDeps, caller: Caller, email: string) {
  requireManager(caller, 'remove members');
  const { directory } = deps;
  const member = await deps.members.get(email);
  if (!member || member.organizationId !== caller.organizationId) {
    throw new NotFoundError('MEMBER_NOT_FOUND', `${email} is not a member of this organization`);
  }
  if (member.role === 'owner') {
    const owners = (await deps.members.list(caller.organizationId)).filter((person) => person.role === 'owner');
    if (owners.length <= 1) {
      throw new ConflictError('LAST_OWNER', `${email} is the organization's last owner`, [
        { field: 'email', rule: 'owner.last', message: 'invite another owner before removing this one' },
      ]);
    }
  }
  await directory.remove(email);
  await deps.members.delete(email, caller.organizationId);
  return { email, removedAt: deps.clock.now().toISOString() };
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
      : // A token of the whole organization with `dashboard` does what an owner does (tokens, members).
        { kind: 'token', email: null, role: caller.agentIds ? 'member' : 'owner' },
  };
}
