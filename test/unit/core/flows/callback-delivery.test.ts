/**
 * Sending a signed AI-message callback (core/flows/callback-delivery.ts) with in-memory agents and a recording HTTP
 * port: the exact bytes signed are the bytes sent, an agent without a secret gets one at its first callback (once,
 * whoever races it), and nothing is sent for an agent that has none and cannot get one.
 */
import { createHmac } from 'node:crypto';
import { postSignedCallback, type SignedCallback } from '#core/flows/callback-delivery';
import type { OutboundHttp, OutboundRequest } from '#ports/flows';
import { InMemoryAgentStore, SettableClock } from '../../../helpers/in-memory-ports';

const ORG = 'org-a';
const AGENT = '00000000-0000-4000-8000-0000000000a1';
const NOW = '2026-03-01T10:00:00.000Z';

function recordingHttp(): OutboundHttp & { sent: OutboundRequest[] } {
  const sent: OutboundRequest[] = [];
  return {
    sent,
    request: async (request) => {
      sent.push(request);
      return { status: 204, body: null };
    },
  };
}

function verify(secret: string, request: OutboundRequest): boolean {
  const headers = request.headers ?? {};
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const content = `${headers['webhook-id']}.${headers['webhook-timestamp']}.${request.serializedBody}`;
  const expected = `v1,${createHmac('sha256', key).update(content, 'utf8').digest('base64')}`;
  return (headers['webhook-signature'] ?? '').split(' ').includes(expected);
}

const callback = (content: string): SignedCallback => ({
  organizationId: ORG,
  agentId: AGENT,
  target: { url: 'https://receiver.example.com/ai-messages' },
  messageId: 'msg_0123456789abcdef0123456789abcdef',
  payload: { event: 'AgentEvents.AI_MESSAGE', agentId: AGENT, content },
});

async function setup() {
  const agents = new InMemoryAgentStore();
  await agents.put({ organizationId: ORG, agentId: AGENT, displayName: 'Support', createdAt: NOW });
  const http = recordingHttp();
  const clock = new SettableClock(new Date(NOW));
  return { agents, http, clock, deps: { agents, http, clock } };
}

it('posts exactly the bytes it signed, with the three webhook headers', async () => {
  const { deps, http, agents } = await setup();

  await postSignedCallback(deps, callback('Grüße, order A-1 shipped'));

  const [request] = http.sent;
  expect(request).toMatchObject({ url: 'https://receiver.example.com/ai-messages', method: 'POST' });
  expect(request.body).toBeUndefined();
  expect(JSON.parse(request.serializedBody as string)).toEqual(callback('Grüße, order A-1 shipped').payload);
  expect(request.headers).toEqual({
    'webhook-id': 'msg_0123456789abcdef0123456789abcdef',
    'webhook-timestamp': String(Date.parse(NOW) / 1000),
    'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
  });
  const secret = (await agents.get(ORG, AGENT))?.callbackSecrets?.current.secret as string;
  expect(verify(secret, request)).toBe(true);
});

it('gives an agent without a secret one at its first callback, stores it, and signs every later callback with it', async () => {
  const { deps, http, agents } = await setup();

  await postSignedCallback(deps, callback('first'));
  const stored = (await agents.get(ORG, AGENT))?.callbackSecrets;
  expect(stored).toEqual({ current: { secret: expect.stringMatching(/^whsec_/), createdAt: NOW } });
  await postSignedCallback(deps, callback('second'));

  expect(http.sent.map((request) => verify(stored?.current.secret as string, request))).toEqual([true, true]);
  expect((await agents.get(ORG, AGENT))?.callbackSecrets).toEqual(stored);
});

it('keeps the secret another writer stored first (a rotation racing the first callback) and signs with it', async () => {
  const { http, agents, clock } = await setup();
  const racing: typeof agents = Object.create(agents);
  racing.replaceCallbackSecrets = async (organizationId, agentId, secrets, expected) => {
    // Another writer got there between this callback's read and its write.
    await agents.replaceCallbackSecrets(
      organizationId,
      agentId,
      { current: { secret: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', createdAt: NOW } },
      null,
    );
    return agents.replaceCallbackSecrets(organizationId, agentId, secrets, expected);
  };

  await postSignedCallback({ agents: racing, http, clock }, callback('raced'));

  expect((await agents.get(ORG, AGENT))?.callbackSecrets?.current.secret).toBe(
    'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
  );
  expect(verify('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', http.sent[0])).toBe(true);
});

it('sends nothing for an agent that is gone or being deleted: never an unsigned callback', async () => {
  const { deps, http, agents } = await setup();
  await agents.markDeleting(ORG, AGENT, NOW);

  await expect(postSignedCallback(deps, callback('late'))).rejects.toMatchObject({ code: 'CALLBACK_NOT_SIGNED' });
  await expect(
    postSignedCallback(deps, { ...callback('nobody'), agentId: '00000000-0000-4000-8000-0000000000ff' }),
  ).rejects.toMatchObject({ code: 'CALLBACK_NOT_SIGNED' });
  expect(http.sent).toEqual([]);
});
