/**
 * Sign-up and members (issue 18 §1) through `npm start` with cognito-local: a person signs up and owns a new
 * organization, signs in with Cognito and reads it; an owner invites a member whose temporary password the runtime
 * prints, who signs in, chooses a password, reads the dashboard and may not manage members; a removed person is
 * refused at their next request; the last owner stays; bad input names its field; a runtime without people's accounts
 * says so. The rules without engines: test/unit/core/dashboard/members.test.ts.
 */
import { InitiateAuthCommand } from '@aws-sdk/client-cognito-identity-provider';
import { cognitoOf, firstSignIn, type ServiceCognito } from '../helpers/people';
import { pollUntil } from '../helpers/poll';
import { client as apiClient, startService, type TestService } from '../helpers/service';

type Body = Record<string, unknown>;

let service: TestService;
let cognito: ServiceCognito;
/** Requests without a token (sign-up), or with the one given per call. */
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  service = await startService({ env: { COGNITO: 'on' } });
  cognito = cognitoOf(service);
  api = apiClient(service, null);
});
afterAll(async () => {
  cognito?.client.destroy();
  await service?.stop();
});

async function signIn(email: string, password: string): Promise<string> {
  const { AuthenticationResult } = await cognito.client.send(
    new InitiateAuthCommand({
      ClientId: cognito.clientId,
      AuthFlow: 'USER_PASSWORD_AUTH',
      AuthParameters: { USERNAME: email, PASSWORD: password },
    }),
  );
  return AuthenticationResult?.IdToken as string;
}

/** The temporary password the runtime printed for `email` (in AWS Cognito e-mails it). */
async function printedPassword(email: string): Promise<string> {
  const pattern = new RegExp(`Invitation for ${email.replace(/[.]/g, '\\.')}: temporary password (\\S+)`);
  const found = await pollUntil(
    async () => pattern.exec(service.output())?.[1],
    (password) => password !== undefined,
    10_000,
  );
  if (!found) throw new Error(`no invitation for ${email} was printed:\n${service.output().slice(-3000)}`);
  return found;
}

const OWNER = { email: 'Ann.Owner@Example.com', password: 'Owner-pass-1', organizationName: '  Acme Support  ' };
let organizationId: string;
let ownerToken: string;

it('signs a person up as the owner of a new organization, and they sign in and read it', async () => {
  const answer = await api<Body>('POST', '/dashboard/signup', { body: OWNER });
  expect(answer.status).toBe(201);
  expect(answer.body).toEqual({
    success: true,
    organizationId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    email: 'ann.owner@example.com',
    confirmed: true,
  });
  organizationId = answer.body.organizationId as string;
  // Confirmed at once locally. The person is the e-mail in lower case: cognito-local compares user names as they are
  // (the stack's pool compares them without case), so a client signs in with the e-mail lower-cased.
  ownerToken = await signIn(OWNER.email.toLowerCase(), OWNER.password);
  const organization = await api<Body>('GET', '/dashboard/organization', { token: ownerToken });
  expect(organization.body).toEqual({
    success: true,
    organizationId,
    name: 'Acme Support',
    createdAt: expect.any(String),
    caller: { kind: 'person', email: 'ann.owner@example.com', role: 'owner' },
  });
  // The new organization is theirs alone: no agents, and a token of another organization does not see it.
  const agents = await api<Body>('GET', '/dashboard/agents', { token: ownerToken });
  expect(agents.body).toMatchObject({ data: [], count: 0 });
  const other = await api<Body>('GET', '/dashboard/organization', { token: service.tokens[0] });
  expect(other.body).toMatchObject({ name: null, caller: { kind: 'token', email: null, role: 'owner' } });
  expect(other.body.organizationId).not.toBe(organizationId);
});

it('takes one sign-up per e-mail, whatever its case, and leaves the first organization as it was', async () => {
  const again = await api<Body>('POST', '/dashboard/signup', {
    body: { ...OWNER, email: 'ANN.OWNER@example.com', organizationName: 'Second' },
  });
  expect(again.status).toBe(409);
  expect(again.body).toMatchObject({
    success: false,
    error: { code: 'EMAIL_TAKEN', details: [{ field: 'email', rule: 'unique' }] },
  });
  const organization = await api<Body>('GET', '/dashboard/organization', { token: ownerToken });
  expect(organization.body).toMatchObject({ organizationId, name: 'Acme Support' });
});

