/**
 * Organization tokens: `Authorization: Bearer <token>`. Only the SHA-256 of a token is stored; the token itself is
 * shown once, when it is created.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ForbiddenError, UnauthorizedError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import type { MembershipStore, TokenIssuer, TokenRecord, TokenStore } from '#ports/stores';
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

export interface TokenAuthDeps {
  readonly tokens: TokenStore;
  /** The owners at the root of tokens' lineages (core/auth/grants.ts). */
  readonly memberships: Pick<MembershipStore, 'get'>;
}

/**
 * The caller a header authenticates, or UnauthorizedError (no token, an unknown or revoked one, an expired one, one
 * whose lineage no longer holds). The token's use is recorded (`lastUsedAt`, once a minute); a failure to record it
 * does not refuse the request, it is handed to `onUseNotRecorded`.
 */
export async function authenticate(
  deps: TokenAuthDeps,
  authorizationHeader: string | undefined,
  now: Date,
  onUseNotRecorded: (error: unknown) => void = () => {},
): Promise<Caller> {
  const token = bearerToken(authorizationHeader);
  if (!token) throw new UnauthorizedError();
  const record = await deps.tokens.getByHash(hashToken(token));
  if (!record || isExpired(record, now) || !(await lineageHolds(deps, record, now))) throw new UnauthorizedError();
  const since = new Date(now.getTime() - TOKEN_USE_RESOLUTION_MS).toISOString();
  if (record.lastUsedAt === undefined || record.lastUsedAt < since) {
    await deps.tokens.recordUse(record.tokenHash, now.toISOString(), since).catch(onUseNotRecorded);
  }
  return {
    organizationId: record.organizationId,
    tokenId: record.tokenId,
    scopes: record.scopes,
    ...(record.agentIds ? { agentIds: record.agentIds } : {}),
    tokenHash: record.tokenHash,
  };
}

/**
 * A token made by another holds while each token above it does (none revoked, none expired) and while the person at
 * its root is still an owner of the organization: revoking a token, or removing the person, ends what they made at
 * once, whatever the clean-up that deletes those records has reached (core/dashboard/dashboard.ts, members.ts).
 */
async function lineageHolds(deps: TokenAuthDeps, record: TokenRecord, now: Date): Promise<boolean> {
  const ancestors = await Promise.all((record.lineage ?? []).map((hash) => deps.tokens.getByHash(hash)));
  const tokensHold = ancestors.every(
    (ancestor) =>
      ancestor !== undefined && ancestor.organizationId === record.organizationId && !isExpired(ancestor, now),
  );
  if (!tokensHold || !record.rootSub) return tokensHold;
  const root = await deps.memberships.get(record.rootSub, record.organizationId);
  return root?.role === 'owner';
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
    ...(caller.tokenHash ? { tokenHash: caller.tokenHash } : {}),
  };
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

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
    ...(typeof context.tokenHash === 'string' && SHA256_HEX.test(context.tokenHash)
      ? { tokenHash: context.tokenHash }
      : {}),
  };
}

export function requireScope(caller: Pick<Caller, 'scopes'>, scope: Scope | readonly Scope[]): void {
  if (typeof scope === 'string') {
    if (!caller.scopes.includes(scope)) throw new ForbiddenError(`This route needs a token with scope ${scope}`);
    return;
  }
  // A route whose operations each need their own scope (the MCP server's tools) admits a token with any of them.
  if (!scope.some((one) => caller.scopes.includes(one))) {
    throw new ForbiddenError(`This route needs a token with one of the scopes ${scope.join(', ')}`);
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
    /** Who made it and what it descends from (core/auth/grants.ts); absent for the local runtime's own tokens. */
    issuer?: TokenIssuer;
    lineage?: readonly string[];
    rootSub?: string;
  },
  token: string = generateToken(),
): Promise<IssuedToken> {
  const { agentIds, lineage, ...rest } = fields;
  const record: TokenRecord = {
    ...rest,
    prefix: token.slice(0, TOKEN_PREFIX_LENGTH),
    scopes: [...new Set(fields.scopes)],
    ...(agentIds ? { agentIds: [...new Set(agentIds)] } : {}),
    ...(lineage && lineage.length > 0 ? { lineage } : {}),
    tokenHash: hashToken(token),
  };
  await tokens.put(record);
  return { token, record };
}
