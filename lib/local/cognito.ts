/**
 * People's accounts locally: `cognito-local` (npm, ../shared/engines.md) in a process of its own, its data under
 * DATA_DIR/cognito, with the platform's user pool and app client (no secret, password sign-in, refresh tokens)
 * created at its first start and kept in DATA_DIR/cognito/platform.json, so a restart finds the same pool and people.
 *
 * cognito-local reads its port from PORT and writes it into the tokens' issuer, so the port is chosen here (a free
 * one, or COGNITO_PORT) and given to it. It signs with a key shipped in the package, so a local token proves nothing
 * to anyone who has the package: the local runtime is for one developer's machine (docs/people.md).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import {
  AdminConfirmSignUpCommand,
  CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  CreateUserPoolCommand,
  SignUpCommand,
} from '@aws-sdk/client-cognito-identity-provider';

export interface LocalCognito {
  /** The endpoint SDK clients and the console sign in against. */
  readonly endpoint: string;
  readonly userPoolId: string;
  readonly clientId: string;
  /** The `iss` of its tokens; its keys are at `<issuer>/.well-known/jwks.json`. */
  readonly issuer: string;
  stop(): Promise<void>;
}

interface PlatformPool {
  readonly userPoolId: string;
  readonly clientId: string;
}

/** cognito-local's start script, run so that it ends with this process (cognito-child.cjs). */
const ENTRY = resolve(__dirname, 'cognito-child.cjs');
const READY_TIMEOUT_MS = 30_000;

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

/** Resolves once `endpoint` answers HTTP at all (cognito-local answers its root with 404). */
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

export function cognitoClient(endpoint: string): CognitoIdentityProviderClient {
  // cognito-local checks no signature; the SDK still wants credentials to sign with.
  return new CognitoIdentityProviderClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

export async function startCognito(options: { dataDir: string; host: string; port?: number }): Promise<LocalCognito> {
  const folder = join(options.dataDir, 'cognito');
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const port = options.port ?? (await freePort(options.host));
  const child = spawn(process.execPath, [ENTRY], {
    cwd: folder,
    env: { ...process.env, PORT: String(port), HOST: options.host },
    stdio: ['pipe', 'pipe', 'pipe'],
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
  const stop = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once('exit', () => done());
      child.kill('SIGTERM');
    });
  const endpoint = `http://${options.host}:${port}`;
  try {
    await answering(endpoint, child, () => output);
    const pool = await platformPool(folder, endpoint);
    return { endpoint, ...pool, issuer: `${endpoint}/${pool.userPoolId}`, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The platform's pool and client: made at the first start, read from platform.json after. */
async function platformPool(folder: string, endpoint: string): Promise<PlatformPool> {
  const file = join(folder, 'platform.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as PlatformPool;
  const client = cognitoClient(endpoint);
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
  const client = cognitoClient(cognito.endpoint);
  try {
    try {
      await client.send(new SignUpCommand({ ClientId: cognito.clientId, Username: email, Password: password }));
    } catch (error) {
      if ((error as Error).name !== 'UsernameExistsException') throw error;
      return email;
    }
    await client.send(new AdminConfirmSignUpCommand({ UserPoolId: cognito.userPoolId, Username: email }));
    return email;
  } finally {
    client.destroy();
  }
}
