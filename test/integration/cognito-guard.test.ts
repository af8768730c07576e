/**
 * The guard in front of cognito-local (lib/local/cognito-guard.ts, started by lib/local/cognito.ts), against the real
 * engine: the admin and self-service calls refused without the data folder's signature, or with another; accepted
 * with it; the console's calls without one (a sign-in whose ID token the verifier takes, the JWKS); CORS for the
 * console's origin only, never `*`; one answer for an unknown person and a wrong password, and for ForgotPassword of
 * either; the forgot-password round trip with the code the engine "sent"; an invited person's temporary password and
 * challenge session checked (cognito-child.cjs); bodies capped; the data files owner-only. And, through `npm start`,
 * the code printed on the runtime's console and a sign-up (the handler's signed SignUp) passing the guard.
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdminCreateUserCommand,
  AdminGetUserCommand,
  type CognitoIdentityProviderClient,
  ConfirmForgotPasswordCommand,
  CreateUserPoolClientCommand,
  ForgotPasswordCommand,
  InitiateAuthCommand,
  ListUsersCommand,
  RespondToAuthChallengeCommand,
  UpdateUserAttributesCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import type { FinalizeRequestMiddleware, MetadataBearer } from '@smithy/types';
import { CognitoIdTokenVerifier } from '#adapters/auth/cognito-jwt';
import { cognitoClient, ensureDevUser, type LocalCognito, startCognito } from '../../lib/local/cognito';
import { cognitoOf } from '../helpers/people';
import { pollUntil } from '../helpers/poll';
import { client as apiClient, startService } from '../helpers/service';

const CONSOLE = 'http://127.0.0.1:4999';
const EVIL = 'http://evil.example';
const EMAIL = 'dev@example.com';
const PASSWORD = 'Correct-horse-7';

let dataDir: string;
let cognito: LocalCognito;
/** Signed with the data folder's credentials. */
let admin: CognitoIdentityProviderClient;
/** The console's: no credentials. */
let browser: CognitoIdentityProviderClient;
const codes: { email: string; code: string }[] = [];
/** Every Access-Control-Allow-Origin the guard answered, to check none is `*`. */
const allowOrigins: string[] = [];

async function start(): Promise<void> {
  cognito = await startCognito({
    dataDir,
    host: '127.0.0.1',
    allowedOrigins: () => [CONSOLE],
    onPasswordResetCode: (email, code) => codes.push({ email, code }),
  });
  admin = cognitoClient(cognito.endpoint, cognito.credentials);
  browser = cognitoClient(cognito.endpoint);
}

async function stop(): Promise<void> {
  admin?.destroy();
  browser?.destroy();
  await cognito?.stop();
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'aps-cognito-guard-'));
  await start();
  await ensureDevUser(cognito, `${EMAIL}:${PASSWORD}`);
});
afterAll(async () => {
  await stop();
  rmSync(dataDir, { recursive: true, force: true });
  expect(allowOrigins.filter((origin) => origin === '*')).toEqual([]);
});

interface Raw {
  status: number;
  body: string;
  headers: Headers;
  json(): Record<string, unknown>;
}

/** An unsigned POST of `action`, as any page or program may send it. */
async function call(action: string, input: unknown, headers: Record<string, string> = {}): Promise<Raw> {
  const response = await fetch(cognito.endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.1',
      'x-amz-target': `AWSCognitoIdentityProviderService.${action}`,
      ...headers,
    },
    body: JSON.stringify(input),
  });
  return seen(response);
}

async function seen(response: Response): Promise<Raw> {
  const allow = response.headers.get('access-control-allow-origin');
  if (allow !== null) allowOrigins.push(allow);
  const body = await response.text();
  return { status: response.status, body, headers: response.headers, json: () => JSON.parse(body) };
}

const signIn = (email: string, password: string) =>
  browser.send(
    new InitiateAuthCommand({
      ClientId: cognito.clientId,
      AuthFlow: 'USER_PASSWORD_AUTH',
      AuthParameters: { USERNAME: email, PASSWORD: password },
    }),
  );

const nameOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'accepted',
    (error: Error) => error.name,
  );

