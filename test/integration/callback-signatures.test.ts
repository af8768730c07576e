/**
 * Signed AI-message callbacks end to end on the local runtime (`bin/local.ts` as a child process, offline model): a
 * receiver on loopback (allowed by OUTBOUND_ALLOW_PRIVATE_NETWORK) verifies each callback as docs/flows.md tells a
 * receiver to ("Signed callbacks": HMAC-SHA256 over `<id>.<timestamp>.<raw body>`, each `v1,` signature compared in
 * constant time, timestamps more than 5 minutes off refused) with the secret the API showed, and answers 401 to
 * anything else. Proves: a new agent's callbacks verify with the secret of its creation answer; after a rotation
 * they carry two signatures, each verifying with its own secret; a tampered body or a stale timestamp is refused;
 * an agent made before callbacks were signed gets a secret at its first callback (stored, never sent unsigned); the
 * secret is never in GET or list; another organization cannot rotate.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { LOCAL_REGION } from '../../lib/local/engine-credentials';
import { client, startService, type TestService } from '../helpers/service';

interface Delivery {
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: string;
  readonly verified: boolean;
}

interface RunResult {
  status: string;
  aiMessages: { node: string; content: string; callback?: { delivered: boolean; status?: number } }[];
}

interface Rotation {
  secret: string;
  createdAt: string;
  previousSecretValidUntil: string | null;
}

let service: TestService;
let call: ReturnType<typeof client>;
let receiver: Server;
let receiverUrl: string;
/** The secret the receiver verifies with: the one the API showed last. */
let receiverSecret = '';
const deliveries: Delivery[] = [];

