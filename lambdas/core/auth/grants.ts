/**
 * Nobody becomes more than they were given (issue 33; docs/people.md, "Who may make what"). A credential's worth is
 * its scopes, the agents it may use and its lifetime; every use case that makes, hands on or ends a credential or a
 * membership asks this module, so the rule lives in one place:
 * - a token (and the token it mints) is worth at most what made it: its scopes among the issuer's, its agents among
 *   the issuer's, its `expiresAt` no later than the issuer's (clamped: a token of a day mints tokens of a day at most);
 * - it authenticates only while everything above it does: each token of its lineage, and the owner at its root
 *   (core/auth/tokens.ts, `authenticate`);
 * - people are managed by people: only an owner signed in offers a membership or ends one; a token never does, since
 *   a person outlives any token and may mint every scope;
 * - a member manages nothing: no token, no person.
 */
import { ForbiddenError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import type { TokenIssuer, TokenRecord } from '#ports/stores';
import { isPerson, requireOwner } from './people';
import { SCOPES, type Scope } from './scopes';

/** What a credential is worth: what it may do, where, and until when. */
export interface Worth {
  readonly scopes: readonly Scope[];
  /** The agents it is restricted to; undefined: every agent of the organization. */
  readonly agentIds?: readonly string[];
  /** When it stops working; null: it does not expire by time. */
  readonly expiresAt: string | null;
}

/** How many generations of tokens below a person (or below a token of no lineage) one lineage may hold. */
export const MAX_LINEAGE = 8;

/** An owner signed in is worth the whole organization, with no end but their membership's. */
const OWNER: Worth = { scopes: SCOPES, expiresAt: null };

/** The worth of a stored token. */
export function worthOfToken(record: Pick<TokenRecord, 'scopes' | 'agentIds' | 'expiresAt'>): Worth {
  return {
    scopes: record.scopes,
    ...(record.agentIds ? { agentIds: record.agentIds } : {}),
    expiresAt: record.expiresAt ?? null,
  };
}

/**
 * What `child` holds that `parent` (the calling token: the details say "this token") does not, as error details (empty:
 * nothing). Agents are compared as restricted or
 * not: a restricted parent's agents outside its restriction are a 404 of `requireAgent`, as for any agent it cannot see.
 */
export function excessOver(child: Worth, parent: Worth): { field: string; rule: string; message: string }[] {
  const excess = [...new Set(child.scopes)]
    .filter((scope) => !parent.scopes.includes(scope))
    .map((scope) => ({ field: 'scopes', rule: 'scopes.notHeld', message: `this token does not hold scope ${scope}` }));
  if (parent.agentIds !== undefined) {
    if (child.agentIds === undefined) {
      excess.push({
        field: 'agentIds',
        rule: 'agentIds.notHeld',
        message: 'this token cannot grant every agent of the organization',
      });
    } else {
      for (const agentId of child.agentIds.filter((id) => !parent.agentIds?.includes(id))) {
        excess.push({ field: 'agentIds', rule: 'agentIds.notHeld', message: `this token cannot use agent ${agentId}` });
      }
    }
  }
  if (parent.expiresAt !== null && (child.expiresAt === null || child.expiresAt > parent.expiresAt)) {
    excess.push({
      field: 'expiresInDays',
      rule: 'expiresAt.beyondIssuer',
      message: `this token expires at ${parent.expiresAt}`,
    });
  }
  return excess;
}

/** The earlier of two ends (null: none). */
export function earlierEnd(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  if (b === null) return a;
  return a <= b ? a : b;
}

/**
 * People are managed by owners signed in only: a member gets 403 `member.owner`, a token 403 `members.person`. A
 * token that could invite would make someone who outlives it and who may mint what it cannot.
 */
export function requirePeopleManager(caller: Caller, action: string): asserts caller is Caller & { email: string } {
  if (!isPerson(caller)) {
    throw new ForbiddenError(`A token cannot ${action}: people are managed by an owner signed in`, [
      { field: '', rule: 'members.person', message: 'sign in as an owner of the organization to manage its people' },
    ]);
  }
  requireOwner(caller, action);
}

/** The `sub` of a person's caller (`person:<sub>`). */
export function subOf(caller: Pick<Caller, 'tokenId'>): string {
  return caller.tokenId.slice('person:'.length);
}

/**
 * What the caller is worth as the issuer of a token, and the lineage a token it makes continues: an owner signed in
 * starts one (its root); a token hands on its own (its record, read by the use case, gives its lifetime and lineage).
 */
export function issuerOf(
  caller: Caller,
  callerToken: TokenRecord | undefined,
): { worth: Worth; issuer: TokenIssuer; lineage: string[]; rootSub?: string } {
  if (isPerson(caller)) {
    const sub = subOf(caller);
    return { worth: OWNER, issuer: { kind: 'person', sub, email: caller.email ?? '' }, lineage: [], rootSub: sub };
  }
  if (!callerToken) throw new Error(`the record of token ${caller.tokenId} is gone`);
  return {
    worth: worthOfToken(callerToken),
    issuer: { kind: 'token', tokenId: callerToken.tokenId },
    lineage: [...(callerToken.lineage ?? []), callerToken.tokenHash],
    ...(callerToken.rootSub ? { rootSub: callerToken.rootSub } : {}),
  };
}

/**
 * Whether the caller may revoke `target`: an owner signed in any token of the organization; a token itself, and the
 * tokens it could have made (no wider than itself). A token worth more than the caller is not the caller's to end.
 */
export function requireRevocable(caller: Caller, callerToken: TokenRecord | undefined, target: TokenRecord): void {
  if (isPerson(caller) || target.tokenId === caller.tokenId) return;
  const { worth } = issuerOf(caller, callerToken);
  const excess = excessOver(worthOfToken(target), worth);
  if (excess.length > 0) {
    throw new ForbiddenError(
      'A token can only revoke itself and tokens no wider than itself',
      excess.map(({ message }) => ({ field: 'tokenId', rule: 'token.beyondOwn', message })),
    );
  }
}