it('refuses the admin and self-service calls without a signature, and changes nothing', async () => {
  const { AuthenticationResult } = await signIn(EMAIL, PASSWORD);
  const accessToken = AuthenticationResult?.AccessToken as string;
  const pool = { UserPoolId: cognito.userPoolId };
  const calls: [string, unknown][] = [
    ['ListUsers', pool],
    ['AdminConfirmSignUp', { ...pool, Username: EMAIL }],
    [
      'AdminUpdateUserAttributes',
      { ...pool, Username: EMAIL, UserAttributes: [{ Name: 'email', Value: 'x@evil.example' }] },
    ],
    ['AdminSetUserPassword', { ...pool, Username: EMAIL, Password: 'Taken-over-1', Permanent: true }],
    ['CreateUserPoolClient', { ...pool, ClientName: 'mine' }],
    ['SignUp', { ClientId: cognito.clientId, Username: 'new@example.com', Password: 'New-pass-123' }],
    [
      'UpdateUserAttributes',
      { AccessToken: accessToken, UserAttributes: [{ Name: 'email', Value: 'x@evil.example' }] },
    ],
    ['GetUser', { AccessToken: accessToken }],
    ['ChangePassword', { AccessToken: accessToken, PreviousPassword: PASSWORD, ProposedPassword: 'Taken-over-1' }],
    ['DeleteUser', { AccessToken: accessToken }],
    ['AdminInitiateAuth', { ...pool, ClientId: cognito.clientId, AuthFlow: 'ADMIN_USER_PASSWORD_AUTH' }],
  ];
  for (const [action, input] of calls) {
    const answer = await call(action, input);
    expect({ action, status: answer.status, type: answer.json().__type }).toEqual({
      action,
      status: 403,
      type: 'com.amazon.coral.service#MissingAuthenticationTokenException',
    });
  }
  // The SDK sends UpdateUserAttributes unsigned (a person's own call in AWS): refused here all the same.
  expect(
    await nameOf(
      browser.send(
        new UpdateUserAttributesCommand({
          AccessToken: accessToken,
          UserAttributes: [{ Name: 'email', Value: 'x@e.x' }],
        }),
      ),
    ),
  ).toBe('MissingAuthenticationTokenException');
  // Nothing changed: the same e-mail, the same password, no second client, nobody new.
  const person = await admin.send(new AdminGetUserCommand({ ...pool, Username: EMAIL }));
  expect(person.UserAttributes?.find((a) => a.Name === 'email')?.Value).toBe(EMAIL);
  expect((await signIn(EMAIL, PASSWORD)).AuthenticationResult?.IdToken).toEqual(expect.any(String));
  const { Users } = await admin.send(new ListUsersCommand(pool));
  expect(Users?.map((user) => user.Attributes?.find((a) => a.Name === 'email')?.Value)).toEqual([EMAIL]);
  // No target, an unknown one, another service's: refused before anything is read.
  for (const target of [undefined, 'AWSCognitoIdentityProviderService.Nope', 'DynamoDB_20120810.ListUsers']) {
    const response = await seen(
      await fetch(cognito.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-amz-json-1.1', ...(target ? { 'x-amz-target': target } : {}) },
        body: '{}',
      }),
    );
    expect([response.status, response.json().__type]).toEqual([
      400,
      'com.amazon.coral.service#UnknownOperationException',
    ]);
  }
  // Nothing but the API and the pool's keys: cognito-local's OAuth pages and health are not reachable.
  for (const path of ['/oauth2/authorize?client_id=x', '/health', '/login']) {
    expect((await fetch(`${cognito.endpoint}${path}`)).status).toBe(404);
  }
});

