/**
 * The `nextToken` of POST /api/v1/events/agent: the position of the last record of a page (created_at and id), bound
 * to the query that produced it. Opaque to callers; it carries no data that is not already in the page.
 */
import { createHash } from 'node:crypto';
import { ValidationError } from '#core/errors';
import type { EventPosition } from './event';

const VERSION = 1;

/** The parts of a query a token belongs to: a token is refused with any other agent, environment or filter. */
export interface QueryIdentity {
  readonly agentId: string;
  readonly environment: string;
  readonly sessionId?: string;
  readonly eventName?: string;
  readonly fromMs?: number;
  readonly toMs?: number;
}

function fingerprint(query: QueryIdentity): string {
  const parts = [
    query.agentId,
    query.environment,
    query.sessionId ?? null,
    query.eventName ?? null,
    query.fromMs ?? null,
    query.toMs ?? null,
  ];
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 16);
}

export function encodeCursor(position: EventPosition, query: QueryIdentity): string {
  const body = { v: VERSION, q: fingerprint(query), t: position.createdAt, i: position.id };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

function invalid(rule: string, message: string): ValidationError {
  return new ValidationError([{ field: 'nextToken', rule, message: `nextToken ${message}` }]);
}

/** The position a token points at; a 400 naming `nextToken` when it is not one of ours or belongs to another query. */
export function decodeCursor(token: string, query: QueryIdentity): EventPosition {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalid('nextToken.format', 'is not a token this API issued');
  }
  const { v, q, t, i } = (body ?? {}) as Record<string, unknown>;
  if (
    v !== VERSION ||
    typeof q !== 'string' ||
    typeof t !== 'string' ||
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(t) ||
    typeof i !== 'number' ||
    !Number.isSafeInteger(i) ||
    i < 1
  ) {
    throw invalid('nextToken.format', 'is not a token this API issued');
  }
  if (q !== fingerprint(query)) {
    throw invalid('nextToken.mismatch', 'belongs to a query with another agentId or other filters');
  }
  return { createdAt: t, id: i };
}
