/**
 * The guard in front of cognito-local, as the SigV4 checks in front of dynalite, fauxqs and s3rver
 * (engine-credentials.ts, s3-signature-proxy.ts): cognito-local answers its whole API to anyone (ListUsers, every
 * Admin* call, CreateUserPoolClient, UpdateUserAttributes of one's own e-mail) and CORS from any origin, so it
 * listens on a loopback port of its own and this guard is the endpoint everyone else is given.
 *
 * - Without credentials, only what a browser (the console, web/src/auth.tsx) calls: InitiateAuth (password and
 *   refresh token), RespondToAuthChallenge (NEW_PASSWORD_REQUIRED), ForgotPassword, ConfirmForgotPassword,
 *   RevokeToken; and GET of a pool's `/.well-known/jwks.json` and `/.well-known/openid-configuration`. Every other
 *   action needs a SigV4 signature (service `cognito-idp`, LOCAL_REGION) with the data folder's credentials, its
 *   body hashed against the signed `x-amz-content-sha256`. An unknown target, or none, is refused.
 * - As a pool with "prevent user existence errors" on: an unknown person and a wrong password get one answer
 *   (NotAuthorizedException "Incorrect username or password."), ForgotPassword of an unknown person a success with a
 *   masked destination, ConfirmForgotPassword of one a CodeMismatchException; and, as Cognito, the pool's password
 *   policy on a new password (cognito-local checks none), a few wrong codes per code and a few codes per hour.
 * - CORS for the console's origins only (asked at each request: the runtime knows its port once it listens), with the
 *   headers the SDK sends from a browser; never `*`.
 * - Bodies: at most 64 KiB read, counted as they arrive; answers of the public actions at most 1 MiB.
 *
 * What cognito-local gets wrong inside (a challenge session it never checks, an invited person's temporary password
 * it never compares) is fixed in its process: cognito-child.cjs.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  Agent,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type RequestOptions,
  type ServerResponse,
} from 'node:http';
import { PASSWORD_RULES } from '#handlers/http/dashboard/schemas';
import type { LocalCredentials } from './engine-credentials';
import { type GuardServer, listenGuard } from './guard-server';
import { type SigV4ErrorCode, verifySigV4 } from './sigv4-verifier';

export interface CognitoGuardOptions {
  /** Where cognito-local answers (a loopback port). */
  readonly upstream: { readonly host: string; readonly port: number };
  readonly credentials: LocalCredentials;
  /** The region requests are signed for (LOCAL_REGION). */
  readonly region: string;
  /** Listen host, default 127.0.0.1. */
  readonly host?: string;
  /** Listen port, default 0 (a free one). */
  readonly port?: number;
  /** The origins whose pages may call it (the console's), asked at each request. Default: none. */
  readonly allowedOrigins?: () => readonly string[];
  /** Clock, for tests. */
  readonly now?: () => Date;
}

/** `url`: the endpoint SDK clients, the console and the tokens' issuer name. */
export type CognitoGuard = GuardServer;

/** Most bytes of a request body the guard reads. */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** Most bytes of a public action's answer the guard reads (a sign-in's tokens are a few KB). */
const MAX_ANSWER_BYTES = 1024 * 1024;

const TARGET_PREFIX = 'AWSCognitoIdentityProviderService.';