it('refuses calls signed with other credentials or over another body, and accepts the data folder’s', async () => {
  const pool = { UserPoolId: cognito.userPoolId };
  const strangers = [
    { accessKeyId: 'LOCALAAAAAAAAAAAAAAAA', secretAccessKey: cognito.credentials.secretAccessKey },
    { accessKeyId: cognito.credentials.accessKeyId, secretAccessKey: 'x'.repeat(40) },
  ];
  const refused: string[] = [];
  for (const credentials of strangers) {
    const stranger = cognitoClient(cognito.endpoint, credentials);
    refused.push(await nameOf(stranger.send(new ListUsersCommand(pool))));
    stranger.destroy();
  }
  expect(refused).toEqual(['UnrecognizedClientException', 'InvalidSignatureException']);

  // A well-signed request whose body is changed after signing.
  const tampering = cognitoClient(cognito.endpoint, cognito.credentials);
  const tamper: FinalizeRequestMiddleware<object, MetadataBearer> = (next) => async (args) => {
    // Another pool, of the same length: the signed headers (Content-Length included) stay true.
    const request = args.request as { body: string | Uint8Array };
    const other = `${cognito.userPoolId.slice(0, -1)}${cognito.userPoolId.endsWith('x') ? 'y' : 'x'}`;
    request.body = Buffer.from(request.body).toString().replace(cognito.userPoolId, other);
    return next(args);
  };
  tampering.middlewareStack.addRelativeTo(tamper as Parameters<typeof tampering.middlewareStack.addRelativeTo>[0], {
    relation: 'after',
    toMiddleware: 'httpSigningMiddleware',
    name: 'tamper',
  });
  await expect(tampering.send(new ListUsersCommand(pool))).rejects.toMatchObject({
    name: 'InvalidSignatureException',
    message: expect.stringContaining('the body is not the one signed'),
  });
  tampering.destroy();

  const { Users } = await admin.send(new ListUsersCommand(pool));
  expect(Users?.length).toBe(1);
  const made = await admin.send(new CreateUserPoolClientCommand({ ...pool, ClientName: 'signed' }));
  expect(made.UserPoolClient?.ClientId).toEqual(expect.any(String));
});

it('signs a person in without credentials; the ID token passes the verifier with the issuer; the keys are public', async () => {
  const { AuthenticationResult } = await signIn(EMAIL, PASSWORD);
  expect(cognito.issuer).toBe(`${cognito.endpoint}/${cognito.userPoolId}`);
  const verifier = new CognitoIdTokenVerifier({ issuer: cognito.issuer, clientId: cognito.clientId });
  expect(await verifier.verify(AuthenticationResult?.IdToken as string)).toMatchObject({ email: EMAIL });
  const idToken = AuthenticationResult?.IdToken ?? '';
  const payload = JSON.parse(Buffer.from(idToken.split('.')[1], 'base64url').toString()) as { iss: string };
  expect(payload.iss).toBe(cognito.issuer);

  const jwks = await seen(await fetch(`${cognito.issuer}/.well-known/jwks.json`));
  expect(jwks.status).toBe(200);
  expect((jwks.json().keys as unknown[]).length).toBeGreaterThan(0);
  const discovery = await seen(await fetch(`${cognito.issuer}/.well-known/openid-configuration`));
  expect(discovery.json()).toMatchObject({
    issuer: cognito.issuer,
    jwks_uri: `${cognito.issuer}/.well-known/jwks.json`,
  });

  // A refresh, and the refresh token revoked (the console's sign-out).
  const refreshed = await browser.send(
    new InitiateAuthCommand({
      ClientId: cognito.clientId,
      AuthFlow: 'REFRESH_TOKEN_AUTH',
      AuthParameters: { REFRESH_TOKEN: AuthenticationResult?.RefreshToken as string },
    }),
  );
  expect(refreshed.AuthenticationResult?.IdToken).toEqual(expect.any(String));
  const revoked = await call('RevokeToken', { ClientId: cognito.clientId, Token: AuthenticationResult?.RefreshToken });
  expect(revoked.status).toBe(200);
});

