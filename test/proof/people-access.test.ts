/**
 * The access matrix of people and tokens (issue 33): every route that makes, lists or ends a credential or a
 * membership, and a person's own routes, × every kind of caller: an owner signed in, a member signed in, a token of the
 * whole organization with `dashboard` that expires in a day, a token restricted to an agent, an expired token, a person
 * removed from the organization (their ID token still valid), and the owner of another organization. Each cell is a
 * named test with the status, code and rule the README and docs/people.md promise; real cognito-local ID tokens.
 * The rest of the API × token kinds: test/proof/access.test.ts.
 */
import { cognitoOf, firstSignIn, type ServiceCognito, signIn as signInWith } from '../helpers/people';
import { pollUntil } from '../helpers/poll';
import { type ApiResponse, client, startService, type TestService } from '../helpers/service';
import { tokenTable } from '../helpers/token-table';
import { printFigures } from './size';

type Body = Record<string, unknown>;
type Call = ReturnType<typeof client>;

const KINDS = [
  'owner',
  'member',
  'dashboard token',
  'restricted token',
  'expired token',
  'removed person',
  'other organization',
] as const;
type Kind = (typeof KINDS)[number];

/** What a cell expects: a status, and for a refusal its code and the rule its first detail names. */
interface Expect {
  readonly status: number;
  readonly code?: string;
  readonly rule?: string;
}
const ok = (status: number): Expect => ({ status });
const refused = (status: number, code: string, rule?: string): Expect => ({ status, code, ...(rule ? { rule } : {}) });
const UNAUTHORIZED = refused(401, 'UNAUTHORIZED');
const NOT_A_MEMBER = refused(403, 'NOT_A_MEMBER', 'organization.member');
const MEMBER = refused(403, 'FORBIDDEN', 'member.owner');
const TOKEN_NO_PEOPLE = refused(403, 'FORBIDDEN', 'members.person');
const NOT_A_PERSON = refused(403, 'FORBIDDEN', 'person.required');
const RESTRICTED = refused(403, 'FORBIDDEN', 'token.agentRestricted');

/** A cell's request: method, path and body, made fresh for the caller (what it consumes is its own). */
interface Request {
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
}

interface Row {
  readonly request: (kind: Kind) => Promise<Request>;
  readonly expect: Record<Kind, Expect>;
}

let service: TestService;
let cognito: ServiceCognito;
let api: Call;
let orgA: string;
let orgB: string;
/** Organizations that invite every person kind, for the accept and decline cells. */
let inviters: { accept: string; decline: string };
/** Each kind's credential, and the headers of a person's request (the organization it acts in). */
const credentials = {} as Record<Kind, { token: string; headers?: Record<string, string> }>;
const ownerOf: Record<string, string> = {};
let people = 0;
const newEmail = (prefix: string) => `${prefix}-${process.pid}-${++people}@people-matrix.example.com`;

const signIn = (email: string, password: string) => signInWith(cognito, email, password);

/** An invited address's temporary password as the runtime printed it. */
async function printed(email: string): Promise<string> {
  const pattern = new RegExp(`Invitation for ${email.replace(/[.]/g, '\\.')}: temporary password (\\S+)`);
  const found = await pollUntil(
    async () => pattern.exec(service.output())?.[1],
    (password) => password !== undefined,
    10_000,
  );
  return found as string;
}

/** A person who signed up and owns a new organization. */
async function founder(prefix: string): Promise<{ token: string; organizationId: string; email: string }> {
  const email = newEmail(prefix);
  const made = await api<Body>('POST', '/dashboard/signup', {
    token: null,
    body: { email, password: 'Matrix-pass-1', organizationName: `Org of ${prefix}` },
  });
  expect(made.status).toBe(201);
  const organizationId = made.body.organizationId as string;
  const token = await signIn(email, 'Matrix-pass-1');
  ownerOf[organizationId] = token;
  return { token, organizationId, email };
}