/** The actions cognito-local 5.3.0 answers (its lib/targets/targets.js). Anything else is refused here. */
const ENGINE_ACTIONS: ReadonlySet<string> = new Set([
  'AddCustomAttributes',
  'AssociateSoftwareToken',
  'AdminAddUserToGroup',
  'AdminConfirmSignUp',
  'AdminCreateUser',
  'AdminDeleteUser',
  'AdminDeleteUserAttributes',
  'AdminDisableUser',
  'AdminEnableUser',
  'AdminGetUser',
  'AdminInitiateAuth',
  'AdminListGroupsForUser',
  'AdminRemoveUserFromGroup',
  'AdminSetUserPassword',
  'AdminUpdateUserAttributes',
  'ChangePassword',
  'ConfirmForgotPassword',
  'ConfirmSignUp',
  'CreateGroup',
  'CreateUserPool',
  'CreateUserPoolClient',
  'DeleteGroup',
  'DeleteUser',
  'DeleteUserAttributes',
  'DeleteUserPool',
  'DeleteUserPoolClient',
  'DescribeUserPool',
  'DescribeUserPoolClient',
  'ForgotPassword',
  'GetGroup',
  'GetUser',
  'GetUserAttributeVerificationCode',
  'GetUserPoolMfaConfig',
  'InitiateAuth',
  'ListGroups',
  'ListUserPoolClients',
  'ListUserPools',
  'ListUsers',
  'ListUsersInGroup',
  'RespondToAuthChallenge',
  'RevokeToken',
  'SetUserMFAPreference',
  'SetUserPoolMfaConfig',
  'SignUp',
  'UpdateGroup',
  'UpdateUserAttributes',
  'UpdateUserPool',
  'UpdateUserPoolClient',
  'VerifySoftwareToken',
  'VerifyUserAttribute',
]);

/** What a browser may call without credentials: what the console does (web/src/auth.tsx). */
export const PUBLIC_ACTIONS: ReadonlySet<string> = new Set([
  'InitiateAuth',
  'RespondToAuthChallenge',
  'ForgotPassword',
  'ConfirmForgotPassword',
  'RevokeToken',
]);

/** The request headers the SDK sends from a browser for the public actions (none of them is signed). */
const CORS_ALLOWED_HEADERS = [
  'content-type',
  'x-amz-target',
  'x-amz-user-agent',
  'amz-sdk-invocation-id',
  'amz-sdk-request',
];
const CORS_MAX_AGE_SECONDS = 600;

/** How long, and how many, as Cognito limits them: wrong codes per code, codes per person per hour. */
const CODE_ATTEMPTS = 5;
const CODES_PER_HOUR = 10;
const HOUR_MS = 60 * 60 * 1000;
/** People the attempt counters remember at most (the oldest are forgotten first). */
const MAX_TRACKED = 10_000;

const AWS_JSON = 'application/x-amz-json-1.1';

interface Answer {
  readonly status: number;
  readonly body: string;
}

const error = (status: number, type: string, message: string): Answer => ({
  status,
  body: JSON.stringify({ __type: type, message }),
});

/** What Cognito answers with user-existence errors hidden, for an unknown person and a wrong password alike. */
export const INCORRECT_SIGN_IN = error(400, 'NotAuthorizedException', 'Incorrect username or password.');
const CODE_MISMATCH = error(400, 'CodeMismatchException', 'Invalid verification code provided, please try again.');
const LIMIT_EXCEEDED = error(400, 'LimitExceededException', 'Attempt limit exceeded, please try after some time.');
/** cognito-local's answers that would tell an unknown person from a wrong password. */
const SIGN_IN_FAILURES: ReadonlySet<string> = new Set([
  'NotAuthorizedException',
  'UserNotFoundException',
  'InvalidPasswordException',
]);

/** The JSON error (and status) a Cognito endpoint answers a request it cannot authenticate with. */
const AUTH_ERRORS: Record<SigV4ErrorCode, string> = {
  InvalidAccessKeyId: 'UnrecognizedClientException',
  SignatureDoesNotMatch: 'InvalidSignatureException',
  RequestTimeTooSkewed: 'InvalidSignatureException',
  AccessDenied: 'AccessDeniedException',
  AuthorizationQueryParametersError: 'IncompleteSignatureException',
  AuthorizationHeaderMalformed: 'IncompleteSignatureException',
  MissingSecurityHeader: 'IncompleteSignatureException',
  InvalidArgument: 'IncompleteSignatureException',
};
const coral = (type: string) => `com.amazon.coral.service#${type}`;
const MISSING_TOKEN = error(403, coral('MissingAuthenticationTokenException'), 'Missing Authentication Token');

const isText = (value: unknown, max = 2048): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const invalid = (message: string) => error(400, 'InvalidParameterException', message);

