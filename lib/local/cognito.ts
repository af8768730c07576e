/**
 * People's accounts locally: `cognito-local` (npm, ../shared/engines.md) in a process of its own, its data under
 * DATA_DIR/cognito (owner-only), with the platform's user pool and app client (no secret, password sign-in, refresh
 * tokens) created at its first start and kept in DATA_DIR/cognito/platform.json, so a restart finds the same pool and
 * people.
 *
 * cognito-local answers its whole API to anyone, so it listens on a loopback port of its own and the endpoint given to
 * everyone else is its guard's (cognito-guard.ts): the console's calls without credentials, everything else signed
 * with the data folder's credentials. cognito-local writes its issuer from its config (`TokenConfig.IssuerDomain`,
 * DATA_DIR/cognito/.cognito/config.json), which is set here to the guard's address before it starts: the guard's port
 * is chosen first (a free one, or COGNITO_PORT). It signs with a key shipped in the package, so a local token proves
 * nothing to anyone who has the package: the local runtime is for one developer's machine (docs/people.md).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import {
  AdminConfirmSignUpCommand,
  AdminUpdateUserAttributesCommand,
  CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  CreateUserPoolCommand,
  ListUsersCommand,
  SignUpCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { signEveryCall } from '#composition/clients/cognito';
import { startCognitoGuard } from './cognito-guard';
import { LOCAL_REGION, type LocalCredentials, loadEngineCredentials, makePrivate } from './engine-credentials';

export interface LocalCognito {
  /** The endpoint SDK clients and the console sign in against: the guard's. */
  readonly endpoint: string;
  readonly userPoolId: string;
  readonly clientId: string;
  /** The `iss` of its tokens; its keys are at `<issuer>/.well-known/jwks.json`. */
  readonly issuer: string;
  /** The data folder's credentials, which every call but the console's must be signed with (`cognitoClient`). */
  readonly credentials: LocalCredentials;
  stop(): Promise<void>;
}

export interface StartCognitoOptions {
  readonly dataDir: string;
  /** Where the guard listens (cognito-local itself always on 127.0.0.1). */
  readonly host: string;
  /** The guard's port (COGNITO_PORT); default a free one. */
  readonly port?: number;
  /**
   * The origins whose pages may call it (the console's: the runtime's own address), or a function asked at each
   * request, for a runtime that knows its port only once it listens. Default none. Never `*`.
   */
  readonly allowedOrigins?: readonly string[] | (() => readonly string[]);
  /** A ForgotPassword's code, which cognito-local "sends" by printing it (the runtime prints it on its console). */
  readonly onPasswordResetCode?: (email: string, code: string) => void;
}

interface PlatformPool {
  readonly userPoolId: string;
  readonly clientId: string;
}

/** cognito-local's start script, run so that it ends with this process (cognito-child.cjs). */
const ENTRY = resolve(__dirname, 'cognito-child.cjs');
const READY_TIMEOUT_MS = 30_000;
/** cognito-local itself answers on loopback only: only the guard talks to it. */
const ENGINE_HOST = '127.0.0.1';

function freePort(host: string): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen(0, host, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });
}

/** Resolves once `endpoint` answers HTTP at all. */
async function answering(endpoint: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`cognito-local exited (${child.exitCode}):\n${output()}`);
    try {
      await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`cognito-local did not answer within 30 s:\n${output()}`);
      await new Promise((wait) => setTimeout(wait, 100));
    }
  }
}

/**
 * A client of the local engine. With the data folder's credentials it signs every call (the SDK leaves SignUp and
 * the other public calls unsigned, which the guard refuses); without, it makes the console's calls only (InitiateAuth,
 * RespondToAuthChallenge, ForgotPassword, ConfirmForgotPassword, RevokeToken), and any other fails before it is sent.
 */
export function cognitoClient(endpoint: string, credentials?: LocalCredentials): CognitoIdentityProviderClient {
  if (!credentials) {
    return new CognitoIdentityProviderClient({
      endpoint,
      region: LOCAL_REGION,
      credentials: () =>
        Promise.reject(new Error('this call needs the engine credentials: cognitoClient(endpoint, credentials)')),
    });
  }
  // A copy: the SDK writes its own bookkeeping into the credentials object it is given.
  return new CognitoIdentityProviderClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: { ...credentials },
    ...signEveryCall,
  });
}