/** `email` invited into the organization of `ownerToken`, signed in with the printed password, and (if asked) joined. */
async function invitee(organizationId: string, email: string, join: boolean): Promise<string> {
  const invited = await api<Body>('POST', '/dashboard/members', {
    token: ownerOf[organizationId],
    headers: { 'x-organization-id': organizationId },
    body: { email, role: 'member' },
  });
  expect(invited.status).toBe(201);
  const token = await firstSignIn(cognito, email, await printed(email), 'Matrix-pass-2');
  if (join) {
    const accepted = await api('POST', `/dashboard/me/invitations/${organizationId}`, { token });
    expect(accepted.status).toBe(201);
  }
  return token;
}

/** A token of org A made by its owner signed in. */
async function orgAToken(body: Body): Promise<{ token: string; tokenId: string }> {
  const made = await api<Body>('POST', '/dashboard/tokens', { ...credentials.owner, body });
  expect(made.status).toBe(201);
  return { token: made.body.token as string, tokenId: made.body.tokenId as string };
}

/** The email of a fresh invitation into org A, for a removal cell to cancel. */
async function pendingInvitation(): Promise<string> {
  const email = newEmail('pending');
  const invited = await api('POST', '/dashboard/members', { ...credentials.owner, body: { email, role: 'member' } });
  expect(invited.status).toBe(201);
  return email;
}

const ROWS: Record<string, Row> = {
  CreateToken: {
    request: async () => ({ method: 'POST', path: '/dashboard/tokens', body: { scopes: ['dashboard'], name: 'cell' } }),
    expect: {
      owner: ok(201),
      member: MEMBER,
      'dashboard token': ok(201),
      // A token restricted to agents makes only tokens restricted to some of its agents.
      'restricted token': refused(403, 'FORBIDDEN', 'agentIds.notHeld'),
      'expired token': UNAUTHORIZED,
      'removed person': NOT_A_MEMBER,
      'other organization': ok(201),
    },
  },
  ListTokens: {
    request: async () => ({ method: 'GET', path: '/dashboard/tokens' }),
    expect: {
      owner: ok(200),
      member: MEMBER,
      'dashboard token': ok(200),
      'restricted token': RESTRICTED,
      'expired token': UNAUTHORIZED,
      'removed person': NOT_A_MEMBER,
      'other organization': ok(200),
    },
  },
  RevokeToken: {
    // A token of org A no wider than the day token (one it made itself), so only who asks decides.
    request: async () => {
      const made = await api<Body>('POST', '/dashboard/tokens', {
        token: credentials['dashboard token'].token,
        body: { scopes: ['dashboard'], name: 'to revoke' },
      });
      expect(made.status).toBe(201);
      return { method: 'DELETE', path: `/dashboard/tokens/${made.body.tokenId}` };
    },
    expect: {
      owner: ok(200),
      member: MEMBER,
      'dashboard token': ok(200),
      'restricted token': RESTRICTED,
      'expired token': UNAUTHORIZED,
      'removed person': NOT_A_MEMBER,
      'other organization': refused(404, 'TOKEN_NOT_FOUND'),
    },
  },
  InviteMember: {
    request: async () => ({
      method: 'POST',
      path: '/dashboard/members',
      body: { email: newEmail('x'), role: 'owner' },
    }),
    expect: {
      owner: ok(201),
      member: MEMBER,
      'dashboard token': TOKEN_NO_PEOPLE,
      'restricted token': TOKEN_NO_PEOPLE,
      'expired token': UNAUTHORIZED,
      'removed person': NOT_A_MEMBER,
      'other organization': ok(201),
    },
  },
  ListMembers: {
    request: async () => ({ method: 'GET', path: '/dashboard/members' }),
    expect: {
      owner: ok(200),
      member: ok(200),
      'dashboard token': ok(200),
      'restricted token': refused(403, 'FORBIDDEN', 'token.agentRestricted'),
      'expired token': UNAUTHORIZED,
      'removed person': NOT_A_MEMBER,
      'other organization': ok(200),
    },
  },
  RemoveMember: {
    request: async () => ({
      method: 'DELETE',
      path: `/dashboard/members/${encodeURIComponent(await pendingInvitation())}`,
    }),
    expect: {
      owner: ok(200),
      member: MEMBER,
      'dashboard token': TOKEN_NO_PEOPLE,
      'restricted token': TOKEN_NO_PEOPLE,
      'expired token': UNAUTHORIZED,
      'removed person': NOT_A_MEMBER,
      'other organization': refused(404, 'MEMBER_NOT_FOUND'),
    },
  },
  GetOrganization: {
    request: async () => ({ method: 'GET', path: '/dashboard/organization' }),
    expect: {
      owner: ok(200),
      member: ok(200),
      'dashboard token': ok(200),
      'restricted token': ok(200),
      'expired token': UNAUTHORIZED,
      'removed person': NOT_A_MEMBER,
      'other organization': ok(200),
    },
  },
  GetMe: {
    request: async () => ({ method: 'GET', path: '/dashboard/me' }),
    expect: {
      owner: ok(200),
      member: ok(200),
      'dashboard token': NOT_A_PERSON,
      'restricted token': NOT_A_PERSON,
      'expired token': UNAUTHORIZED,
      // Still a person: their own routes answer, no organization's.
      'removed person': ok(200),
      'other organization': ok(200),
    },
  },
  AcceptInvitation: {
    request: async () => ({ method: 'POST', path: `/dashboard/me/invitations/${inviters.accept}` }),
    expect: {
      owner: ok(201),
      member: ok(201),
      'dashboard token': NOT_A_PERSON,
      'restricted token': NOT_A_PERSON,
      'expired token': UNAUTHORIZED,
      'removed person': ok(201),
      // Not invited there: no invitation of theirs, whether or not others have one.
      'other organization': refused(404, 'INVITATION_NOT_FOUND'),
    },
  },
  DeclineInvitation: {
    request: async () => ({ method: 'DELETE', path: `/dashboard/me/invitations/${inviters.decline}` }),
    expect: {
      owner: ok(200),
      member: ok(200),
      'dashboard token': NOT_A_PERSON,
      'restricted token': NOT_A_PERSON,
      'expired token': UNAUTHORIZED,
      'removed person': ok(200),
      'other organization': refused(404, 'INVITATION_NOT_FOUND'),
    },
  },
  CreateOrganization: {
    request: async () => ({ method: 'POST', path: '/dashboard/me/organizations', body: { name: 'Cell' } }),
    expect: {
      owner: ok(201),
      member: ok(201),
      'dashboard token': NOT_A_PERSON,
      'restricted token': NOT_A_PERSON,
      'expired token': UNAUTHORIZED,
      'removed person': ok(201),
      'other organization': ok(201),
    },
  },
};