/** The pool's password policy (lib/constructs/people.ts), as Cognito words a refusal; undefined when it holds. */
export function passwordRefusal(password: string): Answer | undefined {
  if (password.length < 8)
    return error(400, 'InvalidPasswordException', 'Password does not conform to policy: Password not long enough');
  if (password.length > 256)
    return invalid(
      "1 validation error detected: Value at 'password' failed to satisfy constraint: Member must have length less than or equal to 256",
    );
  const words: Record<string, string> = {
    'password.lowercase': 'Password must have lowercase characters',
    'password.uppercase': 'Password must have uppercase characters',
    'password.digit': 'Password must have numeric characters',
    'password.symbol': 'Password must have symbol characters',
  };
  for (const { rule, test } of PASSWORD_RULES) {
    if (!test.test(password))
      return error(400, 'InvalidPasswordException', `Password does not conform to policy: ${words[rule]}`);
  }
  return undefined;
}

/** An e-mail as Cognito shows a code's destination: `b***@e***`. */
export function maskedDestination(address: string): string {
  const at = address.lastIndexOf('@');
  const local = at < 0 ? address : address.slice(0, at);
  const domain = at < 0 ? '' : address.slice(at + 1);
  return `${[...local][0] ?? ''}***@${[...domain][0] ?? ''}***`;
}

const codeDelivery = (address: string): Answer => ({
  status: 200,
  body: JSON.stringify({
    CodeDeliveryDetails: { AttributeName: 'email', DeliveryMedium: 'EMAIL', Destination: maskedDestination(address) },
  }),
});

/** A request's one value of a header (undefined when absent or repeated). */
function single(req: IncomingMessage, name: string): string | undefined {
  const values = req.headersDistinct[name];
  return values?.length === 1 ? values[0] : undefined;
}

/** Counts per person (lower-cased user name), forgetting the oldest past MAX_TRACKED. */
class Counters<T> {
  private readonly entries = new Map<string, T>();
  get(key: string): T | undefined {
    return this.entries.get(key.toLowerCase());
  }
  set(key: string, value: T): void {
    const k = key.toLowerCase();
    this.entries.delete(k);
    this.entries.set(k, value);
    if (this.entries.size > MAX_TRACKED) this.entries.delete(this.entries.keys().next().value as string);
  }
  delete(key: string): void {
    this.entries.delete(key.toLowerCase());
  }
}

