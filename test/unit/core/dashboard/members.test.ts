/**
 * The rules of sign-up and members (core/dashboard/members.ts) that need a directory which fails on demand: a refused
 * or failing directory leaves no row behind, the last owner stays, who may manage members. Against the real engines
 * and cognito-local, through HTTP: test/integration/people-signup.test.ts.
 */
import { inviteMember, listMembers, type MembersDeps, removeMember, signUp } from '#core/dashboard/members';
import type { Caller } from '#core/tenancy/tenancy';
import type { PeopleDirectory, SignUpOutcome } from '#ports/people';
import { InMemoryMemberStore, InMemoryOrganizationStore } from '../../../helpers/in-memory-ports';

/** A directory that answers what the test says, and records what it was asked. */
class ScriptedDirectory implements PeopleDirectory {
  signUpAnswer: SignUpOutcome | Error = { kind: 'created', confirmed: true };
  inviteAnswer: 'invited' | 'exists' | Error = 'invited';
  removeAnswer: Error | undefined;
  readonly calls: string[] = [];

  async signUp(email: string): Promise<SignUpOutcome> {
    this.calls.push(`signUp ${email}`);
    if (this.signUpAnswer instanceof Error) throw this.signUpAnswer;
    return this.signUpAnswer;
  }

  async invite(email: string): Promise<'invited' | 'exists'> {
    this.calls.push(`invite ${email}`);
    if (this.inviteAnswer instanceof Error) throw this.inviteAnswer;
    return this.inviteAnswer;
  }

  async remove(email: string): Promise<void> {
    this.calls.push(`remove ${email}`);
    if (this.removeAnswer) throw this.removeAnswer;
  }
}

let ids = 0;
function deps(signUpMode: MembersDeps['signUpMode'] = 'open') {
  const directory = new ScriptedDirectory();
  const members = new InMemoryMemberStore();
  const organizations = new InMemoryOrganizationStore();
  const value: MembersDeps = {
    members,
    organizations,
    directory,
    clock: { now: () => new Date('2026-11-26T10:00:00Z') },
    ids: { uuid: () => `org-${++ids}` },
    signUpMode,
  };
  return { deps: value, directory, members, organizations };
}

const REQUEST = { email: 'ann@example.com', password: 'Pass-word-1', organizationName: 'Acme' };
const owner = (organizationId: string, email = 'ann@example.com'): Caller => ({
  organizationId,
  tokenId: 'person:1',
  scopes: ['dashboard'],
  role: 'owner',
  email,
});

it('signs a person up as the owner of a new organization', async () => {
  const { deps: d, members, organizations } = deps();
  const answer = await signUp(d, REQUEST);
  expect(answer).toEqual({ organizationId: expect.any(String), email: 'ann@example.com', confirmed: true });
  expect(await members.get('ann@example.com')).toMatchObject({ organizationId: answer.organizationId, role: 'owner' });
  expect(await organizations.get(answer.organizationId)).toMatchObject({ name: 'Acme' });
});

it('leaves no row behind when the directory refuses the sign-up, or fails', async () => {
  const refusals: [SignUpOutcome | Error, number, string][] = [
    [{ kind: 'exists' }, 409, 'EMAIL_TAKEN'],
    [{ kind: 'refused', field: 'password', message: 'too weak' }, 400, 'VALIDATION_ERROR'],
    [{ kind: 'refused', field: 'email', message: 'not taken' }, 400, 'VALIDATION_ERROR'],
    [new Error('Cognito is down'), 0, ''],
  ];
  for (const [answer, status, code] of refusals) {
    const { deps: d, directory, members, organizations } = deps();
    directory.signUpAnswer = answer;
    const refused = signUp(d, REQUEST);
    if (answer instanceof Error) await expect(refused).rejects.toBe(answer);
    else await expect(refused).rejects.toMatchObject({ status, code });
    expect({ members: members.records.size, organizations: organizations.records.size }).toEqual({
      members: 0,
      organizations: 0,
    });
  }
});

it('names the field the directory refused, with its rule', async () => {
  const { deps: d, directory } = deps();
  directory.signUpAnswer = { kind: 'refused', field: 'password', message: 'Password did not conform with policy' };
  await expect(signUp(d, REQUEST)).rejects.toMatchObject({
    details: [{ field: 'password', rule: 'password.policy', message: 'Password did not conform with policy' }],
  });
});