it('answers CORS for the console’s origin only, never with *', async () => {
  const preflight = (origin: string, headers = 'content-type,x-amz-target,x-amz-user-agent') =>
    fetch(cognito.endpoint, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': headers },
    }).then(seen);
  const evil = await preflight(EVIL);
  expect(evil.headers.get('access-control-allow-origin')).toBeNull();
  const consoles = await preflight(CONSOLE);
  expect(consoles.status).toBe(204);
  expect(consoles.headers.get('access-control-allow-origin')).toBe(CONSOLE);
  expect(consoles.headers.get('access-control-allow-headers')).toBe(
    'content-type, x-amz-target, x-amz-user-agent, amz-sdk-invocation-id, amz-sdk-request',
  );
  // A header the SDK does not send from a browser (a signature) is not allowed.
  expect((await preflight(CONSOLE, 'authorization')).headers.get('access-control-allow-origin')).toBeNull();

  const signInBody = {
    ClientId: cognito.clientId,
    AuthFlow: 'USER_PASSWORD_AUTH',
    AuthParameters: { USERNAME: EMAIL, PASSWORD },
  };
  const fromEvil = await call('InitiateAuth', signInBody, { origin: EVIL });
  expect(fromEvil.status).toBe(403);
  expect(fromEvil.headers.get('access-control-allow-origin')).toBeNull();
  expect(fromEvil.body).not.toContain('IdToken');
  const fromConsole = await call('InitiateAuth', signInBody, { origin: CONSOLE });
  expect(fromConsole.status).toBe(200);
  expect(fromConsole.headers.get('access-control-allow-origin')).toBe(CONSOLE);
  expect(allowOrigins).not.toContain('*');
});

it('answers an unknown person and a wrong password alike, byte for byte', async () => {
  const attempt = (username: string, password: string) =>
    call('InitiateAuth', {
      ClientId: cognito.clientId,
      AuthFlow: 'USER_PASSWORD_AUTH',
      AuthParameters: { USERNAME: username, PASSWORD: password },
    });
  const unknown = await attempt('nobody@example.com', 'Whatever-pass-1');
  const wrong = await attempt(EMAIL, 'Wrong-password-1');
  expect([unknown.status, unknown.body]).toEqual([wrong.status, wrong.body]);
  expect([wrong.status, wrong.json()]).toEqual([
    400,
    { __type: 'NotAuthorizedException', message: 'Incorrect username or password.' },
  ]);
  expect(await nameOf(signIn('nobody@example.com', 'Whatever-pass-1'))).toBe('NotAuthorizedException');

  // A challenge answered for a known and an unknown person without a session handed out: the same refusal.
  const respond = (username: string) =>
    call('RespondToAuthChallenge', {
      ClientId: cognito.clientId,
      ChallengeName: 'NEW_PASSWORD_REQUIRED',
      Session: 'made-up',
      ChallengeResponses: { USERNAME: username, NEW_PASSWORD: 'Taken-over-1' },
    });
  const known = await respond(EMAIL);
  const stranger = await respond('nobody@example.com');
  expect([known.status, known.body]).toEqual([stranger.status, stranger.body]);
  expect(known.body).toBe(wrong.body);
  // The person's password is still theirs.
  expect((await signIn(EMAIL, PASSWORD)).AuthenticationResult).toBeDefined();
});

it('answers ForgotPassword of an unknown address as of a known one', async () => {
  const forgot = (username: string) => call('ForgotPassword', { ClientId: cognito.clientId, Username: username });
  const known = await forgot(EMAIL);
  const unknown = await forgot('dan@example.com');
  expect(known.status).toBe(200);
  expect([unknown.status, unknown.body]).toEqual([known.status, known.body]);
  expect(known.json()).toEqual({
    CodeDeliveryDetails: { AttributeName: 'email', DeliveryMedium: 'EMAIL', Destination: 'd***@e***' },
  });
  // A code went to the known person only.
  await pollUntil(
    async () => codes.length,
    (n) => n > 0,
    5000,
  );
  expect(codes.map((c) => c.email)).toEqual([EMAIL]);
  // Confirming for an unknown person is a wrong code, as for a known person with a wrong one.
  const confirm = (username: string) =>
    call('ConfirmForgotPassword', {
      ClientId: cognito.clientId,
      Username: username,
      ConfirmationCode: '000000x',
      Password: 'Another-pass-1',
    });
  const a = await confirm('dan@example.com');
  const b = await confirm(EMAIL);
  expect([a.status, a.body]).toEqual([b.status, b.body]);
  expect(a.json().__type).toBe('CodeMismatchException');
});