export async function startCognitoGuard(options: CognitoGuardOptions): Promise<CognitoGuard> {
  const agent = new Agent({ keepAlive: true });
  const now = options.now ?? (() => new Date());
  const allowedOrigins = options.allowedOrigins ?? (() => []);
  let publicUrl = '';
  /** Wrong codes since the person's last ForgotPassword. */
  const wrongCodes = new Counters<number>();
  /** When the person's last ForgotPassword calls were (at most CODES_PER_HOUR kept). */
  const codeRequests = new Counters<number[]>();

  const send = (res: ServerResponse, answer: Answer, headers: OutgoingHttpHeaders = {}): void => {
    if (res.headersSent || res.destroyed) {
      res.destroy();
      return;
    }
    res.writeHead(answer.status, {
      'content-type': AWS_JSON,
      'content-length': Buffer.byteLength(answer.body),
      'x-amzn-requestid': randomUUID(),
      ...headers,
    });
    res.end(answer.body);
  };

  const failed = (res: ServerResponse, failure: unknown): void => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    send(res, error(500, 'InternalErrorException', `The local Cognito engine failed: ${(failure as Error).message}`));
  };

  /** The request of one call to cognito-local. */
  const upstreamCall = (action: string, body: string): RequestOptions => ({
    host: options.upstream.host,
    port: options.upstream.port,
    method: 'POST',
    path: '/',
    agent,
    headers: {
      'content-type': AWS_JSON,
      'content-length': Buffer.byteLength(body),
      'x-amz-target': `${TARGET_PREFIX}${action}`,
    },
  });

  /** cognito-local's answer to one call, read whole (at most `max` bytes). */
  const engine = (action: string, body: string, max: number): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const call = httpRequest(upstreamCall(action, body), (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > max) {
            response.destroy(new Error(`cognito-local's answer to ${action} is over ${max} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        response.on('error', reject);
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 500, body: Buffer.concat(chunks).toString('utf8') }),
        );
      });
      call.on('error', reject);
      call.end(body);
    });

  /** cognito-local's answer streamed back as it comes (a signed caller's ListUsers may be long). */
  const relay = (action: string, body: string, res: ServerResponse): void => {
    const call = httpRequest(upstreamCall(action, body), (response) => {
      if (res.headersSent || res.destroyed) {
        response.destroy();
        return;
      }
      // Its own headers stay behind (its `Access-Control-Allow-Origin: *` first of all).
      const length = response.headers['content-length'];
      res.writeHead(response.statusCode ?? 500, {
        'content-type': AWS_JSON,
        ...(length ? { 'content-length': length } : {}),
        'x-amzn-requestid': randomUUID(),
      });
      response.on('error', () => res.destroy());
      response.pipe(res);
    });
    call.on('error', (failure) => failed(res, failure));
    res.on('close', () => {
      if (!res.writableFinished) call.destroy();
    });
    call.end(body);
  };

  /** The signature of a call that needs one: undefined when it holds (the body's hash included), else the refusal. */
  const signatureRefusal = (req: IncomingMessage, body: Buffer): Answer | undefined => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const query = q < 0 ? '' : url.slice(q + 1);
    if (req.headers.authorization === undefined && !query.includes('X-Amz-')) return MISSING_TOKEN;
    const verdict = verifySigV4(
      { method: req.method ?? 'POST', path: q < 0 ? url : url.slice(0, q), query, headers: req.headersDistinct },
      { credentials: options.credentials, region: options.region, service: 'cognito-idp', now: now() },
    );
    if (!verdict.ok) return error(400, coral(AUTH_ERRORS[verdict.code]), verdict.message);
    // The signature binds the hash the caller claims; the body must be the one hashed (Cognito hashes it itself).
    const claimed = single(req, 'x-amz-content-sha256');
    if (claimed !== createHash('sha256').update(body).digest('hex')) {
      return error(
        400,
        coral('InvalidSignatureException'),
        'The request signature we calculated does not match the signature you provided: the body is not the one signed.',
      );
    }
    return undefined;
  };

  /** Whether `username` may have another code now (CODES_PER_HOUR an hour), counting this one. */
  const mayRequestCode = (username: string): boolean => {
    const since = now().getTime() - HOUR_MS;
    const recent = (codeRequests.get(username) ?? []).filter((at) => at > since);
    if (recent.length >= CODES_PER_HOUR) return false;
    codeRequests.set(username, [...recent, now().getTime()]);
    return true;
  };

  /** A public action: its input checked, cognito-local's answer as Cognito with user-existence errors hidden. */
  const publicCall = async (action: string, input: Record<string, unknown>): Promise<Answer> => {
    if (!isText(input.ClientId, 128)) return invalid('Missing required parameter ClientId');
    const forward = () => engine(action, JSON.stringify(input), MAX_ANSWER_BYTES);
    const typeOf = (answer: Answer): string | undefined => {
      try {
        const parsed = JSON.parse(answer.body) as { __type?: unknown };
        return typeof parsed.__type === 'string' ? parsed.__type : undefined;
      } catch {
        return undefined;
      }
    };
    const signInFailure = (answer: Answer) =>
      answer.status === 400 && SIGN_IN_FAILURES.has(typeOf(answer) ?? '') ? INCORRECT_SIGN_IN : answer;

    switch (action) {
      case 'InitiateAuth': {
        const parameters = input.AuthParameters;
        if (!isObject(parameters)) return invalid('Missing required parameter AuthParameters');
        if (input.AuthFlow === 'USER_PASSWORD_AUTH') {
          if (!isText(parameters.USERNAME) || typeof parameters.PASSWORD !== 'string') {
            return invalid('Missing required parameter USERNAME or PASSWORD');
          }
          return signInFailure(await forward());
        }
        if (input.AuthFlow === 'REFRESH_TOKEN_AUTH' || input.AuthFlow === 'REFRESH_TOKEN') {
          if (!isText(parameters.REFRESH_TOKEN, 16_384)) return invalid('Missing required parameter REFRESH_TOKEN');
          return forward();
        }
        return invalid('Unsupported AuthFlow: the local engine takes USER_PASSWORD_AUTH and REFRESH_TOKEN_AUTH');
      }
      case 'RespondToAuthChallenge': {
        const responses = input.ChallengeResponses;
        if (input.ChallengeName !== 'NEW_PASSWORD_REQUIRED') {
          return invalid('Unsupported ChallengeName: the local engine takes NEW_PASSWORD_REQUIRED');
        }
        if (!isText(input.Session, 2048) || !isObject(responses) || !isText(responses.USERNAME, 128)) {
          return INCORRECT_SIGN_IN;
        }
        if (typeof responses.NEW_PASSWORD !== 'string') return invalid('Missing required parameter NEW_PASSWORD');
        return passwordRefusal(responses.NEW_PASSWORD) ?? signInFailure(await forward());
      }
      case 'ForgotPassword': {
        if (!isText(input.Username, 128)) return invalid('Missing required parameter Username');
        if (!mayRequestCode(input.Username)) return LIMIT_EXCEEDED;
        // A new code: new attempts (whether or not the person exists, so that the limit tells nothing either).
        wrongCodes.delete(input.Username);
        const answer = await forward();
        if (answer.status === 400 && typeOf(answer) === 'UserNotFoundException') return codeDelivery(input.Username);
        if (answer.status !== 200) return answer;
        // cognito-local names the whole address; Cognito masks it.
        const destination = (JSON.parse(answer.body) as { CodeDeliveryDetails?: { Destination?: unknown } })
          .CodeDeliveryDetails?.Destination;
        return codeDelivery(typeof destination === 'string' ? destination : input.Username);
      }
      case 'ConfirmForgotPassword': {
        if (!isText(input.Username, 128)) return invalid('Missing required parameter Username');
        // A code is never empty: cognito-local would take an absent one as the absent code of a person who asked none.
        if (!isText(input.ConfirmationCode, 2048)) return invalid('Missing required parameter ConfirmationCode');
        if (typeof input.Password !== 'string') return invalid('Missing required parameter Password');
        const refused = passwordRefusal(input.Password);
        if (refused) return refused;
        const wrong = wrongCodes.get(input.Username) ?? 0;
        if (wrong >= CODE_ATTEMPTS) return LIMIT_EXCEEDED;
        const answer = await forward();
        const type = typeOf(answer);
        if (answer.status === 400 && (type === 'CodeMismatchException' || type === 'UserNotFoundException')) {
          wrongCodes.set(input.Username, wrong + 1);
          return CODE_MISMATCH;
        }
        if (answer.status === 200) wrongCodes.delete(input.Username);
        return answer;
      }
      case 'RevokeToken':
        if (!isText(input.Token, 16_384)) return invalid('Missing required parameter Token');
        return forward();
      default:
        return error(400, coral('UnknownOperationException'), `Unknown operation ${action}`);
    }
  };

  /** `/<poolId>/.well-known/<file>`: the pool id and the file, or undefined. */
  const wellKnown = (path: string): { poolId: string; file: string } | undefined => {
    const parts = path.split('/');
    if (parts.length !== 4 || parts[0] !== '' || parts[2] !== '.well-known') return undefined;
    if (!/^[\w-]{1,55}$/.test(parts[1])) return undefined;
    return { poolId: parts[1], file: parts[3] };
  };

  const preflight = (req: IncomingMessage, res: ServerResponse, allowed: boolean): void => {
    req.resume();
    const requested = (single(req, 'access-control-request-headers') ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== '');
    if (
      !allowed ||
      single(req, 'access-control-request-method') !== 'POST' ||
      !requested.every((name) => CORS_ALLOWED_HEADERS.includes(name))
    ) {
      res.removeHeader('access-control-allow-origin');
      send(res, error(403, coral('AccessDeniedException'), 'This origin, method or header is not allowed'));
      return;
    }
    res.writeHead(204, {
      'access-control-allow-methods': 'POST',
      'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
      'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
      'content-length': 0,
    });
    res.end();
  };

  /** The request's body, or undefined past MAX_REQUEST_BYTES (counted as it arrives). */
  const readBody = (req: IncomingMessage): Promise<Buffer | undefined> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let over = false;
      req.on('data', (chunk: Buffer) => {
        if (over) return;
        size += chunk.length;
        if (size > MAX_REQUEST_BYTES) {
          over = true;
          chunks.length = 0;
          resolve(undefined);
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => {
        if (!over) resolve(Buffer.concat(chunks));
      });
      req.on('error', reject);
    });

  const tooLarge = (res: ServerResponse) =>
    send(
      res,
      error(413, coral('RequestEntityTooLargeException'), `A request body is at most ${MAX_REQUEST_BYTES} bytes`),
      {
        connection: 'close',
      },
    );

  const api = async (req: IncomingMessage, res: ServerResponse, origin: string | undefined, allowed: boolean) => {
    const target = single(req, 'x-amz-target');
    const action = target?.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : undefined;
    if (action === undefined || !ENGINE_ACTIONS.has(action)) {
      req.resume();
      send(res, error(400, coral('UnknownOperationException'), 'Unknown or missing X-Amz-Target'));
      return;
    }
    // A page of another origin is refused whatever it sends (it could not read the answer anyway).
    if (origin !== undefined && !allowed) {
      req.resume();
      send(res, error(403, coral('AccessDeniedException'), 'This origin may not call the local Cognito engine'));
      return;
    }
    if (Number(req.headers['content-length']) > MAX_REQUEST_BYTES) {
      req.resume();
      tooLarge(res);
      return;
    }
    const body = await readBody(req);
    if (body === undefined) {
      req.resume();
      tooLarge(res);
      return;
    }
    let input: unknown;
    try {
      input = JSON.parse(body.toString('utf8'));
    } catch {
      input = undefined;
    }
    if (!isObject(input)) {
      send(res, error(400, coral('SerializationException'), 'The request body is not a JSON object'));
      return;
    }
    if (PUBLIC_ACTIONS.has(action)) {
      send(res, await publicCall(action, input));
      return;
    }
    const refusal = signatureRefusal(req, body);
    if (refusal) {
      send(res, refusal);
      return;
    }
    // What cognito-local parses is what was checked: the parsed object, written again.
    relay(action, JSON.stringify(input), res);
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const origin = single(req, 'origin');
    const allowed = origin !== undefined && allowedOrigins().includes(origin);
    res.setHeader('vary', 'Origin');
    if (allowed) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-expose-headers', 'x-amzn-requestid');
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (req.method === 'OPTIONS') {
      preflight(req, res, allowed);
      return;
    }
    if (req.method === 'POST' && path === '/') {
      api(req, res, origin, allowed).catch((failure: unknown) => failed(res, failure));
      return;
    }
    req.resume();
    const known = req.method === 'GET' ? wellKnown(path) : undefined;
    if (known?.file === 'openid-configuration') {
      // cognito-local names http://localhost:9229 here whatever its address; the issuer is this endpoint's.
      const issuer = `${publicUrl}/${known.poolId}`;
      send(
        res,
        {
          status: 200,
          body: JSON.stringify({
            issuer,
            jwks_uri: `${issuer}/.well-known/jwks.json`,
            id_token_signing_alg_values_supported: ['RS256'],
          }),
        },
        { 'content-type': 'application/json' },
      );
      return;
    }
    if (known?.file === 'jwks.json') {
      const call = httpRequest(
        { host: options.upstream.host, port: options.upstream.port, path, agent },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
          });
          response.on('error', (failure) => failed(res, failure));
          response.on('end', () =>
            send(
              res,
              { status: response.statusCode ?? 500, body: Buffer.concat(chunks).toString('utf8') },
              { 'content-type': 'application/json' },
            ),
          );
        },
      );
      call.on('error', (failure) => failed(res, failure));
      call.end();
      return;
    }
    send(res, error(404, 'ResourceNotFoundException', 'Not found'));
  };

  const guard = await listenGuard(handle, {
    host: options.host,
    port: options.port,
    agent,
    configure: (server) => {
      server.headersTimeout = 10_000;
      server.requestTimeout = 30_000;
    },
  });
  publicUrl = guard.url;
  return guard;
}
