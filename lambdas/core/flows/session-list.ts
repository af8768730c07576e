/**
 * GET /dashboard/agents/:agentId/sessions/:environment: an agent's sessions in one environment, newest first, a page
 * at a time. The `nextToken` is the position the next page starts after, bound to the list it came from (agent,
 * environment, status): opaque to callers, it carries nothing the page does not show.
 */
import type { Environment } from '#core/knowledge/fields';
import { pageTokens } from '#core/paging/pages';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import type { SessionStore } from '#ports/flows';
import type { AgentStore } from '#ports/stores';
import type { SessionStatus } from './session';

export const DEFAULT_SESSION_PAGE = 50;

/** `<createdAt>#<sessionId>` as sessionPosition writes it (a caller may start a session with an upper-case id). */
const tokens = pageTokens(
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z#[0-9A-Fa-f-]{36}$/,
  'agent, environment or status',
);

interface ListIdentity {
  readonly agentId: string;
  readonly environment: Environment;
  readonly status?: SessionStatus;
}

const identity = (list: ListIdentity) => [list.agentId, list.environment, list.status ?? null];

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
  const before = request.nextToken === undefined ? undefined : tokens.decode(request.nextToken, identity(list));
  await requireAgent(deps, caller, request.agentId);
  const { sessions, next } = await deps.sessions.list(request.agentId, request.environment, {
    limit: request.limit ?? DEFAULT_SESSION_PAGE,
    ...(list.status ? { status: list.status } : {}),
    ...(before !== undefined ? { before } : {}),
  });
  return {
    data: sessions,
    count: sessions.length,
    nextToken: next === null ? null : tokens.encode(next, identity(list)),
  };
}