const observed = new Map<string, Map<Kind, number>>();

beforeAll(async () => {
  service = await startService({ env: { COGNITO: 'on', DEV_USER: 'ann.people@example.com:Matrix-pass-1' } });
  cognito = cognitoOf(service);
  api = client(service, null);
  const ann = await signIn('ann.people@example.com', 'Matrix-pass-1');
  orgA = (await client(service)<Body>('GET', '/dashboard/organization')).body.organizationId as string;
  ownerOf[orgA] = ann;
  credentials.owner = { token: ann, headers: { 'x-organization-id': orgA } };
  const bea = await founder('bea');
  orgB = bea.organizationId;
  credentials['other organization'] = { token: bea.token, headers: { 'x-organization-id': orgB } };

  const member = await invitee(orgA, newEmail('member'), true);
  credentials.member = { token: member, headers: { 'x-organization-id': orgA } };
  const removedEmail = newEmail('removed');
  const removed = await invitee(orgA, removedEmail, true);
  const removal = await api('DELETE', `/dashboard/members/${encodeURIComponent(removedEmail)}`, credentials.owner);
  expect(removal.status).toBe(200);
  credentials['removed person'] = { token: removed, headers: { 'x-organization-id': orgA } };

  const agent = await api<Body>('POST', '/dashboard/agents', { ...credentials.owner, body: { displayName: 'Own' } });
  credentials['dashboard token'] = {
    token: (await orgAToken({ scopes: ['dashboard'], expiresInDays: 1, name: 'a day' })).token,
  };
  credentials['restricted token'] = {
    token: (await orgAToken({ scopes: ['dashboard'], agentIds: [agent.body.agentId], name: 'restricted' })).token,
  };
  const expiring = await orgAToken({ scopes: ['dashboard', 'analytics', 'knowledge-management', 'webhook'] });
  const table = tokenTable(service);
  if (!table) throw new Error('the people matrix runs against the local runtime');
  await table.expire(expiring.token, '2026-01-01T00:00:00.000Z');
  table.close();
  credentials['expired token'] = { token: expiring.token };

  // Two more organizations invite each person of the matrix: one to accept, one to decline.
  const [accept, decline] = await Promise.all([founder('accept'), founder('decline')]);
  inviters = { accept: accept.organizationId, decline: decline.organizationId };
  const emails = await Promise.all(
    (['owner', 'member', 'removed person'] as const).map(async (kind) => {
      const me = await api<Body>('GET', '/dashboard/me', { token: credentials[kind].token });
      return me.body.email as string;
    }),
  );
  for (const inviter of [accept, decline]) {
    for (const email of emails) {
      const invited = await api('POST', '/dashboard/members', {
        token: inviter.token,
        body: { email, role: 'member' },
      });
      expect(invited.status).toBe(201);
    }
  }
}, 120_000);

