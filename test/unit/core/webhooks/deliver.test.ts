/**
 * The delivery worker's rules (core/webhooks/deliver.ts) with in-memory stores and a clock the test moves: who gets
 * an event, what an attempt records, when the next one is queued, and when an endpoint is disabled.
 */

import { runWebhookMessage, type WebhookDeliveryDeps } from '#core/webhooks/deliver';
import type { WebhookAttemptRecord, WebhookEndpointRecord } from '#core/webhooks/endpoint';
import { documentStatusEvent, type StatusEvent } from '#core/webhooks/events';
import { OutboundError, type OutboundRequest } from '#ports/flows';
import type { WebhookEndpointStore, WebhookQueueMessage } from '#ports/webhooks';

const ORG = 'org-1';
const AGENT = '11111111-1111-4111-8111-111111111111';
const OTHER_AGENT = '22222222-2222-4222-8222-222222222222';

function endpoint(id: string, overrides: Partial<WebhookEndpointRecord> = {}): WebhookEndpointRecord {
  return {
    organizationId: ORG,
    endpointId: id,
    url: `https://hooks.example.com/${id}`,
    events: ['document.ready', 'document.failed'],
    enabled: true,
    secrets: {
      current: { secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`, createdAt: '2026-01-01T00:00:00Z' },
    },
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

const event: StatusEvent = documentStatusEvent({
  organizationId: ORG,
  agentId: AGENT,
  environment: 'production',
  knowledgeBaseId: '33333333-3333-4333-8333-333333333333',
  documentId: '44444444-4444-4444-8444-444444444444',
  uploadId: '55555555-5555-4555-8555-555555555555',
  fileName: 'a.txt',
  status: 'ready',
  error: null,
  chunkCount: 2,
  updatedAt: '2026-11-29T07:00:00.000Z',
});

function harness(records: WebhookEndpointRecord[], answer: (request: OutboundRequest) => Promise<{ status: number }>) {
  const endpoints = new Map(records.map((r) => [r.endpointId, r]));
  let now = new Date('2026-11-29T08:00:00.000Z');
  const sent: { message: WebhookQueueMessage; delaySeconds?: number }[] = [];
  const attempts: WebhookAttemptRecord[] = [];
  const requests: OutboundRequest[] = [];
  const store: WebhookEndpointStore = {
    put: async (r) => void endpoints.set(r.endpointId, r),
    get: async (_org, id) => endpoints.get(id),
    list: async () => [...endpoints.values()],
    replace: async () => true,
    delete: async (_org, id) => endpoints.delete(id),
    replaceSecrets: async () => true,
    recordDelivered: async (_org, id, at) => {
      const { failingSince: _, ...rest } = endpoints.get(id) as WebhookEndpointRecord;
      endpoints.set(id, { ...rest, lastDeliveryAt: at });
    },
    recordFailed: async (_org, id, at, disableIfFailingSince) => {
      const r = endpoints.get(id);
      if (!r) return undefined;
      const failingSince = r.failingSince ?? at;
      const disable = r.enabled && failingSince <= disableIfFailingSince;
      const next = { ...r, failingSince, ...(disable ? { enabled: false, disabledReason: 'failing' as const } : {}) };
      endpoints.set(id, next);
      return next;
    },
  };
  const deps: WebhookDeliveryDeps = {
    webhookEndpoints: store,
    webhookDeliveries: { record: async (a) => void attempts.push(a), list: async () => ({ attempts: [] }) },
    webhookQueue: { send: async (message, options) => void sent.push({ message, ...options }) },
    http: {
      request: async (request) => {
        requests.push(request);
        return { ...(await answer(request)), body: '' };
      },
    },
    clock: { now: () => now },
    webhookSettings: { retryDelaysSeconds: [60, 3600], disableAfterSeconds: 86_400, timeoutMs: 10_000 },
  };
  return {
    deps,
    endpoints,
    sent,
    attempts,
    requests,
    advance: (ms: number) => {
      now = new Date(now.getTime() + ms);
    },
  };
}

it('fans an event out to the enabled endpoints subscribed to its type and scoped to its agent, or to none', async () => {
  const h = harness(
    [
      endpoint('all'),
      endpoint('mine', { agentId: AGENT }),
      endpoint('other-agent', { agentId: OTHER_AGENT }),
      endpoint('other-type', { events: ['knowledge_base.deleted'] }),
      endpoint('disabled', { enabled: false, disabledReason: 'manual' }),
    ],
    async () => ({ status: 204 }),
  );
  expect(await runWebhookMessage(h.deps, { kind: 'webhook-event', event })).toBe('fanned-out');
  expect(h.sent.map(({ message }) => message.kind === 'webhook-delivery' && message.endpointId)).toEqual([
    'all',
    'mine',
  ]);
});

it('records a delivered attempt and queues none after it', async () => {
  const h = harness([endpoint('a')], async () => ({ status: 200 }));
  expect(await runWebhookMessage(h.deps, { kind: 'webhook-delivery', endpointId: 'a', event, attempt: 1 })).toBe(
    'delivered',
  );
  expect(h.requests[0].headers?.['webhook-id']).toBe(event.id);
  expect(h.attempts).toEqual([
    expect.objectContaining({ outcome: 'delivered', statusCode: 200, error: null, attempt: 1, nextAttemptAt: null }),
  ]);
  expect(h.sent).toEqual([]);
  expect(h.endpoints.get('a')?.lastDeliveryAt).toBe('2026-11-29T08:00:00.000Z');
});

it('queues a failed attempt again after the schedule’s wait, and none once the schedule has run out', async () => {
  const h = harness([endpoint('a')], async () => ({ status: 503 }));
  await runWebhookMessage(h.deps, { kind: 'webhook-delivery', endpointId: 'a', event, attempt: 1 });
  expect(h.sent).toEqual([
    {
      message: expect.objectContaining({ attempt: 2, notBefore: '2026-11-29T08:01:00.000Z' }),
      delaySeconds: 60,
    },
  ]);
  expect(h.attempts[0]).toMatchObject({ outcome: 'failed', statusCode: 503, error: { code: 'ENDPOINT_STATUS' } });

  // The second wait (an hour) is longer than SQS's 15 minutes: sent with the longest delay, served in hops.
  await runWebhookMessage(h.deps, { kind: 'webhook-delivery', endpointId: 'a', event, attempt: 2 });
  expect(h.sent[1].delaySeconds).toBe(900);
  const hop = h.sent[1].message;
  expect(await runWebhookMessage(h.deps, hop)).toBe('waiting');
  expect(h.sent[2]).toEqual({ message: hop, delaySeconds: 900 });

  await runWebhookMessage(h.deps, { kind: 'webhook-delivery', endpointId: 'a', event, attempt: 3 });
  expect(h.attempts.at(-1)).toMatchObject({ attempt: 3, outcome: 'failed', nextAttemptAt: null });
  expect(h.sent).toHaveLength(3);
});

it('records a refused target as a failure without a status code', async () => {
  const h = harness([endpoint('a')], async () => {
    throw new OutboundError('TARGET_REFUSED', 'Refused the outbound target x: it resolves to a private address');
  });
  await runWebhookMessage(h.deps, { kind: 'webhook-delivery', endpointId: 'a', event, attempt: 1 });
  expect(h.attempts[0]).toMatchObject({ outcome: 'failed', statusCode: null, error: { code: 'TARGET_REFUSED' } });
});

it('disables an endpoint whose failures have lasted a day, and queues no further attempt', async () => {
  const h = harness([endpoint('a', { failingSince: '2026-11-28T07:59:59.000Z' })], async () => ({ status: 500 }));
  await runWebhookMessage(h.deps, { kind: 'webhook-delivery', endpointId: 'a', event, attempt: 1 });
  expect(h.endpoints.get('a')).toMatchObject({ enabled: false, disabledReason: 'failing' });
  expect(h.attempts[0].nextAttemptAt).toBeNull();
  expect(h.sent).toEqual([]);
  // A delivery queued before it was disabled is dropped, unsent and unrecorded.
  expect(await runWebhookMessage(h.deps, { kind: 'webhook-delivery', endpointId: 'a', event, attempt: 2 })).toBe(
    'skipped',
  );
  expect(h.requests).toHaveLength(1);
});

it('ends the failure streak with a delivered attempt', async () => {
  let status = 500;
  const h = harness([endpoint('a')], async () => ({ status }));
  await runWebhookMessage(h.deps, { kind: 'webhook-delivery', endpointId: 'a', event, attempt: 1 });
  expect(h.endpoints.get('a')?.failingSince).toBe('2026-11-29T08:00:00.000Z');
  status = 204;
  h.advance(60_000);
  await runWebhookMessage(h.deps, { kind: 'webhook-delivery', endpointId: 'a', event, attempt: 2 });
  expect(h.endpoints.get('a')?.failingSince).toBeUndefined();
});
