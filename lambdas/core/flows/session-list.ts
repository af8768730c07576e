/**
 * GET /dashboard/agents/:agentId/sessions/:environment: an agent's sessions in one environment, newest first, a page
 * at a time. The `nextToken` is the position the next page starts after, bound to the list it came from (agent,
 * environment, status): opaque to callers, it carries nothing the page does not show.
 */
import { createHash } from 'node:crypto';
import { ValidationError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import type { SessionStore } from '#ports/flows';
import type { AgentStore } from '#ports/stores';
import type { SessionStatus } from './session';

export const DEFAULT_SESSION_PAGE = 50;

const VERSION = 1;
/** `<createdAt>#<sessionId>` as sessionPosition writes it (a caller may start a session with an upper-case id). */
const POSITION = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z#[0-9A-Fa-f-]{36}$/;

interface ListIdentity {
  readonly agentId: string;
  readonly environment: Environment;
  readonly status?: SessionStatus;
}

function fingerprint(list: ListIdentity): string {
  return createHash('sha256')
    .update(JSON.stringify([list.agentId, list.environment, list.status ?? null]))
    .digest('base64url')
    .slice(0, 16);
}

function encodeToken(position: string, list: ListIdentity): string {
  return Buffer.from(JSON.stringify({ v: VERSION, q: fingerprint(list), p: position }), 'utf8').toString('base64url');
}

function decodeToken(token: string, list: ListIdentity): string {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    body = undefined;
  }
  const { v, q, p } = (body ?? {}) as Record<string, unknown>;
  if (v !== VERSION || typeof q !== 'string' || typeof p !== 'string' || !POSITION.test(p)) {
    throw new ValidationError([
      { field: 'nextToken', rule: 'nextToken.format', message: 'nextToken is not a token this API issued' },
    ]);
  }
  if (q !== fingerprint(list)) {
    throw new ValidationError([
      {
        field: 'nextToken',
        rule: 'nextToken.query',
        message: 'nextToken belongs to another list (agent, environment or status)',
      },
    ]);
  }
  return p;
}

export async function listSessions(
  deps: { agents: AgentStore; sessions: SessionStore },
  caller: Caller,
  request: ListIdentity & { readonly limit?: number; readonly nextToken?: string },
) {
  const list: ListIdentity = {
    agentId: request.agentId,
    environment: request.environment,
    ...(request.status ? { status: request.status } : {}),
  };
  const before = request.nextToken === undefined ? undefined : decodeToken(request.nextToken, list);
  await requireAgent(deps, caller, request.agentId);
  const { sessions, next } = await deps.sessions.list(request.agentId, request.environment, {
    limit: request.limit ?? DEFAULT_SESSION_PAGE,
    ...(list.status ? { status: list.status } : {}),
    ...(before !== undefined ? { before } : {}),
  });
  return { data: sessions, count: sessions.length, nextToken: next === null ? null : encodeToken(next, list) };
}