afterAll(async () => {
  const lines = [
    `${Object.keys(ROWS).length} routes × ${KINDS.length} caller kinds = ${Object.keys(ROWS).length * KINDS.length} cells`,
    `columns: ${KINDS.join(' | ')}`,
    ...[...observed].map(
      ([route, cells]) => `${route.padEnd(20)} ${KINDS.map((kind) => cells.get(kind) ?? '—').join(' ')}`,
    ),
  ];
  printFigures('people-access', lines);
  cognito?.client.destroy();
  await service?.stop();
});

const cells = Object.keys(ROWS).flatMap((route) => KINDS.map((kind) => [route, kind] as const));

it.each(cells)('%s by %s', async (route, kind) => {
  const row = ROWS[route];
  const request = await row.request(kind);
  const response: ApiResponse<Body> = await api<Body>(request.method, request.path, {
    token: credentials[kind].token,
    ...(credentials[kind].headers ? { headers: credentials[kind].headers } : {}),
    ...(request.body !== undefined ? { body: request.body } : {}),
  });
  const expected = row.expect[kind];
  const details = (response.body.error as { details?: { rule: string }[] } | undefined)?.details ?? [];
  expect({
    status: response.status,
    ...(expected.code ? { code: (response.body.error as { code: string }).code } : {}),
    ...(expected.rule ? { rule: details[0]?.rule } : {}),
  }).toEqual(expected);
  const statuses = observed.get(route) ?? new Map<Kind, number>();
  statuses.set(kind, response.status);
  observed.set(route, statuses);
});

it('lets no token revoke a token wider than itself, and a token made by a token end with it', async () => {
  const wide = await orgAToken({ scopes: ['dashboard', 'analytics'], name: 'wide' });
  const beyond = await api<Body>('DELETE', `/dashboard/tokens/${wide.tokenId}`, {
    token: credentials['dashboard token'].token,
  });
  expect(beyond.status).toBe(403);
  // Wider in scope, and in lifetime: the day token ends, the other does not.
  expect(beyond.body).toMatchObject({
    error: { details: [{ rule: 'token.beyondOwn' }, { rule: 'token.beyondOwn' }] },
  });
  const parent = await orgAToken({ scopes: ['dashboard'], name: 'parent' });
  const child = await api<Body>('POST', '/dashboard/tokens', { token: parent.token, body: { scopes: ['dashboard'] } });
  const revoked = await api<Body>('DELETE', `/dashboard/tokens/${parent.tokenId}`, credentials.owner);
  expect(revoked.body).toMatchObject({ descendantsRevoked: 1 });
  expect((await api('GET', '/dashboard/agents', { token: child.body.token as string })).status).toBe(401);
});
