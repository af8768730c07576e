/**
 * The dashboard's webhook endpoints (docs/webhooks.md): register, list, read, change, delete, rotate the secret. An
 * organization's endpoints receive the events of all its agents, or, with `agentId`, of one. A token restricted to
 * agents sees and manages only the endpoints of its agents; endpoints of the whole organization are the whole
 * organization's tokens' (and people's). Registering, changing, deleting and rotating are for owners (a member: 403),
 * as the callback secret is: the secret signs what the organization's receivers trust.
 *
 * Primary course of a registration:
 * 1. The caller is an owner; an `agentId` names an agent the caller may use (else 404); without one, the caller acts
 *    for the whole organization (a restricted token: 403).
 * 2. The URL passes the outbound guard now (no private address unless the deployment allows it): 400 otherwise. The
 *    delivery worker checks it again at each attempt, at the address it connects to.
 * 3. At most MAX_WEBHOOK_ENDPOINTS per organization (409); the endpoint is stored enabled with a new secret, which this
 *    answer is the only one to carry.
 */
import { requireOwner } from '#core/auth/people';
import { ConflictError, NotFoundError, ValidationError } from '#core/errors';
import { newCallbackSecret, rotatedSecrets } from '#core/flows/callback-signing';
import { type Caller, mayUseAgent, requireAgent, requireWholeOrganization } from '#core/tenancy/tenancy';
import { OutboundError } from '#ports/flows';
import type { Clock, IdGenerator } from '#ports/services';
import type { AgentStore } from '#ports/stores';
import type { WebhookDeliveryLog, WebhookEndpointStore, WebhookUrlCheck } from '#ports/webhooks';
import { endpointView, MAX_WEBHOOK_ENDPOINTS, type WebhookEndpointRecord } from './endpoint';
import type { WebhookEventType } from './events';

export interface WebhookEndpointDeps {
  readonly webhookEndpoints: WebhookEndpointStore;
  readonly agents: Pick<AgentStore, 'get'>;
  readonly urlCheck: WebhookUrlCheck;
  readonly clock: Clock;
  readonly ids: IdGenerator;
}

export interface NewEndpoint {
  readonly url: string;
  readonly events: readonly WebhookEventType[];
  readonly agentId?: string;
  readonly description?: string;
}

/** Reads and conditional writes one change makes at most before it answers 409. */
const ATTEMPTS = 3;

export async function createWebhookEndpoint(deps: WebhookEndpointDeps, caller: Caller, input: NewEndpoint) {
  requireOwner(caller, 'register a webhook endpoint');
  if (input.agentId !== undefined) await requireAgent(deps, caller, input.agentId);
  else requireWholeOrganization(caller, 'register a webhook endpoint for every agent (give agentId)');
  await checkUrl(deps, input.url);
  const existing = await deps.webhookEndpoints.list(caller.organizationId);
  if (existing.length >= MAX_WEBHOOK_ENDPOINTS) {
    throw new ConflictError(
      'WEBHOOK_ENDPOINT_LIMIT',
      `An organization has at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints: delete one first`,
    );
  }
  const now = deps.clock.now().toISOString();
  const record: WebhookEndpointRecord = {
    organizationId: caller.organizationId,
    endpointId: deps.ids.uuid(),
    url: input.url,
    events: uniqueEvents(input.events),
    ...(input.agentId !== undefined ? { agentId: input.agentId } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    enabled: true,
    secrets: { current: { secret: newCallbackSecret(), createdAt: now } },
    createdAt: now,
    updatedAt: now,
  };
  await deps.webhookEndpoints.put(record);
  return { ...endpointView(record), secret: record.secrets.current.secret };
}

export async function listWebhookEndpoints(deps: Pick<WebhookEndpointDeps, 'webhookEndpoints'>, caller: Caller) {
  const records = await deps.webhookEndpoints.list(caller.organizationId);
  return { endpoints: records.filter((record) => visibleTo(caller, record)).map(endpointView) };
}

export async function getWebhookEndpoint(
  deps: Pick<WebhookEndpointDeps, 'webhookEndpoints'>,
  caller: Caller,
  endpointId: string,
) {
  return endpointView(await requireEndpoint(deps, caller, endpointId));
}

export interface EndpointChanges {
  readonly url?: string;
  readonly events?: readonly WebhookEventType[];
  readonly description?: string | null;
  /** true: delivers again (a disabled endpoint's failure streak starts over); false: stops until enabled. */
  readonly enabled?: boolean;
}

export async function updateWebhookEndpoint(
  deps: WebhookEndpointDeps,
  caller: Caller,
  endpointId: string,
  changes: EndpointChanges,
) {
  requireOwner(caller, 'change a webhook endpoint');
  if (changes.url !== undefined) await checkUrl(deps, changes.url);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const record = await requireEndpoint(deps, caller, endpointId);
    const now = deps.clock.now().toISOString();
    const { disabledReason, disabledAt, failingSince, description, ...rest } = record;
    const next: WebhookEndpointRecord = {
      ...rest,
      ...(changes.url !== undefined ? { url: changes.url } : {}),
      ...(changes.events !== undefined ? { events: uniqueEvents(changes.events) } : {}),
      ...optional('description', changes.description === undefined ? description : changes.description),
      ...availability(record, changes.enabled, now),
      updatedAt: now,
    };
    if (await deps.webhookEndpoints.replace(next, record.updatedAt)) return endpointView(next);
  }
  throw conflict(endpointId);
}

