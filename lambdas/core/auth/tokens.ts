/**
 * Organization tokens: `Authorization: Bearer <token>`. Only the SHA-256 of a token is stored; the token itself is
 * shown once, when it is created.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Scope } from '../../../lib/routes';
import type { TokenRecord, TokenStore } from '../../ports/stores';
import { ForbiddenError, UnauthorizedError } from '../errors';
import type { Caller } from '../tenancy/tenancy';

const TOKEN_PREFIX = 'aps_';

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

/** The caller a header authenticates, or UnauthorizedError. */
export async function authenticate(tokens: TokenStore, authorizationHeader: string | undefined): Promise<Caller> {
  const token = bearerToken(authorizationHeader);
  if (!token) throw new UnauthorizedError();
  const record = await tokens.getByHash(hashToken(token));
  if (!record) throw new UnauthorizedError();
  return { organizationId: record.organizationId, tokenId: record.tokenId, scopes: record.scopes };
}

export function requireScope(caller: Caller, scope: Scope): void {
  if (!caller.scopes.includes(scope)) {
    throw new ForbiddenError(`This route needs a token with scope ${scope}`);
  }
}

export interface IssuedToken {
  readonly token: string;
  readonly record: TokenRecord;
}

/** Stores a new token of an organization and returns it: the only time the plain token exists. */
export async function issueToken(
  tokens: TokenStore,
  fields: { organizationId: string; tokenId: string; scopes: readonly Scope[]; name: string | null; createdAt: string },
  token: string = generateToken(),
): Promise<IssuedToken> {
  const record: TokenRecord = { ...fields, scopes: [...new Set(fields.scopes)], tokenHash: hashToken(token) };
  await tokens.put(record);
  return { token, record };
}