it('resets a password with the code the engine sent, checking the code, its attempts and the policy', async () => {
  const email = 'reset@example.com';
  await ensureDevUser(cognito, `${email}:Before-reset-1`);
  codes.length = 0;
  const sent = await browser.send(new ForgotPasswordCommand({ ClientId: cognito.clientId, Username: email }));
  expect(sent.CodeDeliveryDetails?.Destination).toBe('r***@e***');
  const delivered = await pollUntil(
    async () => codes.find((c) => c.email === email),
    (found) => found !== undefined,
    5000,
  );
  expect(delivered?.code).toMatch(/^\d{6}$/);
  const code = delivered?.code as string;
  const confirm = (confirmationCode: string | undefined, password: string) =>
    nameOf(
      browser.send(
        new ConfirmForgotPasswordCommand({
          ClientId: cognito.clientId,
          Username: email,
          ConfirmationCode: confirmationCode,
          Password: password,
        }),
      ),
    );
  const wrongCode = code === '000000' ? '000001' : '000000';
  expect(await confirm(wrongCode, 'After-reset-1')).toBe('CodeMismatchException');
  expect(await confirm(code, 'weakpass')).toBe('InvalidPasswordException');
  // No code at all is not the "no code" of a person who asked none.
  const empty = await call('ConfirmForgotPassword', {
    ClientId: cognito.clientId,
    Username: EMAIL,
    Password: 'Any-pass-12',
  });
  expect(empty.json().__type).toBe('InvalidParameterException');
  expect(await confirm(code, 'After-reset-1')).toBe('accepted');
  expect(await nameOf(signIn(email, 'Before-reset-1'))).toBe('NotAuthorizedException');
  expect((await signIn(email, 'After-reset-1')).AuthenticationResult?.IdToken).toEqual(expect.any(String));
  // The code is spent.
  expect(await confirm(code, 'Again-reset-1')).toBe('CodeMismatchException');

  // Five wrong codes, then no more tries until a new code is asked for.
  await browser.send(new ForgotPasswordCommand({ ClientId: cognito.clientId, Username: email }));
  for (let i = 0; i < 5; i += 1) expect(await confirm(`99999${i}x`, 'Brute-force-1')).toBe('CodeMismatchException');
  expect(await confirm('999999x', 'Brute-force-1')).toBe('LimitExceededException');
});

it('asks an invited person for their temporary password, and takes a challenge only with its own session', async () => {
  const email = 'invited@example.com';
  await admin.send(
    new AdminCreateUserCommand({
      UserPoolId: cognito.userPoolId,
      Username: email,
      TemporaryPassword: 'Temporary-pass-1',
      UserAttributes: [{ Name: 'email', Value: email }],
      MessageAction: 'SUPPRESS',
    }),
  );
  // cognito-local hands the challenge to anyone who names the person; not here.
  expect(await nameOf(signIn(email, 'Guessed-pass-1'))).toBe('NotAuthorizedException');
  const challenge = await signIn(email, 'Temporary-pass-1');
  expect(challenge.ChallengeName).toBe('NEW_PASSWORD_REQUIRED');
  const respond = (session: string | undefined, username = email) =>
    browser.send(
      new RespondToAuthChallengeCommand({
        ClientId: cognito.clientId,
        ChallengeName: 'NEW_PASSWORD_REQUIRED',
        Session: session,
        ChallengeResponses: { USERNAME: username, NEW_PASSWORD: 'Chosen-pass-1' },
      }),
    );
  expect(await nameOf(respond('not-the-session'))).toBe('NotAuthorizedException');
  // The invited person's session does not set another person's password.
  expect(await nameOf(respond(challenge.Session, EMAIL))).toBe('NotAuthorizedException');
  const answered = await respond(challenge.Session);
  expect(answered.AuthenticationResult?.IdToken).toEqual(expect.any(String));
  // Once.
  expect(await nameOf(respond(challenge.Session))).toBe('NotAuthorizedException');
  expect((await signIn(email, 'Chosen-pass-1')).AuthenticationResult).toBeDefined();
});