export async function deleteWebhookEndpoint(
  deps: Pick<WebhookEndpointDeps, 'webhookEndpoints'>,
  caller: Caller,
  endpointId: string,
) {
  requireOwner(caller, 'delete a webhook endpoint');
  await requireEndpoint(deps, caller, endpointId);
  await deps.webhookEndpoints.delete(caller.organizationId, endpointId);
  return { endpointId, deleted: true as const };
}

/**
 * A new secret signs the endpoint's deliveries, shown only in this answer; the one it replaces signs beside it for 24
 * hours (PREVIOUS_SECRET_VALID_MS), so a receiver switches without losing a delivery.
 */
export async function rotateWebhookEndpointSecret(
  deps: Pick<WebhookEndpointDeps, 'webhookEndpoints' | 'clock'>,
  caller: Caller,
  endpointId: string,
) {
  requireOwner(caller, "rotate a webhook endpoint's secret");
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const record = await requireEndpoint(deps, caller, endpointId);
    const secrets = rotatedSecrets(record.secrets, deps.clock.now());
    if (
      await deps.webhookEndpoints.replaceSecrets(
        caller.organizationId,
        endpointId,
        secrets,
        record.secrets.current.secret,
      )
    ) {
      return {
        endpointId,
        secret: secrets.current.secret,
        createdAt: secrets.current.createdAt,
        previousSecretValidUntil: secrets.previous?.validUntil ?? null,
      };
    }
  }
  throw conflict(endpointId);
}

/** GET …/deliveries: the endpoint's attempts, newest first, a page at a time. */
export async function listWebhookDeliveries(
  deps: Pick<WebhookEndpointDeps, 'webhookEndpoints'> & { readonly webhookDeliveries: WebhookDeliveryLog },
  caller: Caller,
  endpointId: string,
  page: { readonly limit?: number; readonly nextToken?: string },
) {
  await requireEndpoint(deps, caller, endpointId);
  const after = page.nextToken === undefined ? undefined : decodeToken(page.nextToken, endpointId);
  const { attempts, next } = await deps.webhookDeliveries.list(endpointId, { limit: page.limit ?? 50, after });
  return {
    deliveries: attempts.map(({ endpointId: _, ...attempt }) => attempt),
    nextToken: next === undefined ? null : encodeToken(next, endpointId),
  };
}

async function requireEndpoint(
  deps: Pick<WebhookEndpointDeps, 'webhookEndpoints'>,
  caller: Caller,
  endpointId: string,
): Promise<WebhookEndpointRecord> {
  const record = await deps.webhookEndpoints.get(caller.organizationId, endpointId);
  if (!record || !visibleTo(caller, record)) {
    throw new NotFoundError('WEBHOOK_ENDPOINT_NOT_FOUND', `Webhook endpoint ${endpointId} was not found`);
  }
  return record;
}

/** A restricted token sees the endpoints of its agents only; an organization-wide endpoint is not one of them. */
function visibleTo(caller: Caller, record: WebhookEndpointRecord): boolean {
  if (caller.agentIds === undefined) return true;
  return record.agentId !== undefined && mayUseAgent(caller, record.agentId);
}

async function checkUrl(deps: Pick<WebhookEndpointDeps, 'urlCheck'>, url: string): Promise<void> {
  try {
    await deps.urlCheck.check(url);
  } catch (error) {
    if (!(error instanceof OutboundError)) throw error;
    throw new ValidationError([{ field: 'url', rule: 'url.outboundGuard', message: error.message }]);
  }
}

/**
 * `enabled` and what goes with it after a PATCH: enabling (true) starts over, the failure streak that disabled it
 * forgotten; disabling by hand (false) says so; no change keeps what the endpoint had.
 */
function availability(record: WebhookEndpointRecord, enabled: boolean | undefined, now: string) {
  if (enabled === true) return { enabled: true };
  if (enabled === false && record.enabled)
    return { enabled: false, disabledReason: 'manual' as const, disabledAt: now };
  return {
    enabled: record.enabled,
    ...optional('disabledReason', record.disabledReason),
    ...optional('disabledAt', record.disabledAt),
    ...optional('failingSince', record.failingSince),
  };
}

function optional<K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } {
  return (value === undefined || value === null ? {} : { [key]: value }) as { [P in K]?: V };
}

function uniqueEvents(events: readonly WebhookEventType[]): WebhookEventType[] {
  return [...new Set(events)];
}

function conflict(endpointId: string) {
  return new ConflictError(
    'WEBHOOK_ENDPOINT_CONFLICT',
    `Webhook endpoint ${endpointId} changed during each of ${ATTEMPTS} tries: send the request again`,
  );
}

/** The page token: the last attempt's sort key, bound to its endpoint, opaque to the caller. */
function encodeToken(position: string, endpointId: string): string {
  return Buffer.from(JSON.stringify({ e: endpointId, p: position }), 'utf8').toString('base64url');
}

function decodeToken(token: string, endpointId: string): string {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    body = undefined;
  }
  const { e, p } = (body ?? {}) as Record<string, unknown>;
  if (e !== endpointId || typeof p !== 'string' || p.length > 300) {
    throw new ValidationError([
      { field: 'nextToken', rule: 'nextToken.format', message: 'nextToken is not a token of this list' },
    ]);
  }
  return p;
}