/** DATA_DIR/cognito and what is in it, owner-only (a folder made before cognito-local's files were). */
function keepPrivate(path: string): void {
  const entry = lstatSync(path);
  if (entry.isSymbolicLink()) return;
  if (entry.isDirectory()) {
    makePrivate(path, 0o700);
    for (const name of readdirSync(path)) keepPrivate(join(path, name));
  } else if (entry.isFile()) {
    makePrivate(path, 0o600);
  }
}

/** cognito-local's config (DATA_DIR/cognito/.cognito/config.json), with the tokens' issuer at `issuerDomain`. */
function writeIssuer(folder: string, issuerDomain: string): void {
  const directory = join(folder, '.cognito');
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const file = join(directory, 'config.json');
  let config: Record<string, unknown> = {};
  if (existsSync(file)) {
    try {
      config = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch {
      config = {};
    }
  }
  const tokenConfig = typeof config.TokenConfig === 'object' && config.TokenConfig !== null ? config.TokenConfig : {};
  config.TokenConfig = { ...tokenConfig, IssuerDomain: issuerDomain };
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
}

/** What the child process sends: a ForgotPassword's code (cognito-child.cjs). */
function passwordResetCode(message: unknown): { email: string; code: string } | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const { kind, email, code } = message as Record<string, unknown>;
  return kind === 'password-reset-code' && typeof email === 'string' && typeof code === 'string'
    ? { email, code }
    : undefined;
}

