/** Use cases of the dashboard endpoints: agents, knowledge bases and tokens of the caller's organization. */

import { earlierEnd, excessOver, issuerOf, MAX_LINEAGE, requireRevocable } from '#core/auth/grants';
import { isPerson, requireOwner } from '#core/auth/people';
import type { Scope } from '#core/auth/scopes';
import { isExpired, issueToken } from '#core/auth/tokens';
import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from '#core/errors';
import { rotatedSecrets } from '#core/flows/callback-signing';
import type { Environment } from '#core/knowledge/fields';
import { type DeletionJobView, startKnowledgeBaseDeletion } from '#core/processing/knowledge-base-deletion';
import {
  type KnowledgeBaseReindexDeps,
  type ReindexView,
  reindexView,
  startKnowledgeBaseReindex,
} from '#core/processing/knowledge-base-reindex';
import {
  type Caller,
  requireAgent,
  requireKnowledgeBase,
  requireWholeOrganization,
  visibleAgents,
} from '#core/tenancy/tenancy';
import type { RetrievalConfigStore } from '#ports/retrieval-configs';
import type { Clock, IdGenerator, ProcessingQueue } from '#ports/services';
import type {
  AgentRecord,
  AgentStore,
  KnowledgeBaseRecord,
  KnowledgeBaseStore,
  TokenRecord,
  TokenStore,
} from '#ports/stores';

const DAY_MS = 86_400_000;

export interface DashboardDeps {
  readonly agents: AgentStore;
  readonly knowledgeBases: KnowledgeBaseStore;
  readonly tokens: TokenStore;
  readonly queue: ProcessingQueue;
  readonly clock: Clock;
  readonly ids: IdGenerator;
}

export async function createAgent(
  deps: Pick<DashboardDeps, 'agents' | 'clock' | 'ids'>,
  caller: Caller,
  displayName: string,
) {
  requireWholeOrganization(caller, 'create an agent');
  const now = deps.clock.now();
  // Born with the secret that signs its callbacks (docs/flows.md, "Signed callbacks"), shown in this answer only, and
  // only to whoever may rotate it: a member (core/auth/people.ts, requireOwner) gets null.
  const callbackSecrets = rotatedSecrets(undefined, now);
  const agent: AgentRecord = {
    organizationId: caller.organizationId,
    agentId: deps.ids.uuid(),
    displayName,
    createdAt: now.toISOString(),
    callbackSecrets,
  };
  await deps.agents.put(agent);
  return { ...agentView(agent), callbackSecret: caller.role === 'member' ? null : callbackSecrets.current.secret };
}

/** An agent as the API answers it. */
export function agentView({ agentId, displayName, createdAt }: AgentRecord) {
  return { agentId, displayName, createdAt };
}

export async function listAgents(deps: Pick<DashboardDeps, 'agents'>, caller: Caller) {
  return visibleAgents(caller, await deps.agents.list(caller.organizationId)).map(agentView);
}

/** One agent of the caller's (one a restricted token may use): 404 AGENT_NOT_FOUND otherwise. */
export async function getAgent(deps: Pick<DashboardDeps, 'agents'>, caller: Caller, agentId: string) {
  return agentView(await requireAgent(deps, caller, agentId));
}

/** Renames one of the caller's agents (one a restricted token may use). */
export async function renameAgent(
  deps: Pick<DashboardDeps, 'agents'>,
  caller: Caller,
  request: { agentId: string; displayName: string },
) {
  await requireAgent(deps, caller, request.agentId);
  const agent = await deps.agents.rename(caller.organizationId, request.agentId, request.displayName);
  if (!agent) throw new NotFoundError('AGENT_NOT_FOUND', `Agent ${request.agentId} was not found`);
  return agentView(agent);
}

export function knowledgeBaseView(kb: KnowledgeBaseRecord) {
  return {
    knowledgeBaseId: kb.knowledgeBaseId,
    agentId: kb.agentId,
    name: kb.name,
    description: kb.description,
    createdAt: kb.createdAt,
    updatedAt: kb.updatedAt,
  };
}

