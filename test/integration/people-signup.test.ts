/**
 * People through `npm start` with cognito-local and real ID tokens (issue 18 §1, issue 33): a person signs up and owns
 * a new organization; an owner's invitation is an offer that the invited person sees, accepts (or not) after signing in
 * with the printed temporary password; an address with an account elsewhere is invited with the same answer and keeps
 * what it has; a person of several organizations names one per request; tokens manage no people; a removed person is
 * refused in that organization at their next request and their tokens end; a new account of a removed address
 * inherits nothing; the last owner stays; bad input names its field; a runtime without people's accounts says so.
 * The rules without engines: test/unit/core/dashboard/members.test.ts.
 */
import { AdminDeleteUserCommand } from '@aws-sdk/client-cognito-identity-provider';
import { cognitoOf, firstSignIn, type ServiceCognito, signIn as signInWith } from '../helpers/people';
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

const signIn = (email: string, password: string) => signInWith(cognito, email, password);

/** The last temporary password the runtime printed for `email` (in AWS Cognito e-mails it). */
async function printedPassword(email: string): Promise<string> {
  const pattern = new RegExp(`Invitation for ${email.replace(/[.]/g, '\\.')}: temporary password (\\S+)`, 'g');
  const found = await pollUntil(
    async () => [...service.output().matchAll(pattern)].pop()?.[1],
    (password) => password !== undefined,
    10_000,
  );
  if (!found) throw new Error(`no invitation for ${email} was printed:\n${service.output().slice(-3000)}`);
  return found;
}

/** A request of a person in one organization (X-Organization-Id), or in none named. */
const as = (token: string, organizationId?: string) =>
  ({ token, ...(organizationId ? { headers: { 'x-organization-id': organizationId } } : {}) }) as const;

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
  const me = await api<Body>('GET', '/dashboard/me', { token: ownerToken });
  expect(me.body).toEqual({
    success: true,
    email: 'ann.owner@example.com',
    organizations: [{ organizationId, name: 'Acme Support', role: 'owner', joinedAt: expect.any(String) }],
    invitations: [],
  });
  // The new organization is theirs alone: no agents, and a token of another organization does not see it.
  const agents = await api<Body>('GET', '/dashboard/agents', { token: ownerToken });
  expect(agents.body).toMatchObject({ data: [], count: 0 });
  const other = await api<Body>('GET', '/dashboard/organization', { token: service.tokens[0] });
  expect(other.body.organizationId).not.toBe(organizationId);
});

