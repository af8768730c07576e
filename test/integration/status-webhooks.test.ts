/**
 * Status webhooks (docs/webhooks.md) against the local runtime: a receiver on loopback (let through by
 * WEBHOOK_ALLOW_LOOPBACK, while private networks stay refused) verifies each delivery with the `standardwebhooks`
 * package, as a receiver would. Retries are shortened to 1 s and the failure streak that disables an endpoint to 6 s.
 * Each endpoint is scoped to an agent of its own, so the tests do not see each other's events.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { RESPONSES } from '#handlers/http/webhooks/responses';
import { createDataset, type Dataset, putFile, type UploadLink, uploadDocument, zipOf } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

jest.setTimeout(120_000);

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

interface Endpoint {
  endpointId: string;
  url: string;
  events: string[];
  agentId: string | null;
  enabled: boolean;
  disabledReason: string | null;
  failingSince: string | null;
  lastDeliveryAt: string | null;
  secret?: string;
}

interface Attempt {
  messageId: string;
  eventType: string;
  attempt: number;
  outcome: 'delivered' | 'failed';
  statusCode: number | null;
  error: { code: string } | null;
  nextAttemptAt: string | null;
}

let service: TestService;
let call: ReturnType<typeof client>;
let other: ReturnType<typeof client>;
let receiver: Server;
let baseUrl: string;
/** What the receiver got, by path. */
const received: Record<string, Received[]> = {};

beforeAll(async () => {
  // /flaky answers 503 twice, then 204; /down always 500; anything else 204.
  receiver = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const path = request.url ?? '';
      received[path] ??= [];
      received[path].push({ headers: request.headers, body: Buffer.concat(parts).toString('utf8') });
      const status = path === '/down' ? 500 : path === '/flaky' && received[path].length <= 2 ? 503 : 204;
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
  baseUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  service = await startService({
    env: {
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1,1,1,1,1,1,1,1,1',
      WEBHOOK_DISABLE_AFTER_SECONDS: '6',
    },
  });
  call = client(service);
  other = client(service, service.tokens[1]);
}, 90_000);

afterAll(async () => {
  await service?.stop();
  receiver?.closeAllConnections();
  await new Promise<void>((done) => receiver?.close(() => done()));
});

async function register(dataset: Dataset, path: string, events = ['document.ready', 'document.failed']) {
  const created = await call<Endpoint & { secret: string }>('POST', '/dashboard/webhook-endpoints', {
    body: { url: `${baseUrl}${path}`, events, agentId: dataset.agentId },
  });
  expect(created.status).toBe(201);
  conforms('CreateWebhookEndpoint', created.body);
  return created.body;
}

function deliveriesTo(path: string, count: number, ms = 30_000): Promise<Received[]> {
  return pollUntil(
    async () => received[path] ?? [],
    (list) => list.length >= count,
    ms,
  );
}

async function attemptsOf(endpointId: string, query: Record<string, string> = {}) {
  const listed = await call<{ deliveries: Attempt[]; nextToken: string | null }>(
    'GET',
    `/dashboard/webhook-endpoints/${endpointId}/deliveries`,
    { query },
  );
  expect(listed.status).toBe(200);
  conforms('ListWebhookDeliveries', listed.body);
  return listed.body;
}

/** The answer's body is what the route's response schema (the OpenAPI document's) admits. */
function conforms(routeId: string, body: unknown) {
  const { success, ...rest } = body as { success: boolean };
  expect(success).toBe(true);
  expect(RESPONSES[routeId].safeParse(rest)).toEqual(expect.objectContaining({ success: true }));
}

const verify = (secret: string, delivery: Received) =>
  new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>);