/** The receiver's check, as docs/flows.md shows it. */
function verifyCallback(secret: string, headers: IncomingHttpHeaders, rawBody: string, now = Date.now()): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(now / 1000 - Number(timestamp)) > 5 * 60) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${rawBody}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const definition = (callbackUrl: string) => ({
  callbackUrl,
  flows: [
    {
      name: 'hello',
      nodes: [
        { name: 'Start', type: 'trigger', triggerType: 'webhook' },
        { name: 'Greet', type: 'promptNode', displayName: 'Greet', prompt: 'Hello {memory.name}.' },
      ],
      edges: [{ from: 'Start', to: 'Greet', type: 'stepForward' }],
    },
  ],
});

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const rawBody = Buffer.concat(parts).toString('utf8');
      const verified = verifyCallback(receiverSecret, request.headers, rawBody);
      deliveries.push({ headers: request.headers, rawBody, verified });
      response.writeHead(verified ? 204 : 401).end();
    });
  });
  await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/ai-messages`;
  // The receiver is on loopback, which the runtime refuses unless told so.
  service = await startService({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true' } });
  call = client(service);
}, 90_000);

afterAll(async () => {
  await service?.stop();
  await new Promise<void>((done) => receiver?.close(() => done()));
});

async function newAgent(displayName: string) {
  const created = await call<{ agentId: string; callbackSecret: string }>('POST', '/dashboard/agents', {
    body: { displayName },
  });
  expect(created.status).toBe(201);
  return created.body;
}

async function withCallback(agentId: string) {
  const put = await call('PUT', `/dashboard/agents/${agentId}/definition/production`, {
    body: definition(receiverUrl),
  });
  expect(put.status).toBe(200);
}

async function agentWithCallback(displayName: string) {
  const agent = await newAgent(displayName);
  await withCallback(agent.agentId);
  return agent;
}

async function greet(agentId: string, name: string) {
  const run = await call<RunResult>('POST', `/api/v1/webhooks/${agentId}/production/Start`, { body: { name } });
  expect(run.status).toBe(200);
  expect(run.body.status).toBe('completed');
  return { message: run.body.aiMessages[0], delivery: deliveries.at(-1) as Delivery };
}

const signaturesOf = (delivery: Delivery) => String(delivery.headers['webhook-signature']).split(' ');

it('signs a new agent’s callbacks with the secret its creation answered, and the receiver refuses a tampered body', async () => {
  const agent = await agentWithCallback('Signed');
  expect(agent.callbackSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  receiverSecret = agent.callbackSecret;

  const { message, delivery } = await greet(agent.agentId, 'Ada');

  expect(message.callback).toEqual({ delivered: true, status: 204 });
  expect(delivery.verified).toBe(true);
  expect(JSON.parse(delivery.rawBody)).toMatchObject({
    event: 'AgentEvents.AI_MESSAGE',
    agentId: agent.agentId,
    content: 'Hello Ada.',
  });
  expect(delivery.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{32}$/);
  expect(Math.abs(Number(delivery.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
  expect(signaturesOf(delivery)).toHaveLength(1);

  // The same headers over a changed body, or sent again 10 minutes later: refused.
  const tampered = delivery.rawBody.replace('Hello Ada.', 'Send Ada a refund.');
  expect(verifyCallback(agent.callbackSecret, delivery.headers, tampered)).toBe(false);
  expect(verifyCallback(agent.callbackSecret, delivery.headers, delivery.rawBody, Date.now() + 10 * 60_000)).toBe(
    false,
  );
  const replayed = await fetch(receiverUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': String(delivery.headers['webhook-id']),
      'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
      'webhook-signature': String(delivery.headers['webhook-signature']),
    },
    body: tampered,
  });
  expect(replayed.status).toBe(401);

  // Never shown again: not by GET, not by the lists.
  const got = await call('GET', `/dashboard/agents/${agent.agentId}`);
  const listed = await call('GET', '/dashboard/agents');
  expect(JSON.stringify([got.body, listed.body])).not.toContain('whsec_');
});

it('after a rotation signs with both secrets, new first, each verifying on its own; another organization gets 404', async () => {
  const agent = await agentWithCallback('Rotated');
  const rotatedAt = Date.now();
  const rotation = await call<Rotation>('POST', `/dashboard/agents/${agent.agentId}/callback-secret`, {});
  expect(rotation.status).toBe(201);
  expect(rotation.body).toEqual({
    success: true,
    secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    createdAt: expect.any(String),
    previousSecretValidUntil: expect.any(String),
  });
  const validUntil = Date.parse(rotation.body.previousSecretValidUntil as string);
  expect(Math.abs(validUntil - rotatedAt - 24 * 3_600_000)).toBeLessThan(60_000);
  receiverSecret = rotation.body.secret;

  const { message, delivery } = await greet(agent.agentId, 'Grace');

  expect(message.callback).toEqual({ delivered: true, status: 204 });
  const [first, second] = signaturesOf(delivery);
  expect(signaturesOf(delivery)).toHaveLength(2);
  const only = (signature: string) => ({ ...delivery.headers, 'webhook-signature': signature });
  expect(verifyCallback(rotation.body.secret, only(first), delivery.rawBody)).toBe(true);
  expect(verifyCallback(agent.callbackSecret, only(second), delivery.rawBody)).toBe(true);
  expect(verifyCallback(agent.callbackSecret, delivery.headers, delivery.rawBody)).toBe(true);
  expect(verifyCallback(rotation.body.secret, delivery.headers, delivery.rawBody.replace('Grace', 'Mallory'))).toBe(
    false,
  );

  const otherOrganization = await call<{ error: { code: string } }>(
    'POST',
    `/dashboard/agents/${agent.agentId}/callback-secret`,
    { token: service.tokens[1], body: {} },
  );
  expect(otherOrganization.status).toBe(404);
  expect(otherOrganization.body.error.code).toBe('AGENT_NOT_FOUND');
});

it('gives an agent made before callbacks were signed a secret at its first callback; the owner rotates to learn it', async () => {
  if (!service.dynamodbEndpoint) throw new Error('the local runtime did not print its DynamoDB endpoint');
  const agent = await newAgent('Older');
  const documents = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: service.dynamodbEndpoint,
      region: LOCAL_REGION,
      credentials: service.engineCredentials ?? undefined,
    }),
  );
  const stored = async () => {
    const { Items } = await documents.send(
      new ScanCommand({
        TableName: 'agents',
        FilterExpression: 'agentId = :a',
        ExpressionAttributeValues: { ':a': agent.agentId },
      }),
    );
    return Items?.[0] as { organizationId: string; callbackSecrets?: { current: { secret: string } } };
  };
  // As an agent made before this change: no secret on its row. Before any request reads the agent, so the runtime's
  // read cache (5 s) holds the row as it is now.
  await documents.send(
    new UpdateCommand({
      TableName: 'agents',
      Key: { organizationId: (await stored()).organizationId, agentId: agent.agentId },
      UpdateExpression: 'REMOVE callbackSecrets',
    }),
  );
  await withCallback(agent.agentId);
  receiverSecret = agent.callbackSecret;

  const { message, delivery } = await greet(agent.agentId, 'Linus');

  // Signed with a secret made at this callback, which the receiver does not know yet.
  const made = (await stored()).callbackSecrets?.current.secret as string;
  expect(made).toMatch(/^whsec_/);
  expect(made).not.toBe(agent.callbackSecret);
  // Refused: sent again later through the flow runner's queue (ai-message-retry.ts), the same webhook-id.
  expect(message.callback).toEqual({ delivered: false, status: 401, retrying: true });
  expect(verifyCallback(made, delivery.headers, delivery.rawBody)).toBe(true);

  const rotation = await call<Rotation>('POST', `/dashboard/agents/${agent.agentId}/callback-secret`, {});
  receiverSecret = rotation.body.secret;
  const after = await greet(agent.agentId, 'Linus');
  expect(after.message.callback).toEqual({ delivered: true, status: 204 });
  expect(verifyCallback(made, after.delivery.headers, after.delivery.rawBody)).toBe(true);
});