it('answers 409 EMAIL_TAKEN to a sign-up of an address with an account, and leaves its organization as it was', async () => {
  const again = await api<Body>('POST', '/dashboard/signup', {
    body: { ...OWNER, email: 'ANN.OWNER@example.com', organizationName: 'Second' },
  });
  expect(again.status).toBe(409);
  expect(again.body).toMatchObject({
    success: false,
    error: { code: 'EMAIL_TAKEN', details: [{ field: 'email', rule: 'unique' }] },
  });
  const me = await api<Body>('GET', '/dashboard/me', { token: ownerToken });
  expect(me.body.organizations).toEqual([expect.objectContaining({ organizationId, name: 'Acme Support' })]);
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

let bobToken: string;

it('makes an invitation an offer: the invited person signs in, sees it, and is a member only once they accept', async () => {
  const invited = await api<Body>('POST', '/dashboard/members', {
    token: ownerToken,
    body: { email: 'Bob@Example.com' },
  });
  expect(invited.status).toBe(201);
  expect(invited.body).toEqual({
    success: true,
    email: 'bob@example.com',
    role: 'member',
    status: 'invited',
    createdAt: expect.any(String),
    expiresAt: expect.any(String),
  });
  expect(Date.parse(invited.body.expiresAt as string) - Date.parse(invited.body.createdAt as string)).toBe(
    7 * 86_400_000,
  );
  const temporary = await printedPassword('bob@example.com');
  // Cognito asks for a password of their own (NEW_PASSWORD_REQUIRED) before it gives a token.
  bobToken = await firstSignIn(cognito, 'bob@example.com', temporary, 'Bobs-own-pass-2');
  // Not a member yet: nothing of the organization is theirs.
  const before = await api<Body>('GET', '/dashboard/organization', { token: bobToken });
  expect(before.status).toBe(403);
  expect(before.body).toMatchObject({ error: { code: 'NO_ORGANIZATION' } });
  const me = await api<Body>('GET', '/dashboard/me', { token: bobToken });
  expect(me.body).toMatchObject({
    organizations: [],
    invitations: [
      { organizationId, organizationName: 'Acme Support', role: 'member', invitedBy: 'ann.owner@example.com' },
    ],
  });
  const accepted = await api<Body>('POST', `/dashboard/me/invitations/${organizationId}`, { token: bobToken });
  expect(accepted.status).toBe(201);
  expect(accepted.body).toMatchObject({ organizationId, name: 'Acme Support', role: 'member' });
  const organization = await api<Body>('GET', '/dashboard/organization', { token: bobToken });
  expect(organization.body).toMatchObject({ organizationId, caller: { email: 'bob@example.com', role: 'member' } });
  // A member reads the people of the organization, owners first, and manages none of them.
  const list = await api<Body>('GET', '/dashboard/members', { token: bobToken });
  expect(list.body).toMatchObject({
    data: [
      { email: 'ann.owner@example.com', role: 'owner', status: 'active' },
      { email: 'bob@example.com', role: 'member', status: 'active' },
    ],
    count: 2,
  });
  const refused = await api<Body>('POST', '/dashboard/members', {
    token: bobToken,
    body: { email: 'carl@example.com', role: 'owner' },
  });
  expect(refused.status).toBe(403);
  expect(refused.body).toMatchObject({ error: { code: 'FORBIDDEN', details: [{ rule: 'member.owner' }] } });
  expect((await api('DELETE', '/dashboard/members/ann.owner@example.com', { token: bobToken })).status).toBe(403);
  expect((await api('POST', '/dashboard/tokens', { token: bobToken, body: { scopes: ['analytics'] } })).status).toBe(
    403,
  );
});

let cyOrganization: string;
let cyToken: string;

it('invites an address that has an account elsewhere with the same answer, and it keeps what it has', async () => {
  const signedUp = await api<Body>('POST', '/dashboard/signup', {
    body: { email: 'cy@example.com', password: 'Cy-pass-word-3', organizationName: 'Cyco' },
  });
  cyOrganization = signedUp.body.organizationId as string;
  const toAccount = await api<Body>('POST', '/dashboard/members', {
    token: ownerToken,
    body: { email: 'cy@example.com', role: 'owner' },
  });
  const toNobody = await api<Body>('POST', '/dashboard/members', {
    token: ownerToken,
    body: { email: 'nobody.yet@example.com', role: 'owner' },
  });
  expect([toAccount.status, toNobody.status]).toEqual([201, 201]);
  const shape = (body: Body) => ({ ...body, email: '', createdAt: '', expiresAt: '' });
  expect(shape(toAccount.body)).toEqual(shape(toNobody.body));
  // An account it has keeps its password: no new one is printed for it.
  expect(service.output()).not.toMatch(/Invitation for cy@example\.com: temporary password/);
  cyToken = await signIn('cy@example.com', 'Cy-pass-word-3');
  expect(
    (await api<Body>('POST', `/dashboard/me/invitations/${organizationId}`, { token: cyToken })).body,
  ).toMatchObject({ role: 'owner' });
  // Two organizations now: each request names one.
  const unnamed = await api<Body>('GET', '/dashboard/organization', { token: cyToken });
  expect(unnamed.status).toBe(400);
  expect(unnamed.body).toMatchObject({
    error: { code: 'ORGANIZATION_REQUIRED', details: [{ field: 'X-Organization-Id' }] },
  });
  for (const [named, role] of [
    [organizationId, 'owner'],
    [cyOrganization, 'owner'],
  ]) {
    const answer = await api<Body>('GET', '/dashboard/organization', as(cyToken, named));
    expect(answer.body).toMatchObject({ organizationId: named, caller: { role } });
  }
  // Bob's organization is not one of them, whether or not it exists.
  for (const foreign of [service.tokens[0], '00000000-0000-4000-8000-000000000000']) {
    const id =
      foreign === service.tokens[0]
        ? ((await api<Body>('GET', '/dashboard/organization', { token: foreign })).body.organizationId as string)
        : foreign;
    const answer = await api<Body>('GET', '/dashboard/agents', as(cyToken, id));
    expect(answer.status).toBe(403);
    expect(answer.body).toMatchObject({ error: { code: 'NOT_A_MEMBER' } });
  }
});

it('lets no token manage people: a dashboard token of a day cannot invite an owner or remove one', async () => {
  const minted = await api<Body>('POST', '/dashboard/tokens', {
    token: ownerToken,
    body: { scopes: ['dashboard'], expiresInDays: 1, name: 'a day' },
  });
  const dayToken = minted.body.token as string;
  const invite = await api<Body>('POST', '/dashboard/members', {
    token: dayToken,
    body: { email: 'eve@evil.test', role: 'owner' },
  });
  expect(invite.status).toBe(403);
  expect(invite.body).toMatchObject({ error: { details: [{ rule: 'members.person' }] } });
  const remove = await api<Body>('DELETE', '/dashboard/members/ann.owner@example.com', { token: dayToken });
  expect(remove.status).toBe(403);
  // What it mints ends with it, and never goes past it.
  const child = await api<Body>('POST', '/dashboard/tokens', { token: dayToken, body: { scopes: ['dashboard'] } });
  expect(child.status).toBe(201);
  expect(child.body.expiresAt).toBe(minted.body.expiresAt);
  const wider = await api<Body>('POST', '/dashboard/tokens', { token: dayToken, body: { scopes: ['analytics'] } });
  expect(wider.status).toBe(403);
  expect((await api('DELETE', `/dashboard/tokens/${minted.body.tokenId}`, { token: ownerToken })).status).toBe(200);
  expect((await api('GET', '/dashboard/agents', { token: child.body.token as string })).status).toBe(401);
});

it('refuses a removed person in that organization at their next request, and ends the tokens they made', async () => {
  const cyMinted = await api<Body>('POST', '/dashboard/tokens', {
    ...as(cyToken, organizationId),
    body: { scopes: ['analytics'], name: 'cy in acme' },
  });
  expect(cyMinted.status).toBe(201);
  const cyTokenInAcme = cyMinted.body.token as string;
  expect((await api('POST', '/api/v1/events/agent', { token: cyTokenInAcme, body: { agentId: 'x' } })).status).toBe(
    400,
  );
  const removed = await api<Body>('DELETE', '/dashboard/members/cy@example.com', { token: ownerToken });
  expect(removed.status).toBe(200);
  expect(removed.body).toEqual({
    success: true,
    email: 'cy@example.com',
    removedAt: expect.any(String),
    status: 'removed',
    tokensRevoked: 1,
  });
  // Their ID token is still well signed and unexpired: they are a person, of Cyco only now.
  const inAcme = await api<Body>('GET', '/dashboard/agents', as(cyToken, organizationId));
  expect(inAcme.status).toBe(403);
  expect(inAcme.body).toMatchObject({ error: { code: 'NOT_A_MEMBER' } });
  expect((await api('GET', '/dashboard/agents', { token: cyToken })).status).toBe(200);
  expect((await api('POST', '/api/v1/events/agent', { token: cyTokenInAcme, body: { agentId: 'x' } })).status).toBe(
    401,
  );
  // The account stays: it signs in.
  await expect(signIn('cy@example.com', 'Cy-pass-word-3')).resolves.toEqual(expect.any(String));
  const again = await api<Body>('DELETE', '/dashboard/members/cy@example.com', { token: ownerToken });
  expect(again.status).toBe(404);
  expect(again.body).toMatchObject({ error: { code: 'MEMBER_NOT_FOUND' } });
  const last = await api<Body>('DELETE', '/dashboard/members/ann.owner@example.com', { token: ownerToken });
  expect(last.status).toBe(409);
  expect(last.body).toMatchObject({ error: { code: 'LAST_OWNER', details: [{ field: 'email', rule: 'owner.last' }] } });
});

it('gives a new account of a member’s address (another sub) nothing of that membership', async () => {
  // An operator deletes Bob's account and a new one is made for his address: the membership is the old sub's.
  await cognito.client.send(
    new AdminDeleteUserCommand({ UserPoolId: cognito.userPoolId, Username: 'bob@example.com' }),
  );
  const signedUp = await api<Body>('POST', '/dashboard/signup', {
    body: { email: 'bob@example.com', password: 'New-bob-pass-4', organizationName: 'Bobco' },
  });
  expect(signedUp.status).toBe(201);
  const newBob = await signIn('bob@example.com', 'New-bob-pass-4');
  const me = await api<Body>('GET', '/dashboard/me', { token: newBob });
  expect((me.body.organizations as Body[]).map((o) => o.name)).toEqual(['Bobco']);
  const inAcme = await api<Body>('GET', '/dashboard/agents', as(newBob, organizationId));
  expect(inAcme.body).toMatchObject({ error: { code: 'NOT_A_MEMBER' } });
  // Acme still lists the old Bob, and can remove him; it cannot invite the address while he is there.
  const invite = await api<Body>('POST', '/dashboard/members', {
    token: ownerToken,
    body: { email: 'bob@example.com', role: 'owner' },
  });
  expect(invite.body).toMatchObject({ error: { code: 'ALREADY_MEMBER' } });
});

it('refuses a role that does not exist, renews an unused temporary password, and lets the person decline', async () => {
  const role = await api<Body>('POST', '/dashboard/members', {
    token: ownerToken,
    body: { email: 'dana@example.com', role: 'admin' },
  });
  expect(role.status).toBe(400);
  expect(role.body).toMatchObject({ error: { details: [{ field: 'role' }] } });
  await api<Body>('POST', '/dashboard/members', { token: ownerToken, body: { email: 'dana@example.com' } });
  const first = await printedPassword('dana@example.com');
  // Invited again before she ever signed in (in AWS her temporary password lasts 7 days): a new one replaces it.
  await api<Body>('POST', '/dashboard/members', { token: ownerToken, body: { email: 'dana@example.com' } });
  const second = await pollUntil(
    () => printedPassword('dana@example.com'),
    (password) => password !== first,
    10_000,
  );
  await expect(firstSignIn(cognito, 'dana@example.com', first, 'Danas-pass-5')).rejects.toThrow();
  const dana = await firstSignIn(cognito, 'dana@example.com', second, 'Danas-pass-5');
  const declined = await api<Body>('DELETE', `/dashboard/me/invitations/${organizationId}`, { token: dana });
  expect(declined.status).toBe(200);
  const accept = await api<Body>('POST', `/dashboard/me/invitations/${organizationId}`, { token: dana });
  expect(accept.status).toBe(404);
  expect(accept.body).toMatchObject({ error: { code: 'INVITATION_NOT_FOUND' } });
  // A token is no person: the person's own routes refuse it.
  const asToken = await api<Body>('GET', '/dashboard/me', { token: service.tokens[0] });
  expect(asToken.status).toBe(403);
  expect(asToken.body).toMatchObject({ error: { details: [{ rule: 'person.required' }] } });
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
    // No person can exist there, and a token manages no people.
    const invite = await call<Body>('POST', '/dashboard/members', { body: { email: 'x@example.com', role: 'member' } });
    expect(invite.status).toBe(403);
    const list = await call<Body>('GET', '/dashboard/members');
    expect(list.body).toMatchObject({ data: [], count: 0 });
  } finally {
    await bare.stop();
  }
});