it('registers an endpoint and shows its secret only in the answer that made it', async () => {
  const dataset = await createDataset(call);
  const created = await register(dataset, '/registered');
  expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(created).toMatchObject({
    enabled: true,
    agentId: dataset.agentId,
    events: ['document.ready', 'document.failed'],
  });

  const read = await call<Endpoint>('GET', `/dashboard/webhook-endpoints/${created.endpointId}`);
  expect(read.status).toBe(200);
  expect(read.body).not.toHaveProperty('secret');
  conforms('GetWebhookEndpoint', read.body);
  expect(JSON.stringify(read.body)).not.toContain(created.secret);
  const listed = await call<{ endpoints: Endpoint[] }>('GET', '/dashboard/webhook-endpoints');
  expect(listed.body.endpoints.map((e) => e.endpointId)).toContain(created.endpointId);
  conforms('ListWebhookEndpoints', listed.body);
  expect(JSON.stringify(listed.body)).not.toContain(created.secret);
  // Another organization does not see it.
  expect((await other('GET', `/dashboard/webhook-endpoints/${created.endpointId}`)).status).toBe(404);
  expect((await other('DELETE', `/dashboard/webhook-endpoints/${created.endpointId}`)).status).toBe(404);

  const deleted = await call('DELETE', `/dashboard/webhook-endpoints/${created.endpointId}`);
  expect(deleted.status).toBe(200);
  conforms('DeleteWebhookEndpoint', deleted.body);
  expect((await call('GET', `/dashboard/webhook-endpoints/${created.endpointId}`)).status).toBe(404);
});

it.each([
  ['a private network address', 'http://10.1.2.3/hooks'],
  ['the cloud metadata endpoint', 'http://169.254.169.254/latest/meta-data'],
  ['a carrier-grade NAT address', 'http://100.64.0.1/hooks'],
])('refuses %s as an endpoint URL with a 400 naming the url', async (_what, url) => {
  const refused = await call<{ success: false; error: { code: string; details: { field: string; rule: string }[] } }>(
    'POST',
    '/dashboard/webhook-endpoints',
    { body: { url, events: ['document.ready'] } },
  );
  expect(refused.status).toBe(400);
  expect(refused.body.error.code).toBe('VALIDATION_ERROR');
  expect(refused.body.error.details).toEqual([expect.objectContaining({ field: 'url', rule: 'url.outboundGuard' })]);
});

it('refuses an unknown event type and a URL that is not http(s)', async () => {
  const badEvent = await call('POST', '/dashboard/webhook-endpoints', {
    body: { url: `${baseUrl}/x`, events: ['document.deleted'] },
  });
  expect(badEvent.status).toBe(400);
  const badUrl = await call('POST', '/dashboard/webhook-endpoints', {
    body: { url: 'ftp://example.com/x', events: ['document.ready'] },
  });
  expect(badUrl.status).toBe(400);
});

it('delivers a document.ready signed so that standardwebhooks verifies it, and a wrong signature fails', async () => {
  const dataset = await createDataset(call);
  const endpoint = await register(dataset, '/ok');
  const { link } = await uploadDocument(call, dataset, { fileName: 'manual.txt' }, 'How to reset the router.');

  const [delivery] = await deliveriesTo('/ok', 1);
  const payload = verify(endpoint.secret, delivery) as {
    type: string;
    timestamp: string;
    data: Record<string, unknown>;
  };
  expect(payload).toEqual({
    type: 'document.ready',
    timestamp: expect.any(String),
    data: {
      agentId: dataset.agentId,
      environment: dataset.environment,
      knowledgeBaseId: dataset.knowledgeBaseId,
      documentId: link.documentId,
      customDocumentId: null,
      fileName: 'manual.txt',
      status: 'ready',
      chunkCount: 1,
    },
  });
  expect(delivery.headers['webhook-id']).toMatch(/^msg_/);
  expect(delivery.headers['content-type']).toBe('application/json');

  // A body changed on the way, or a signature made with another secret, is refused by the receiver's check.
  const tampered = { ...delivery, body: delivery.body.replace('ready', 'failed') };
  expect(() => verify(endpoint.secret, tampered)).toThrow(WebhookVerificationError);
  const otherSecret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  expect(() => verify(otherSecret, delivery)).toThrow(WebhookVerificationError);
  const forged = { ...delivery, headers: { ...delivery.headers, 'webhook-signature': 'v1,AAAA' } };
  expect(() => verify(endpoint.secret, forged)).toThrow(WebhookVerificationError);

  const { deliveries } = await pollUntil(
    () => attemptsOf(endpoint.endpointId),
    (page) => page.deliveries.length >= 1,
  );
  expect(deliveries).toEqual([
    expect.objectContaining({
      messageId: delivery.headers['webhook-id'],
      eventType: 'document.ready',
      attempt: 1,
      outcome: 'delivered',
      statusCode: 204,
      error: null,
      nextAttemptAt: null,
    }),
  ]);
});

