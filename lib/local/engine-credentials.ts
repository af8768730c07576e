/**
 * The credentials every local engine asks for: random, made at the first start of a data folder
 * (DATA_DIR/engine-credentials.json, mode 0600), and the SigV4 check in front of dynalite and fauxqs, which check no
 * signature themselves (their refusals in the JSON error shape of DynamoDB and SQS).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { type SigV4ErrorCode, verifySigV4 } from './sigv4-verifier';

/** The access key pair every local engine checks requests against. */
export const LOCAL_REGION = 'us-east-1';

export interface LocalCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** The file under DATA_DIR that keeps the engines' credentials of that data folder (mode 0600). */
export const CREDENTIALS_FILE = 'engine-credentials.json';

/**
 * Fixes a file or folder that group or others may read to owner-only: the engines' data and credentials are this
 * user's alone. Says so when it changes anything.
 */
export function makePrivate(path: string, mode: 0o600 | 0o700): void {
  const current = statSync(path).mode & 0o777;
  if ((current & 0o077) === 0) return;
  chmodSync(path, mode);
  console.warn(`${path} was open to other users (mode ${current.toString(8)}): made it ${mode.toString(8)}`);
}

const ACCESS_KEY_ID = /^LOCAL[0-9A-Z]{16}$/;

const SECRET_ACCESS_KEY = /^[A-Za-z0-9_-]{40}$/;

/**
 * The credentials of a data folder: made at its first start (random, never the same for two folders), then read
 * from DATA_DIR/engine-credentials.json. Pre-signed URLs issued before a restart keep working after it.
 */
export function loadEngineCredentials(dataDir: string): LocalCredentials {
  const path = join(dataDir, CREDENTIALS_FILE);
  const made: LocalCredentials = {
    accessKeyId: `LOCAL${randomBytes(8).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString('base64url'),
  };
  try {
    // `wx`: of two runtimes starting on one new folder, the second reads what the first wrote.
    writeFileSync(path, `${JSON.stringify(made, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    return made;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  makePrivate(path, 0o600);
  let stored: Partial<LocalCredentials> = {};
  try {
    stored = JSON.parse(readFileSync(path, 'utf8')) as Partial<LocalCredentials>;
  } catch {
    // reported below
  }
  if (!ACCESS_KEY_ID.test(stored.accessKeyId ?? '') || !SECRET_ACCESS_KEY.test(stored.secretAccessKey ?? '')) {
    throw new Error(`${path} does not hold the engines' credentials: remove it, and the next start makes new ones`);
  }
  return { accessKeyId: stored.accessKeyId as string, secretAccessKey: stored.secretAccessKey as string };
}

/** The JSON error AWS's JSON services (DynamoDB, SQS) answer a request they cannot authenticate with. */
const JSON_AUTH_ERRORS: Record<SigV4ErrorCode, string> = {
  InvalidAccessKeyId: 'UnrecognizedClientException',
  SignatureDoesNotMatch: 'InvalidSignatureException',
  RequestTimeTooSkewed: 'InvalidSignatureException',
  AccessDenied: 'MissingAuthenticationTokenException',
  AuthorizationQueryParametersError: 'IncompleteSignatureException',
  AuthorizationHeaderMalformed: 'IncompleteSignatureException',
  MissingSecurityHeader: 'IncompleteSignatureException',
  InvalidArgument: 'IncompleteSignatureException',
};

/**
 * Checks a DynamoDB or SQS request's SigV4 signature against the data folder's credentials: undefined when it holds,
 * else the JSON body those services answer (with 400). The body is not hashed: the signature binds the
 * x-amz-content-sha256 the SDK sends, the same limit as the S3 proxy's (see s3-signature-proxy.ts).
 */
function refusal(req: IncomingMessage, credentials: LocalCredentials, service: 'dynamodb' | 'sqs'): string | undefined {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const verdict = verifySigV4(
    {
      method: req.method ?? 'GET',
      path: q < 0 ? url : url.slice(0, q),
      query: q < 0 ? '' : url.slice(q + 1),
      headers: req.headersDistinct,
    },
    { credentials, region: LOCAL_REGION, service },
  );
  if (verdict.ok) return undefined;
  return JSON.stringify({
    __type: `com.amazon.coral.service#${JSON_AUTH_ERRORS[verdict.code]}`,
    message: verdict.message,
  });
}

const AWS_JSON = 'application/x-amz-json-1.0';

/**
 * Puts the signature check in front of an engine's own request handlers (dynalite's; fauxqs's Fastify, whose routes
 * under /_fauxqs list queued messages): a request that fails it never reaches the engine.
 */
export function guardServer(server: Server, credentials: LocalCredentials, service: 'dynamodb' | 'sqs'): void {
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  if (handlers.length === 0) throw new Error(`the ${service} engine has no request handler to guard`);
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const body = refusal(req, credentials, service);
    if (body === undefined) {
      for (const handler of handlers) handler.call(server, req, res);
      return;
    }
    req.resume();
    res.writeHead(400, { 'content-type': AWS_JSON, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}
