/**
 * Organization tokens: `Authorization: Bearer <token>`. Only the SHA-256 of a token is stored; the token itself is
 * shown once, when it is created.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ForbiddenError, UnauthorizedError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import type { TokenRecord, TokenStore } from '#ports/stores';
import type { Scope } from './scopes';

const TOKEN_PREFIX = 'aps_';
/** Characters of a token a list shows (`aps_` and 4 more: 24 random bits, enough to tell a person's tokens apart). */
const TOKEN_PREFIX_LENGTH = 8;

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function generateToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The token of an `Authorization` header value, or undefined when it is not `Bearer <token>`. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer[ ]+([A-Za-z0-9._~+/=-]{16,512})[ ]*$/i.exec(header ?? '');
  return match?.[1];
}

/** A token's `lastUsedAt` is written at most once in this time (one write a minute per token, whatever the traffic). */
export const TOKEN_USE_RESOLUTION_MS = 60_000;

/** Whether the token has expired at `now`. */
export function isExpired(record: Pick<TokenRecord, 'expiresAt'>, now: Date): boolean {
  return typeof record.expiresAt === 'string' && record.expiresAt <= now.toISOString();
}

/**
 * The caller a header authenticates, or UnauthorizedError (no token, an unknown or revoked one, an expired one). The
 * token's use is recorded (`lastUsedAt`, once a minute); a failure to record it does not refuse the request, it is
 * handed to `onUseNotRecorded`.
 */
export async function authenticate(
  tokens: TokenStore,
  authorizationHeader: string | undefined,
  now: Date,
  onUseNotRecorded: (error: unknown) => void = () => {},
): Promise<Caller> {
  const token = bearerToken(authorizationHeader);
  if (!token) throw new UnauthorizedError();
  const record = await tokens.getByHash(hashToken(token));
  if (!record || isExpired(record, now)) throw new UnauthorizedError();
  const since = new Date(now.getTime() - TOKEN_USE_RESOLUTION_MS).toISOString();
  if (record.lastUsedAt === undefined || record.lastUsedAt < since) {
    await tokens.recordUse(record.tokenHash, now.toISOString(), since).catch(onUseNotRecorded);
  }
  return {
    organizationId: record.organizationId,
    tokenId: record.tokenId,
    scopes: record.scopes,
    ...(record.agentIds ? { agentIds: record.agentIds } : {}),
  };
}

/**
 * The caller as the authorizer hands it to the handlers: API Gateway's context takes flat strings only. `agentIds`
 * is present only for a restricted token, so a context without it (or an answer cached before restriction existed)
 * means the whole organization.
 */
export function callerContext(caller: Caller): Record<string, string> {
  return {
    organizationId: caller.organizationId,
    tokenId: caller.tokenId,
    scopes: caller.scopes.join(','),
    ...(caller.agentIds ? { agentIds: caller.agentIds.join(',') } : {}),
    ...(caller.role ? { role: caller.role } : {}),
    ...(caller.email ? { email: caller.email } : {}),
  };
}

/** The inverse of callerContext; undefined when the request was not authorized. */
export function callerFromContext(context: Record<string, unknown> | null | undefined): Caller | undefined {
  if (!context || typeof context.organizationId !== 'string') return undefined;
  const list = (value: unknown) => (typeof value === 'string' ? value.split(',').filter(Boolean) : []);
  return {
    organizationId: context.organizationId,
    tokenId: String(context.tokenId ?? ''),
    scopes: list(context.scopes),
    // Present but empty would be a token restricted to nothing: it stays restricted (to no agent), never widens.
    ...(context.agentIds !== undefined ? { agentIds: list(context.agentIds) } : {}),
    // Anything but `owner` is a member: a role never widens.
    ...(context.role !== undefined
      ? { role: context.role === 'owner' ? ('owner' as const) : ('member' as const) }
      : {}),
    ...(typeof context.email === 'string' && context.email ? { email: context.email } : {}),
  };
}

export function requireScope(caller: Caller, scope: Scope): void {
  if (!caller.scopes.includes(scope)) {
    throw new ForbiddenError(`This route needs a token with scope ${scope}`);
  }
}

/**
 * What a token may hand on to a token it creates: none of the scopes it lacks, and, when it is restricted to agents,
 * a restriction to some of its own agents. Agents outside its restriction are the 404 of requireAgent, as for any
 * agent it cannot see; this checks what is refused even for agents it can see.
 */
export function requireGrantable(caller: Caller, request: { scopes: readonly Scope[]; agentIds?: readonly string[] }) {
  const notHeld = [...new Set(request.scopes)].filter((scope) => !caller.scopes.includes(scope));
  if (notHeld.length > 0) {
    throw new ForbiddenError(
      `A token cannot create a token with a scope it does not hold: ${notHeld.join(', ')}`,
      notHeld.map((scope) => ({
        field: 'scopes',
        rule: 'scopes.notHeld',
        message: `this token does not hold scope ${scope}`,
      })),
    );
  }
  if (caller.agentIds !== undefined && request.agentIds === undefined) {
    throw new ForbiddenError(
      'A token restricted to agents can only create tokens restricted to some of its agents: give agentIds',
      [
        {
          field: 'agentIds',
          rule: 'agentIds.notHeld',
          message: 'this token cannot grant every agent of the organization',
        },
      ],
    );
  }
}

export interface IssuedToken {
  readonly token: string;
  readonly record: TokenRecord;
}

/** Stores a new token of an organization and returns it: the only time the plain token exists. */
export async function issueToken(
  tokens: TokenStore,
  fields: {
    organizationId: string;
    tokenId: string;
    scopes: readonly Scope[];
    agentIds?: readonly string[];
    name: string | null;
    createdAt: string;
    expiresAt?: string | null;
  },
  token: string = generateToken(),
): Promise<IssuedToken> {
  const { agentIds, ...rest } = fields;
  const record: TokenRecord = {
    ...rest,
    prefix: token.slice(0, TOKEN_PREFIX_LENGTH),
    scopes: [...new Set(fields.scopes)],
    ...(agentIds ? { agentIds: [...new Set(agentIds)] } : {}),
    tokenHash: hashToken(token),
  };
  await tokens.put(record);
  return { token, record };
}