it.each([
  ['a password without a symbol', { password: 'Password1' }, 'password', 'password.symbol'],
  ['a short password', { password: 'Pa-1' }, 'password', 'minLength'],
  ['an e-mail without a domain', { email: 'ann@' }, 'email', 'format.regex'],
  ['an empty organization name', { organizationName: '   ' }, 'organizationName', 'minLength'],
  ['an unknown field', { plan: 'gold' }, 'plan', 'unknownField'],
])('refuses %s with its field and rule, and creates no one', async (_name, change, field, rule) => {
  const email = `refused-${field}-${rule}@example.com`.toLowerCase();
  const answer = await api<Body>('POST', '/dashboard/signup', { body: { ...OWNER, email, ...change } });
  expect(answer.status).toBe(400);
  expect(answer.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
  const details = (answer.body.error as { details: { field: string; rule: string }[] }).details;
  expect(details).toContainEqual(expect.objectContaining({ field, rule }));
  // Nobody was made: the same e-mail signs up afterwards.
  if (field !== 'email') {
    const later = await api<Body>('POST', '/dashboard/signup', { body: { ...OWNER, email } });
    expect(later.status).toBe(201);
  }
});

let memberToken: string;

it('lets an owner invite a member, whose printed temporary password signs in once to choose their own', async () => {
  const invited = await api<Body>('POST', '/dashboard/members', {
    token: ownerToken,
    body: { email: 'Bob@Example.com' },
  });
  expect(invited.status).toBe(201);
  expect(invited.body).toEqual({
    success: true,
    email: 'bob@example.com',
    role: 'member',
    createdAt: expect.any(String),
    invitation: 'sent',
  });
  const temporary = await printedPassword('bob@example.com');
  // Cognito asks for a password of their own (NEW_PASSWORD_REQUIRED) before it gives a token.
  memberToken = await firstSignIn(cognito, 'bob@example.com', temporary, 'Bobs-own-pass-2');
  const organization = await api<Body>('GET', '/dashboard/organization', { token: memberToken });
  expect(organization.body).toMatchObject({ organizationId, caller: { email: 'bob@example.com', role: 'member' } });
  // A member reads the people of the organization, owners first, and manages none of them.
  const list = await api<Body>('GET', '/dashboard/members', { token: memberToken });
  expect(list.body).toEqual({
    success: true,
    data: [
      { email: 'ann.owner@example.com', role: 'owner', createdAt: expect.any(String) },
      { email: 'bob@example.com', role: 'member', createdAt: expect.any(String) },
    ],
    count: 2,
  });
  const refused = await api<Body>('POST', '/dashboard/members', {
    token: memberToken,
    body: { email: 'carl@example.com', role: 'owner' },
  });
  expect(refused.status).toBe(403);
  expect(refused.body).toMatchObject({ error: { code: 'FORBIDDEN', details: [{ rule: 'member.owner' }] } });
  const removal = await api<Body>('DELETE', '/dashboard/members/ann.owner@example.com', { token: memberToken });
  expect(removal.status).toBe(403);
});

it('refuses to invite a person of any organization, or with a role that does not exist', async () => {
  const taken = await api<Body>('POST', '/dashboard/members', {
    token: ownerToken,
    body: { email: 'ann.owner@example.com', role: 'member' },
  });
  expect(taken.status).toBe(409);
  expect(taken.body).toMatchObject({ error: { code: 'EMAIL_TAKEN' } });
  const role = await api<Body>('POST', '/dashboard/members', {
    token: ownerToken,
    body: { email: 'dana@example.com', role: 'admin' },
  });
  expect(role.status).toBe(400);
  expect(role.body).toMatchObject({ error: { details: [{ field: 'role' }] } });
});

it('refuses a removed person at their next request, and keeps the last owner', async () => {
  expect((await api('GET', '/dashboard/agents', { token: memberToken })).status).toBe(200);
  const removed = await api<Body>('DELETE', '/dashboard/members/Bob%40Example.com', { token: ownerToken });
  expect(removed.status).toBe(200);
  expect(removed.body).toEqual({ success: true, email: 'bob@example.com', removedAt: expect.any(String) });
  // Their ID token is still well signed and unexpired, but they belong to no organization any more.
  expect((await api<Body>('GET', '/dashboard/agents', { token: memberToken })).status).toBe(401);
  // Gone from the pool too: the same e-mail may be invited again, or sign up.
  await expect(signIn('bob@example.com', 'Bobs-own-pass-2')).rejects.toMatchObject({
    name: 'NotAuthorizedException',
  });
  const again = await api<Body>('DELETE', '/dashboard/members/bob@example.com', { token: ownerToken });
  expect(again.status).toBe(404);
  expect(again.body).toMatchObject({ error: { code: 'MEMBER_NOT_FOUND' } });

  const last = await api<Body>('DELETE', '/dashboard/members/ann.owner@example.com', { token: ownerToken });
  expect(last.status).toBe(409);
  expect(last.body).toMatchObject({ error: { code: 'LAST_OWNER', details: [{ field: 'email', rule: 'owner.last' }] } });
});

it('says so when the runtime has no people’s accounts (COGNITO=off)', async () => {
  const bare = await startService();
  try {
    const call = apiClient(bare, bare.tokens[0]);
    const signUp = await call<Body>('POST', '/dashboard/signup', {
      token: null,
      body: { ...OWNER, email: 'nobody@example.com' },
    });
    expect(signUp.status).toBe(403);
    expect(signUp.body).toMatchObject({ error: { code: 'SIGNUP_CLOSED' } });
    const invite = await call<Body>('POST', '/dashboard/members', { body: { email: 'x@example.com', role: 'member' } });
    expect(invite.status).toBe(409);
    expect(invite.body).toMatchObject({ error: { code: 'PEOPLE_NOT_CONFIGURED' } });
    // Nothing was written before the refusal.
    const list = await call<Body>('GET', '/dashboard/members');
    expect(list.body).toMatchObject({ data: [], count: 0 });
  } finally {
    await bare.stop();
  }
});