it('reads at most 64 KiB of a request, whatever its Content-Length says', async () => {
  const big = JSON.stringify({ ClientId: cognito.clientId, Padding: 'x'.repeat(70 * 1024) });
  const declared = await call('InitiateAuth', JSON.parse(big));
  expect(declared.status).toBe(413);
  // Chunked, with no Content-Length: counted as it arrives.
  const url = new URL(cognito.endpoint);
  const status = await new Promise<number>((resolve, reject) => {
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.1',
          'x-amz-target': 'AWSCognitoIdentityProviderService.InitiateAuth',
          'transfer-encoding': 'chunked',
        },
      },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on('error', reject);
    for (let i = 0; i < 70; i += 1) request.write('x'.repeat(1024));
    request.end();
  });
  expect(status).toBe(413);
  const notJson = await seen(
    await fetch(cognito.endpoint, {
      method: 'POST',
      headers: { 'x-amz-target': 'AWSCognitoIdentityProviderService.InitiateAuth' },
      body: '[1,2',
    }),
  );
  expect([notJson.status, notJson.json().__type]).toEqual([400, 'com.amazon.coral.service#SerializationException']);
});

/** Every folder and file under `path`, with its permission bits. */
function modes(path: string): { path: string; mode: string; folder: boolean }[] {
  const entry = statSync(path);
  const here = { path, mode: (entry.mode & 0o777).toString(8), folder: entry.isDirectory() };
  if (!entry.isDirectory()) return [here];
  return [here, ...readdirSync(path).flatMap((name) => modes(join(path, name)))];
}

it('keeps its data owner-only: folders 0700, files 0600, an open one closed at the next start', async () => {
  const folder = join(dataDir, 'cognito');
  const before = modes(folder);
  expect(before.some((entry) => entry.path.endsWith('.json') && entry.path.includes(join('.cognito', 'db')))).toBe(
    true,
  );
  for (const entry of before) expect(entry.mode).toBe(entry.folder ? '700' : '600');
  await stop();
  chmodSync(join(folder, '.cognito'), 0o755);
  chmodSync(join(folder, 'platform.json'), 0o644);
  await start();
  for (const entry of modes(folder)) expect(entry.mode).toBe(entry.folder ? '700' : '600');
  // Restarted: the same issuer's tokens (the guard's address) for the same person.
  expect((await signIn(EMAIL, PASSWORD)).AuthenticationResult?.IdToken).toEqual(expect.any(String));
});

it('prints a reset code on the runtime’s console (npm start); a sign-up through the API passes the guard', async () => {
  const service = await startService({ env: { COGNITO: 'on' } });
  const people = cognitoOf(service);
  const visitor = cognitoClient(people.endpoint);
  try {
    const email = 'bob@example.com';
    const signUp = await apiClient(service, null)('POST', '/dashboard/signup', {
      body: { email, password: 'Bobs-pass-1', organizationName: 'Bob Co' },
    });
    expect(signUp.status).toBe(201);
    await visitor.send(new ForgotPasswordCommand({ ClientId: people.clientId, Username: email }));
    const code = await pollUntil(
      async () => /Password reset code for bob@example\.com: (\d{6})/.exec(service.output())?.[1],
      (found) => found !== undefined,
      10_000,
    );
    expect(code).toMatch(/^\d{6}$/);
    await visitor.send(
      new ConfirmForgotPasswordCommand({
        ClientId: people.clientId,
        Username: email,
        ConfirmationCode: code,
        Password: 'Bobs-new-pass-2',
      }),
    );
    const { AuthenticationResult } = await visitor.send(
      new InitiateAuthCommand({
        ClientId: people.clientId,
        AuthFlow: 'USER_PASSWORD_AUTH',
        AuthParameters: { USERNAME: email, PASSWORD: 'Bobs-new-pass-2' },
      }),
    );
    // Issued by the guard's address, as the runtime printed it and gave it to the handlers.
    const verifier = new CognitoIdTokenVerifier({
      issuer: `${people.endpoint}/${people.userPoolId}`,
      clientId: people.clientId,
    });
    expect(await verifier.verify(AuthenticationResult?.IdToken as string)).toMatchObject({ email });
    // Its console's origin may call it; another may not.
    const preflight = (origin: string) =>
      fetch(people.endpoint, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-amz-target' },
      });
    expect((await preflight(service.baseUrl)).headers.get('access-control-allow-origin')).toBe(service.baseUrl);
    expect((await preflight(EVIL)).headers.get('access-control-allow-origin')).toBeNull();
  } finally {
    visitor.destroy();
    people.client.destroy();
    await service.stop();
  }
});
