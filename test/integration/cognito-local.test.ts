/**
 * People's accounts on the local engine (lib/local/cognito.ts: cognito-local in a process of its own) and the
 * verifier of their ID tokens (lambdas/adapters/auth/cognito-jwt.ts), against the real engine: sign-up of DEV_USER,
 * sign-in, a valid ID token accepted; an access token, another client's token, a forged, an altered and an expired
 * token refused; a wrong password refused by Cognito; the pool and people kept across a restart; and, through
 * `npm start`, a person's ID token opening their organization's dashboard (an owner's tokens, a member's refusal) and
 * nothing else.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdminConfirmSignUpCommand,
  AdminCreateUserCommand,
  AdminGetUserCommand,
  type CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  InitiateAuthCommand,
  SignUpCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { CognitoIdTokenVerifier } from '#adapters/auth/cognito-jwt';
import {
  cognitoClient,
  ensureDevUser,
  type LocalCognito,
  markAddressVerified,
  startCognito,
} from '../../lib/local/cognito';
import { engineReader } from '../helpers/knowledge-base-remains';
import { client as apiClient, startService } from '../helpers/service';

const EMAIL = 'Dev@Example.com';
const PASSWORD = 'Correct-horse-7';
let dataDir: string;
let cognito: LocalCognito;
let client: CognitoIdentityProviderClient;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'aps-cognito-'));
  cognito = await startCognito({ dataDir, host: '127.0.0.1' });
  client = cognitoClient(cognito.endpoint, cognito.credentials);
});
afterAll(async () => {
  client?.destroy();
  await cognito?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const signIn = (password = PASSWORD, clientId = cognito.clientId) =>
  client.send(
    new InitiateAuthCommand({
      ClientId: clientId,
      AuthFlow: 'USER_PASSWORD_AUTH',
      AuthParameters: { USERNAME: EMAIL, PASSWORD: password },
    }),
  );

it('signs DEV_USER up confirmed, and a sign-in gives an ID token the verifier accepts', async () => {
  expect(await ensureDevUser(cognito, `${EMAIL}:${PASSWORD}`)).toBe(EMAIL);
  // A second start finds the person there and leaves them as they are.
  expect(await ensureDevUser(cognito, `${EMAIL}:another-password-1`)).toBe(EMAIL);
  const { AuthenticationResult } = await signIn();
  const verifier = new CognitoIdTokenVerifier({ issuer: cognito.issuer, clientId: cognito.clientId });
  const person = await verifier.verify(AuthenticationResult?.IdToken as string);
  expect(person).toEqual({
    sub: expect.any(String),
    email: 'dev@example.com',
    emailVerified: true,
    expiresAt: expect.any(Date),
  });
  // Cognito's default is an hour; cognito-local's a day.
  expect((person?.expiresAt.getTime() ?? 0) - Date.now()).toBeGreaterThan(30 * 60 * 1000);
  // Cognito answers NotAuthorizedException; so does the guard in front of cognito-local (which says
  // InvalidPasswordException): test/integration/cognito-guard.test.ts.
  const refused = await signIn('wrong-password-1').catch((error: Error) => error.name);
  expect(refused).toBe('NotAuthorizedException');
  await expect(ensureDevUser(cognito, 'no-password')).rejects.toThrow('DEV_USER must be email:password');
});

it('refuses an access token, another client’s, a forged, an altered and an expired token', async () => {
  const verifier = new CognitoIdTokenVerifier({ issuer: cognito.issuer, clientId: cognito.clientId });
  const { AuthenticationResult } = await signIn();
  const idToken = AuthenticationResult?.IdToken as string;
  expect(await verifier.verify(AuthenticationResult?.AccessToken as string)).toBeUndefined();

  const { UserPoolClient } = await client.send(
    new CreateUserPoolClientCommand({
      UserPoolId: cognito.userPoolId,
      ClientName: 'another',
      ExplicitAuthFlows: ['ALLOW_USER_PASSWORD_AUTH'],
    }),
  );
  const other = await signIn(PASSWORD, UserPoolClient?.ClientId as string);
  expect(await verifier.verify(other.AuthenticationResult?.IdToken as string)).toBeUndefined();

  // The same claims and key id, signed with a key of our own.
  const [header, payload] = idToken
    .split('.')
    .slice(0, 2)
    .map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()));
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  expect((await exportJWK(publicKey)).kty).toBe('RSA');
  const forged = await new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: header.kid }).sign(privateKey);
  expect(await verifier.verify(forged)).toBeUndefined();
  // The real signature over altered claims.
  const [h, , signature] = idToken.split('.');
  const altered = Buffer.from(JSON.stringify({ ...payload, email: 'owner@example.com' })).toString('base64url');
  expect(await verifier.verify(`${h}.${altered}.${signature}`)).toBeUndefined();
  // Past its expiry (an hour with Cognito's defaults, a day with cognito-local's), and just before it.
  const expiry = (payload.exp as number) * 1000;
  expect(await verifier.verify(idToken, new Date(expiry + 60_000))).toBeUndefined();
  expect(await verifier.verify(idToken, new Date(expiry - 60_000))).toMatchObject({ email: 'dev@example.com' });
  expect(await verifier.verify('not a token')).toBeUndefined();
});

it('keeps the pool, the client and the people across a restart of the engine, their addresses verified', async () => {
  const before = { userPoolId: cognito.userPoolId, clientId: cognito.clientId };
  // Confirmed as a data folder of before issue 33 holds people: its address never marked verified.
  await client.send(new SignUpCommand({ ClientId: cognito.clientId, Username: 'old@example.com', Password: PASSWORD }));
  await client.send(new AdminConfirmSignUpCommand({ UserPoolId: cognito.userPoolId, Username: 'old@example.com' }));
  // Signed up but never confirmed: left as it is.
  await client.send(
    new SignUpCommand({ ClientId: cognito.clientId, Username: 'never@example.com', Password: PASSWORD }),
  );
  const verified = async (username: string) =>
    (
      await client.send(new AdminGetUserCommand({ UserPoolId: cognito.userPoolId, Username: username }))
    ).UserAttributes?.find((attribute) => attribute.Name === 'email_verified')?.Value;
  expect(await verified('old@example.com')).not.toBe('true');
  client.destroy();
  await cognito.stop();
  cognito = await startCognito({ dataDir, host: '127.0.0.1' });
  client = cognitoClient(cognito.endpoint, cognito.credentials);
  expect({ userPoolId: cognito.userPoolId, clientId: cognito.clientId }).toEqual(before);
  const { AuthenticationResult } = await signIn();
  const verifier = new CognitoIdTokenVerifier({ issuer: cognito.issuer, clientId: cognito.clientId });
  expect(await verifier.verify(AuthenticationResult?.IdToken as string)).toMatchObject({ email: 'dev@example.com' });
  expect(await verified('old@example.com')).toBe('true');
  expect(await verified('never@example.com')).not.toBe('true');
});

it('sends an invitation again (AdminCreateUser RESEND) to a person who never signed in, as Cognito does', async () => {
  await client.send(
    new AdminCreateUserCommand({
      UserPoolId: cognito.userPoolId,
      Username: 'resent@example.com',
      TemporaryPassword: 'First-temp-1',
      MessageAction: 'SUPPRESS',
    }),
  );
  await client.send(
    new AdminCreateUserCommand({
      UserPoolId: cognito.userPoolId,
      Username: 'resent@example.com',
      MessageAction: 'RESEND',
    }),
  );
  // A new temporary password went out: the first no longer opens the first-password challenge.
  const first = await client
    .send(
      new InitiateAuthCommand({
        ClientId: cognito.clientId,
        AuthFlow: 'USER_PASSWORD_AUTH',
        AuthParameters: { USERNAME: 'resent@example.com', PASSWORD: 'First-temp-1' },
      }),
    )
    .catch((error: Error) => error.name);
  expect(first).toBe('NotAuthorizedException');
  // Someone who has signed in keeps their password: Cognito's refusal.
  const confirmed = await client
    .send(new AdminCreateUserCommand({ UserPoolId: cognito.userPoolId, Username: EMAIL, MessageAction: 'RESEND' }))
    .catch((error: Error) => error.name);
  expect(confirmed).toBe('UnsupportedUserStateException');
});

it('is started by the local runtime (npm start), which prints where, and makes DEV_USER', async () => {
  const service = await startService({ env: { COGNITO: 'on', DEV_USER: 'Runtime@Example.com:Runtime-pass-9' } });
  try {
    const printed = /Cognito \(people's sign-in\) at (\S+): user pool (\S+), app client (\S+)/.exec(service.output());
    expect(printed).not.toBeNull();
    const [, endpoint, userPoolId, clientId] = printed as RegExpExecArray;
    expect(service.output()).toContain('DEV_USER Runtime@Example.com can sign in');
    const runtimeClient = cognitoClient(endpoint, service.engineCredentials ?? undefined);
    try {
      const { AuthenticationResult } = await runtimeClient.send(
        new InitiateAuthCommand({
          ClientId: clientId,
          AuthFlow: 'USER_PASSWORD_AUTH',
          AuthParameters: { USERNAME: 'Runtime@Example.com', PASSWORD: 'Runtime-pass-9' },
        }),
      );
      const verifier = new CognitoIdTokenVerifier({ issuer: `${endpoint}/${userPoolId}`, clientId });
      expect(await verifier.verify(AuthenticationResult?.IdToken as string)).toMatchObject({
        email: 'runtime@example.com',
      });
    } finally {
      runtimeClient.destroy();
    }
  } finally {
    await service.stop();
  }
});

it('lets a person in to the dashboard of their organization with their ID token, and nowhere else', async () => {
  const service = await startService({ env: { COGNITO: 'on', DEV_USER: 'owner@example.com:Owner-pass-9' } });
  const engines = service.dataDir ? engineReader(service.dataDir) : undefined;
  const printed = /Cognito \(people's sign-in\) at (\S+): user pool (\S+), app client (\S+)/.exec(service.output());
  const [, endpoint, userPoolId, clientId] = printed as RegExpExecArray;
  const people = cognitoClient(endpoint, service.engineCredentials ?? undefined);
  const idTokenOf = async (email: string, password: string) =>
    (
      await people.send(
        new InitiateAuthCommand({
          ClientId: clientId,
          AuthFlow: 'USER_PASSWORD_AUTH',
          AuthParameters: { USERNAME: email, PASSWORD: password },
        }),
      )
    ).AuthenticationResult?.IdToken as string;
  const signUp = async (email: string, password: string, verified = true) => {
    await people.send(new SignUpCommand({ ClientId: clientId, Username: email, Password: password }));
    await people.send(new AdminConfirmSignUpCommand({ UserPoolId: userPoolId, Username: email }));
    if (verified) await markAddressVerified(people, userPoolId, email);
  };
  try {
    // DEV_USER owns the first DEV_TOKEN organization (org A): they see what its token made.
    expect(service.output()).toContain('DEV_USER owner@example.com can sign in: owner of');
    const orgA = apiClient(service);
    const agent = await orgA<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Shared' } });
    const owner = apiClient(service, await idTokenOf('owner@example.com', 'Owner-pass-9'));
    const agents = await owner<{ data: { agentId: string }[] }>('GET', '/dashboard/agents');
    expect(agents.status).toBe(200);
    expect(agents.body.data.map((a) => a.agentId)).toContain(agent.body.agentId);
    const made = await owner<{ token: string; scopes: string[] }>('POST', '/dashboard/tokens', {
      body: { name: 'made by a person', scopes: ['analytics', 'knowledge-management'] },
    });
    expect(made.status).toBe(201);
    expect(made.body.scopes).toEqual(['analytics', 'knowledge-management']);
    expect((await owner('GET', '/dashboard/tokens')).status).toBe(200);
    // Never on the customer API.
    const customer = await owner('GET', '/api/v1/agents/list');
    expect(customer.status).toBe(401);
    expect(customer.body).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });

    // A member (not an owner) uses the dashboard but manages no tokens. Made as the members table of before issue 33
    // held people (e-mail → organization): their first sign-in moves the row to a membership of their sub.
    await signUp('member@example.com', 'Member-pass-9');
    const orgAId = /DEV_USER owner@example\.com can sign in: owner of (\S+)/.exec(service.output())?.[1];
    await engines?.dynamo.send(
      new PutCommand({
        TableName: 'members',
        Item: {
          email: 'member@example.com',
          organizationId: orgAId,
          role: 'member',
          createdAt: '2026-01-01T00:00:00Z',
        },
      }),
    );
    const member = apiClient(service, await idTokenOf('member@example.com', 'Member-pass-9'));
    expect((await member('GET', `/dashboard/agents/${agent.body.agentId}`)).status).toBe(200);
    const refused = await member('POST', '/dashboard/tokens', { body: { scopes: ['analytics'] } });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { code: 'FORBIDDEN', details: [{ rule: 'member.owner' }] } });
    expect((await member('GET', '/dashboard/tokens')).status).toBe(403);

    const moved = await engines?.dynamo.send(
      new GetCommand({ TableName: 'members', Key: { email: 'member@example.com' } }),
    );
    expect(moved?.Item).toBeUndefined();

    // A person of no organization is a person (their own routes), with nothing of any organization: 403.
    await signUp('stranger@example.com', 'Stranger-pass-9');
    const stranger = apiClient(service, await idTokenOf('stranger@example.com', 'Stranger-pass-9'));
    const nowhere = await stranger('GET', '/dashboard/agents');
    expect(nowhere.status).toBe(403);
    expect(nowhere.body).toMatchObject({ error: { code: 'NO_ORGANIZATION' } });
    // An address the pool has not verified proves nothing, and a token that only looks like one is none: 401.
    await signUp('unverified@example.com', 'Unverified-pass-9', false);
    const unverified = apiClient(service, await idTokenOf('unverified@example.com', 'Unverified-pass-9'));
    expect((await unverified('GET', '/dashboard/me')).status).toBe(401);
    const forged = apiClient(service, 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl');
    expect((await forged('GET', '/dashboard/agents')).status).toBe(401);
  } finally {
    people.destroy();
    engines?.close();
    await service.stop();
  }
});