export async function startCognito(options: StartCognitoOptions): Promise<LocalCognito> {
  const folder = join(options.dataDir, 'cognito');
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  keepPrivate(folder);
  const credentials = loadEngineCredentials(options.dataDir);
  const origins = options.allowedOrigins;
  const enginePort = await freePort(ENGINE_HOST);
  const guard = await startCognitoGuard({
    upstream: { host: ENGINE_HOST, port: enginePort },
    credentials,
    region: LOCAL_REGION,
    host: options.host,
    port: options.port ?? 0,
    allowedOrigins: typeof origins === 'function' ? origins : () => origins ?? [],
  });
  const endpoint = guard.url;
  try {
    writeIssuer(folder, endpoint);
  } catch (error) {
    await guard.close();
    throw error;
  }
  // Not CODE (cognito-local would make it every code and temporary password) nor DEBUG (it would log every stored
  // person, passwords included).
  const { CODE: _code, DEBUG: _debug, ...environment } = process.env;
  const child = spawn(process.execPath, [ENTRY], {
    cwd: folder,
    env: { ...environment, PORT: String(enginePort), HOST: ENGINE_HOST },
    stdio: ['pipe', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  // Its log (every request, and the messages it "sends": codes, temporary passwords) goes to
  // DATA_DIR/cognito/cognito.log; the last of it is kept for an error at start.
  const log = createWriteStream(join(folder, 'cognito.log'), { flags: 'a', mode: 0o600 });
  child.once('exit', () => log.end());
  const collect = (chunk: Buffer) => {
    log.write(chunk);
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  child.on('message', (message: unknown) => {
    const delivered = passwordResetCode(message);
    if (delivered) options.onPasswordResetCode?.(delivered.email, delivered.code);
  });
  const stopEngine = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once('exit', () => done());
      child.kill('SIGTERM');
    });
  const stop = async () => {
    await stopEngine();
    await guard.close();
  };
  try {
    await answering(`http://${ENGINE_HOST}:${enginePort}`, child, () => output);
    const pool = await platformPool(folder, endpoint, credentials);
    await verifyConfirmedAddresses(endpoint, credentials, pool.userPoolId);
    return { endpoint, ...pool, issuer: `${endpoint}/${pool.userPoolId}`, credentials, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The origins of the console of a runtime at `host:port` (and `localhost` for a loopback address, which a browser may
 * be given instead), and `listed` (CORS_ALLOWED_ORIGINS: `npm run dev:web`'s page, for one): what may call the guard.
 */
export function consoleOrigins(host: string, port: number, listed: readonly string[] = []): string[] {
  const named = host.includes(':') ? `[${host}]` : host;
  const loopback = host === '127.0.0.1' || host === 'localhost' || host === '::1';
  const hosts = loopback ? [named, '127.0.0.1', 'localhost'] : [named];
  return [...new Set([...hosts.map((name) => `http://${name}:${port}`), ...listed])];
}

/**
 * People confirmed in a data folder of before addresses had to be verified (issue 33): locally a sign-up is confirmed
 * at once, its address taken as proven, and such a person would now be refused (core/auth/people.ts). Each start marks
 * the addresses of confirmed people verified; nobody else is touched. Their address cannot change: the guard lets no
 * person update their own attributes.
 */
async function verifyConfirmedAddresses(
  endpoint: string,
  credentials: LocalCredentials,
  userPoolId: string,
): Promise<void> {
  const client = cognitoClient(endpoint, credentials);
  try {
    let PaginationToken: string | undefined;
    do {
      const page = await client.send(new ListUsersCommand({ UserPoolId: userPoolId, PaginationToken }));
      for (const user of page.Users ?? []) {
        const attribute = (name: string) => user.Attributes?.find((a) => a.Name === name)?.Value;
        const email = attribute('email');
        if (user.UserStatus !== 'CONFIRMED' || !email || attribute('email_verified') === 'true') continue;
        await markAddressVerified(client, userPoolId, user.Username as string, email);
      }
      PaginationToken = page.PaginationToken;
    } while (PaginationToken);
  } finally {
    client.destroy();
  }
}

/**
 * Marks a person's address verified with an admin call (a signed client), as the code Cognito e-mails at a sign-up would
 * prove it. cognito-local verifies an address only given with it (Cognito takes either).
 */
export async function markAddressVerified(
  client: CognitoIdentityProviderClient,
  userPoolId: string,
  username: string,
  email: string = username,
): Promise<void> {
  await client.send(
    new AdminUpdateUserAttributesCommand({
      UserPoolId: userPoolId,
      Username: username,
      UserAttributes: [
        { Name: 'email', Value: email },
        { Name: 'email_verified', Value: 'true' },
      ],
    }),
  );
}

/** The platform's pool and client: made at the first start, read from platform.json after. */
async function platformPool(folder: string, endpoint: string, credentials: LocalCredentials): Promise<PlatformPool> {
  const file = join(folder, 'platform.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as PlatformPool;
  const client = cognitoClient(endpoint, credentials);
  try {
    const { UserPool } = await client.send(
      new CreateUserPoolCommand({
        PoolName: 'agent-platform',
        UsernameAttributes: ['email'],
        AutoVerifiedAttributes: ['email'],
      }),
    );
    const userPoolId = UserPool?.Id as string;
    const { UserPoolClient } = await client.send(
      new CreateUserPoolClientCommand({
        UserPoolId: userPoolId,
        ClientName: 'console',
        GenerateSecret: false,
        ExplicitAuthFlows: ['ALLOW_USER_PASSWORD_AUTH', 'ALLOW_USER_SRP_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'],
      }),
    );
    const pool = { userPoolId, clientId: UserPoolClient?.ClientId as string };
    writeFileSync(file, JSON.stringify(pool), { mode: 0o600 });
    return pool;
  } finally {
    client.destroy();
  }
}

/**
 * DEV_USER=email:password: that person exists in the pool, confirmed, so a developer signs in at once. An existing
 * person is left as they are (their password included).
 */
export async function ensureDevUser(cognito: LocalCognito, devUser: string): Promise<string> {
  const at = devUser.indexOf(':');
  if (at < 1 || at === devUser.length - 1) throw new Error('DEV_USER must be email:password');
  const email = devUser.slice(0, at);
  const password = devUser.slice(at + 1);
  const client = cognitoClient(cognito.endpoint, cognito.credentials);
  try {
    let made = true;
    try {
      await client.send(new SignUpCommand({ ClientId: cognito.clientId, Username: email, Password: password }));
    } catch (error) {
      if ((error as Error).name !== 'UsernameExistsException') throw error;
      made = false;
    }
    if (made) await client.send(new AdminConfirmSignUpCommand({ UserPoolId: cognito.userPoolId, Username: email }));
    // A person is refused until their address is verified (core/auth/people.ts); no e-mail proves it locally. Also for
    // a DEV_USER made before that rule.
    await markAddressVerified(client, cognito.userPoolId, email);
    return email;
  } finally {
    client.destroy();
  }
}