it('takes one sign-up per e-mail, without asking the directory for the second', async () => {
  const { deps: d, directory } = deps();
  await signUp(d, REQUEST);
  await expect(signUp(d, { ...REQUEST, organizationName: 'Other' })).rejects.toMatchObject({
    status: 409,
    code: 'EMAIL_TAKEN',
    details: [{ field: 'email', rule: 'unique' }],
  });
  expect(directory.calls).toEqual(['signUp ann@example.com']);
});

it('refuses sign-up on a deployment by invitation, before anything is written', async () => {
  const { deps: d, directory, members } = deps('invite');
  await expect(signUp(d, REQUEST)).rejects.toMatchObject({ status: 403, code: 'SIGNUP_CLOSED' });
  expect({ calls: directory.calls, members: members.records.size }).toEqual({ calls: [], members: 0 });
});

it('invites into the caller organization, and undoes the membership when the invitation fails', async () => {
  const { deps: d, directory, members } = deps();
  const { organizationId } = await signUp(d, REQUEST);
  expect(await inviteMember(d, owner(organizationId), { email: 'bob@example.com', role: 'member' })).toEqual({
    email: 'bob@example.com',
    role: 'member',
    createdAt: '2026-11-26T10:00:00.000Z',
    invitation: 'sent',
  });
  directory.inviteAnswer = 'exists';
  expect(await inviteMember(d, owner(organizationId), { email: 'cy@example.com', role: 'owner' })).toMatchObject({
    invitation: 'existing-account',
  });
  directory.inviteAnswer = new Error('Cognito is down');
  await expect(inviteMember(d, owner(organizationId), { email: 'dee@example.com', role: 'member' })).rejects.toThrow(
    'Cognito is down',
  );
  expect(await members.get('dee@example.com')).toBeUndefined();
  // A person of any organization is taken: one organization each.
  await expect(
    inviteMember(d, owner('another-org', 'eve@example.com'), { email: 'bob@example.com', role: 'member' }),
  ).rejects.toMatchObject({ status: 409, code: 'EMAIL_TAKEN' });
});

it('lets owners and whole-organization tokens manage members; members and restricted tokens get 403', async () => {
  const { deps: d } = deps();
  const { organizationId } = await signUp(d, REQUEST);
  const member: Caller = { ...owner(organizationId, 'bob@example.com'), role: 'member' };
  const token: Caller = { organizationId, tokenId: 't', scopes: ['dashboard'] };
  const restricted: Caller = { ...token, agentIds: ['agent-1'] };
  await expect(inviteMember(d, member, { email: 'x@example.com', role: 'member' })).rejects.toMatchObject({
    status: 403,
    details: [{ rule: 'member.owner' }],
  });
  await expect(inviteMember(d, restricted, { email: 'x@example.com', role: 'member' })).rejects.toMatchObject({
    status: 403,
    details: [{ rule: 'token.agentRestricted' }],
  });
  await expect(removeMember(d, member, 'ann@example.com')).rejects.toMatchObject({ status: 403 });
  expect(await inviteMember(d, token, { email: 'x@example.com', role: 'member' })).toMatchObject({
    email: 'x@example.com',
  });
  // Members read the list; it shows owners first.
  expect((await listMembers(d, member)).data.map((m) => `${m.role} ${m.email}`)).toEqual([
    'owner ann@example.com',
    'member x@example.com',
  ]);
});

it('keeps the last owner, and removes others from the directory before the membership', async () => {
  const { deps: d, directory, members } = deps();
  const { organizationId } = await signUp(d, REQUEST);
  await expect(removeMember(d, owner(organizationId), 'ann@example.com')).rejects.toMatchObject({
    status: 409,
    code: 'LAST_OWNER',
  });
  await inviteMember(d, owner(organizationId), { email: 'bob@example.com', role: 'owner' });
  // The directory fails: the membership stays, and a repeat finishes the removal.
  directory.removeAnswer = new Error('Cognito is down');
  await expect(removeMember(d, owner(organizationId), 'ann@example.com')).rejects.toThrow('Cognito is down');
  expect(await members.get('ann@example.com')).toBeDefined();
  directory.removeAnswer = undefined;
  expect(await removeMember(d, owner(organizationId, 'bob@example.com'), 'ann@example.com')).toEqual({
    email: 'ann@example.com',
    removedAt: '2026-11-26T10:00:00.000Z',
  });
  expect(await members.get('ann@example.com')).toBeUndefined();
  // Another organization's person, or nobody: the same 404.
  await expect(removeMember(d, owner('another-org'), 'bob@example.com')).rejects.toMatchObject({
    status: 404,
    code: 'MEMBER_NOT_FOUND',
  });
  await expect(removeMember(d, owner(organizationId), 'nobody@example.com')).rejects.toMatchObject({ status: 404 });
});