it('delivers a document.failed with the error code of the failure', async () => {
  const dataset = await createDataset(call);
  const endpoint = await register(dataset, '/failed-docs');
  await uploadDocument(call, dataset, { fileName: 'blank.txt' }, '   \n  ');

  const [delivery] = await deliveriesTo('/failed-docs', 1);
  expect(verify(endpoint.secret, delivery)).toMatchObject({
    type: 'document.failed',
    data: { status: 'failed', fileName: 'blank.txt', error: { code: 'EMPTY_DOCUMENT' } },
  });
});

it('retries a failing endpoint with the same webhook-id and lists every attempt, newest first', async () => {
  const dataset = await createDataset(call);
  const endpoint = await register(dataset, '/flaky');
  await uploadDocument(call, dataset, { fileName: 'flaky.txt' }, 'Retried until delivered.');

  const attempts = await deliveriesTo('/flaky', 3);
  const ids = new Set(attempts.map((attempt) => attempt.headers['webhook-id']));
  expect(ids.size).toBe(1);
  for (const attempt of attempts) expect(verify(endpoint.secret, attempt)).toMatchObject({ type: 'document.ready' });

  const { deliveries } = await pollUntil(
    () => attemptsOf(endpoint.endpointId),
    (page) => page.deliveries.length >= 3,
  );
  expect(deliveries.map((d) => [d.attempt, d.outcome, d.statusCode])).toEqual([
    [3, 'delivered', 204],
    [2, 'failed', 503],
    [1, 'failed', 503],
  ]);
  expect(deliveries[1].error).toEqual(expect.objectContaining({ code: 'ENDPOINT_STATUS' }));
  expect(deliveries[1].nextAttemptAt).not.toBeNull();
  expect(deliveries[0].nextAttemptAt).toBeNull();

  // Paged: one at a time, the same order.
  const first = await attemptsOf(endpoint.endpointId, { limit: '1' });
  expect(first.deliveries.map((d) => d.attempt)).toEqual([3]);
  const second = await attemptsOf(endpoint.endpointId, { limit: '1', nextToken: String(first.nextToken) });
  expect(second.deliveries.map((d) => d.attempt)).toEqual([2]);

  const after = await call<Endpoint>('GET', `/dashboard/webhook-endpoints/${endpoint.endpointId}`);
  expect(after.body).toMatchObject({ enabled: true, failingSince: null, lastDeliveryAt: expect.any(String) });
});

it('disables an endpoint whose deliveries fail for the whole streak, and PATCH enabled: true enables it again', async () => {
  const dataset = await createDataset(call);
  const endpoint = await register(dataset, '/down');
  await uploadDocument(call, dataset, { fileName: 'down.txt' }, 'Nobody answers.');

  const disabled = await pollUntil(
    () => call<Endpoint>('GET', `/dashboard/webhook-endpoints/${endpoint.endpointId}`),
    (r) => r.body.enabled === false,
    40_000,
  );
  expect(disabled.body).toMatchObject({ enabled: false, disabledReason: 'failing', failingSince: expect.any(String) });
  const { deliveries } = await attemptsOf(endpoint.endpointId);
  expect(deliveries.length).toBeGreaterThanOrEqual(3);
  expect(deliveries.every((d) => d.outcome === 'failed' && d.statusCode === 500)).toBe(true);
  // The attempt that disabled it queues no other.
  expect(deliveries[0].nextAttemptAt).toBeNull();
  const sent = (received['/down'] ?? []).length;

  const enabled = await call<Endpoint>('PATCH', `/dashboard/webhook-endpoints/${endpoint.endpointId}`, {
    body: { enabled: true },
  });
  expect(enabled.status).toBe(200);
  conforms('UpdateWebhookEndpoint', enabled.body);
  expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
  // Nothing was queued for it while it was disabled.
  expect((received['/down'] ?? []).length).toBe(sent);
});