export async function createKnowledgeBase(
  deps: DashboardDeps,
  caller: Caller,
  request: { agentId: string; name: string; description?: string | null },
) {
  await requireAgent(deps, caller, request.agentId);
  const now = deps.clock.now().toISOString();
  const kb: KnowledgeBaseRecord = {
    organizationId: caller.organizationId,
    agentId: request.agentId,
    knowledgeBaseId: deps.ids.uuid(),
    name: request.name,
    description: request.description ?? null,
    createdAt: now,
    updatedAt: now,
  };
  await deps.knowledgeBases.put(kb);
  return knowledgeBaseView(kb);
}

export async function listKnowledgeBases(deps: DashboardDeps, caller: Caller, agentId: string) {
  await requireAgent(deps, caller, agentId);
  return (await deps.knowledgeBases.list(agentId)).map(knowledgeBaseView);
}

export async function getKnowledgeBase(deps: DashboardDeps, caller: Caller, agentId: string, knowledgeBaseId: string) {
  return knowledgeBaseView(await requireKnowledgeBase(deps, caller, agentId, knowledgeBaseId));
}

export async function updateKnowledgeBase(
  deps: DashboardDeps,
  caller: Caller,
  request: { agentId: string; knowledgeBaseId: string; name?: string; description?: string | null },
) {
  await requireKnowledgeBase(deps, caller, request.agentId, request.knowledgeBaseId);
  const changes: { name?: string; description?: string | null } = {};
  if (request.name !== undefined) changes.name = request.name;
  if (request.description !== undefined) changes.description = request.description;
  const kb = await deps.knowledgeBases.update(
    request.agentId,
    request.knowledgeBaseId,
    changes,
    deps.clock.now().toISOString(),
  );
  if (!kb)
    throw new NotFoundError('KNOWLEDGE_BASE_NOT_FOUND', `Knowledge base ${request.knowledgeBaseId} was not found`);
  return knowledgeBaseView(kb);
}

/**
 * Starts the deletion job of the knowledge base (core/processing/knowledge-base-deletion.ts), or answers the one
 * already running: a second DELETE gets the same job, not a 404. From this call on the knowledge base is gone for
 * every other request; its documents, objects and chunks are removed by the job, its row last.
 */
export async function deleteKnowledgeBase(
  deps: Pick<DashboardDeps, 'agents' | 'knowledgeBases' | 'queue' | 'clock'> & {
    readonly retrievalConfigs: RetrievalConfigStore;
  },
  caller: Caller,
  agentId: string,
  knowledgeBaseId: string,
): Promise<DeletionJobView> {
  const kb = await requireKnowledgeBase(deps, caller, agentId, knowledgeBaseId, { includeDeleting: true });
  const job = await startKnowledgeBaseDeletion(deps, kb);
  if (!job) throw new NotFoundError('KNOWLEDGE_BASE_NOT_FOUND', `Knowledge base ${knowledgeBaseId} was not found`);
  return job;
}

/**
 * Starts a reindex of the knowledge base's `ready` documents (core/processing/knowledge-base-reindex.ts), of one
 * environment or all three: 202 with the job. While one runs, 409 REINDEX_RUNNING (a reindex is not queued twice;
 * GET …/reindex follows the running one).
 */
export async function reindexKnowledgeBase(
  deps: Pick<DashboardDeps, 'agents' | 'knowledgeBases' | 'queue' | 'clock'> &
    Pick<KnowledgeBaseReindexDeps, 'documents'>,
  caller: Caller,
  request: { agentId: string; knowledgeBaseId: string; environment?: Environment },
): Promise<ReindexView> {
  const kb = await requireKnowledgeBase(deps, caller, request.agentId, request.knowledgeBaseId);
  const result = await startKnowledgeBaseReindex(deps, kb, request.environment ? [request.environment] : undefined);
  if (result.started) return result.view;
  if (result.reason === 'running') {
    const running = result.view;
    throw new ConflictError(
      'REINDEX_RUNNING',
      `A reindex of knowledge base ${request.knowledgeBaseId} is running` +
        (running
          ? ` (started ${running.startedAt}, ${running.reindexed + running.skipped + running.failed} of ${running.total} documents done)`
          : ''),
      [{ field: 'knowledgeBaseId', rule: 'reindex.running', message: 'wait for it to complete (GET …/reindex)' }],
    );
  }
  throw new NotFoundError('KNOWLEDGE_BASE_NOT_FOUND', `Knowledge base ${request.knowledgeBaseId} was not found`);
}

