/**
 * Paging of the lists. The `nextToken` of the lists (sessions, documents): the position the next page starts after, bound to the list it
 * came from (a fingerprint of what names the list: agent, environment, filters). Opaque to callers, it carries
 * nothing the page does not show; a token of another list, or one this API did not issue, is a 400 on `nextToken`.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { ValidationError } from '#core/errors';

/** A page size from the query string: 1 to 100, 50 when absent. `things` names what a page holds. */
export function pageLimit(things: string) {
  return z
    .string()
    .regex(/^[0-9]{1,3}$/, 'limit must be a whole number from 1 to 100')
    .transform(Number)
    .pipe(z.int().min(1).max(100))
    .optional()
    .meta({ description: `${things} a page holds, 1 to 100 (default 50).` });
}

const VERSION = 1;

export interface PageTokens {
  encode(position: string, list: readonly unknown[]): string;
  /** The position a token holds, once it is known to be one of this list. */
  decode(token: string, list: readonly unknown[]): string;
}

/**
 * Tokens of one kind of list. `position` tells a position this API writes (anchored, no backtracking); `listNames`
 * says what binds a token to its list, for the error a token of another list gets.
 */
export function pageTokens(position: RegExp, listNames: string): PageTokens {
  const fingerprint = (list: readonly unknown[]) =>
    createHash('sha256').update(JSON.stringify(list)).digest('base64url').slice(0, 16);
  return {
    encode: (at, list) =>
      Buffer.from(JSON.stringify({ v: VERSION, q: fingerprint(list), p: at }), 'utf8').toString('base64url'),
    decode: (token, list) => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
      } catch {
        body = undefined;
      }
      const { v, q, p } = (body ?? {}) as Record<string, unknown>;
      if (v !== VERSION || typeof q !== 'string' || typeof p !== 'string' || !position.test(p)) {
        throw new ValidationError([
          { field: 'nextToken', rule: 'nextToken.format', message: 'nextToken is not a token this API issued' },
        ]);
      }
      if (q !== fingerprint(list)) {
        throw new ValidationError([
          { field: 'nextToken', rule: 'nextToken.query', message: `nextToken belongs to another list (${listNames})` },
        ]);
      }
      return p;
    },
  };
}