it('rotates the secret: the next delivery is signed by the new secret and, for 24 hours, by the old one too', async () => {
  const dataset = await createDataset(call);
  const endpoint = await register(dataset, '/rotated');
  const rotated = await call<{ secret: string; previousSecretValidUntil: string }>(
    'POST',
    `/dashboard/webhook-endpoints/${endpoint.endpointId}/secret`,
    { body: {} },
  );
  expect(rotated.status).toBe(201);
  conforms('RotateWebhookEndpointSecret', rotated.body);
  expect(rotated.body.secret).not.toBe(endpoint.secret);
  expect(Date.parse(rotated.body.previousSecretValidUntil) - Date.now()).toBeGreaterThan(23 * 3600_000);

  await uploadDocument(call, dataset, { fileName: 'rotated.txt' }, 'Signed twice.');
  const [delivery] = await deliveriesTo('/rotated', 1);
  expect(String(delivery.headers['webhook-signature']).split(' ')).toHaveLength(2);
  expect(verify(rotated.body.secret, delivery)).toMatchObject({ type: 'document.ready' });
  expect(verify(endpoint.secret, delivery)).toMatchObject({ type: 'document.ready' });
});

it('delivers zip_import.completed once the import is completed, with its file and failure counts', async () => {
  const dataset = await createDataset(call);
  const endpoint = await register(dataset, '/zips', ['zip_import.completed']);
  const link = await call<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...dataset, fileName: 'batch.zip' },
  });
  expect(link.status).toBe(200);
  await putFile(link.body, await zipOf({ 'a.txt': 'Alpha manual.', 'b.txt': 'Beta manual.', 'empty.txt': ' ' }));
  await call('POST', '/api/v1/knowledge/documents/upload-complete', { body: { uploadId: link.body.uploadId } });

  const [delivery] = await deliveriesTo('/zips', 1);
  expect(verify(endpoint.secret, delivery)).toEqual({
    type: 'zip_import.completed',
    timestamp: expect.any(String),
    data: {
      agentId: dataset.agentId,
      environment: dataset.environment,
      knowledgeBaseId: dataset.knowledgeBaseId,
      zipJobId: link.body.zipJobId,
      status: 'completed',
      fileCount: 3,
      failedCount: 1,
    },
  });
  // What the event says, the import's own route says too.
  const job = await call<{ status: string; failedCount: number }>(
    'GET',
    `/api/v1/knowledge/zip-jobs/${link.body.zipJobId}`,
  );
  expect(job.body).toMatchObject({ status: 'completed', failedCount: 1 });
  // Every delivery of it carries the one webhook-id of the import's completion.
  const ids = new Set((received['/zips'] ?? []).map((d) => d.headers['webhook-id']));
  expect(ids.size).toBe(1);
});

it('delivers knowledge_base.deleted when the deletion job has removed the knowledge base', async () => {
  const dataset = await createDataset(call);
  const endpoint = await register(dataset, '/deleted-kbs', ['knowledge_base.deleted']);
  const deleted = await call(
    'DELETE',
    `/dashboard/agents/${dataset.agentId}/knowledge/bases/${dataset.knowledgeBaseId}`,
  );
  expect(deleted.status).toBe(202);

  const [delivery] = await deliveriesTo('/deleted-kbs', 1);
  expect(verify(endpoint.secret, delivery)).toEqual({
    type: 'knowledge_base.deleted',
    timestamp: expect.any(String),
    data: { agentId: dataset.agentId, knowledgeBaseId: dataset.knowledgeBaseId, name: 'Manuals', status: 'deleted' },
  });
  const gone = await call('GET', `/dashboard/agents/${dataset.agentId}/knowledge/bases/${dataset.knowledgeBaseId}`);
  expect(gone.status).toBe(404);
});

it('sends an endpoint scoped to an agent only that agent’s events', async () => {
  // Every delivery any scoped endpoint of this suite received is of its own agent.
  for (const [path, list] of Object.entries(received)) {
    const agents = new Set(list.map((d) => (JSON.parse(d.body) as { data: { agentId: string } }).data.agentId));
    expect([path, agents.size]).toEqual([path, 1]);
  }
});