/** The knowledge base's last reindex, running or completed; 404 REINDEX_NOT_FOUND when it was never reindexed. */
export async function getKnowledgeBaseReindex(
  deps: Pick<DashboardDeps, 'agents' | 'knowledgeBases'>,
  caller: Caller,
  agentId: string,
  knowledgeBaseId: string,
): Promise<ReindexView> {
  const view = reindexView(await requireKnowledgeBase(deps, caller, agentId, knowledgeBaseId));
  if (!view) throw new NotFoundError('REINDEX_NOT_FOUND', `Knowledge base ${knowledgeBaseId} was never reindexed`);
  return view;
}

/**
 * A new token of the caller's organization, never worth more than the caller (core/auth/grants.ts): its scopes among
 * the caller's, its agents (when restricted) among those the caller may use, its end no later than the caller's (an
 * end asked past it, or none asked, is the caller's end). It records who made it and the lineage it continues, so it
 * works only while they do. Every check runs before anything is stored.
 */
export async function createToken(
  deps: Pick<DashboardDeps, 'agents' | 'tokens' | 'clock' | 'ids'>,
  caller: Caller,
  request: { scopes: readonly Scope[]; agentIds?: readonly string[]; name?: string; expiresInDays?: number },
) {
  requireOwner(caller, 'manage tokens');
  const now = deps.clock.now();
  const { worth, issuer, lineage, rootSub } = issuerOf(caller, await callerToken(deps, caller));
  if (lineage.length > MAX_LINEAGE) {
    throw new ForbiddenError(`A token can only be made ${MAX_LINEAGE} tokens deep`, [
      { field: '', rule: 'lineage.depth', message: `this token is ${lineage.length - 1} tokens below its root` },
    ]);
  }
  const agentIds = request.agentIds ? [...new Set(request.agentIds)] : undefined;
  const asked =
    request.expiresInDays === undefined ? null : new Date(now.getTime() + request.expiresInDays * DAY_MS).toISOString();
  const expiresAt = earlierEnd(asked, worth.expiresAt);
  // Scopes and whole-organization only: a later end is clamped above, an agent it cannot use is the 404 below.
  const excess = excessOver({ scopes: request.scopes, ...(agentIds ? { agentIds } : {}), expiresAt }, worth).filter(
    (detail) => detail.rule !== 'agentIds.notHeld' || agentIds === undefined,
  );
  if (excess.length > 0) {
    const notHeld = [...new Set(request.scopes)].filter((scope) => !worth.scopes.includes(scope));
    throw new ForbiddenError(
      notHeld.length > 0
        ? `A token cannot create a token with a scope it does not hold: ${notHeld.join(', ')}`
        : 'A token restricted to agents can only create tokens restricted to some of its agents: give agentIds',
      excess,
    );
  }
  if (agentIds) {
    // In parallel, but the first unknown agent in request order is the one reported, whatever answers first.
    const checks = await Promise.allSettled(agentIds.map((agentId) => requireAgent(deps, caller, agentId)));
    const refused = checks.find((check) => check.status === 'rejected');
    if (refused) throw refused.reason;
  }
  const { token, record } = await issueToken(deps.tokens, {
    organizationId: caller.organizationId,
    tokenId: deps.ids.uuid(),
    scopes: request.scopes,
    ...(agentIds ? { agentIds } : {}),
    name: request.name ?? null,
    createdAt: now.toISOString(),
    expiresAt,
    issuer,
    lineage,
    ...(rootSub ? { rootSub } : {}),
  });
  const { status: _status, lastUsedAt: _lastUsedAt, ...view } = tokenView(record, now);
  return { token, ...view };
}

/**
 * The record of the token that is the caller (undefined for a person), by its hash (a consistent read; by its id, through
 * an index, for an authorizer answer cached before the hash was carried); 401 when it is gone meanwhile.
 */
async function callerToken(deps: Pick<DashboardDeps, 'tokens'>, caller: Caller): Promise<TokenRecord | undefined> {
  if (isPerson(caller)) return undefined;
  const record = caller.tokenHash
    ? await deps.tokens.getByHash(caller.tokenHash)
    : await deps.tokens.getById(caller.organizationId, caller.tokenId);
  if (!record || record.tokenId !== caller.tokenId) throw new UnauthorizedError();
  return record;
}

/**
 * A token as the dashboard lists it: never the secret nor its hash, its first 8 characters instead (null for tokens
 * made before they were kept); `status` is `expired` from its `expiresAt` on.
 */
export function tokenView(record: TokenRecord, now: Date) {
  return {
    tokenId: record.tokenId,
    name: record.name,
    prefix: record.prefix ?? null,
    scopes: record.scopes,
    agentIds: record.agentIds ?? null,
    createdAt: record.createdAt,
    expiresAt: record.expiresAt ?? null,
    lastUsedAt: record.lastUsedAt ?? null,
    createdBy: createdBy(record),
    status: isExpired(record, now) ? ('expired' as const) : ('active' as const),
  };
}

/** Who made a token, as a list shows it: the person's e-mail or the token's id; null when no one is recorded. */
function createdBy(record: TokenRecord) {
  const { issuer } = record;
  if (!issuer) return null;
  return issuer.kind === 'person'
    ? { kind: 'person' as const, email: issuer.email }
    : { kind: 'token' as const, tokenId: issuer.tokenId };
}

/** The organization's tokens, newest first. Managing tokens is the whole organization's: a restricted token gets 403. */
export async function listTokens(deps: Pick<DashboardDeps, 'tokens' | 'clock'>, caller: Caller) {
  requireWholeOrganization(caller, 'list tokens');
  requireOwner(caller, 'manage tokens');
  const now = deps.clock.now();
  const tokens = (await deps.tokens.list(caller.organizationId)).sort(
    (a, b) => b.createdAt.localeCompare(a.createdAt) || a.tokenId.localeCompare(b.tokenId),
  );
  return { data: tokens.map((token) => tokenView(token, now)), count: tokens.length };
}

/**
 * Revokes one of the organization's tokens (it may be the caller's own) and every token made from it: none of them
 * authenticates from then on (in AWS once the authorizer's cache of them ends, at most 60 s; their lineage is checked
 * at each authentication, so one this clean-up misses is refused all the same). An owner signed in revokes any token;
 * a token itself and the tokens no wider than itself (core/auth/grants.ts). 404 TOKEN_NOT_FOUND for an id the
 * organization has not.
 */
export async function revokeToken(deps: Pick<DashboardDeps, 'tokens' | 'clock'>, caller: Caller, tokenId: string) {
  requireWholeOrganization(caller, 'revoke tokens');
  requireOwner(caller, 'manage tokens');
  const token = await deps.tokens.getById(caller.organizationId, tokenId);
  if (!token) throw new NotFoundError('TOKEN_NOT_FOUND', `Token ${tokenId} was not found`);
  requireRevocable(caller, await callerToken(deps, caller), token);
  await deps.tokens.delete(token.tokenHash);
  const descendants = await revokeTokensWhere(deps, caller.organizationId, (t) =>
    (t.lineage ?? []).includes(token.tokenHash),
  );
  return { tokenId, revokedAt: deps.clock.now().toISOString(), descendantsRevoked: descendants };
}

/** Deletes the organization's tokens that `matches` picks; how many. */
export async function revokeTokensWhere(
  deps: Pick<DashboardDeps, 'tokens'>,
  organizationId: string,
  matches: (token: TokenRecord) => boolean,
): Promise<number> {
  const doomed = (await deps.tokens.list(organizationId)).filter(matches);
  await Promise.all(doomed.map((t) => deps.tokens.delete(t.tokenHash)));
  return doomed.length;
}
