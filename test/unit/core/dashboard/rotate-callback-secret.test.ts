/**
 * Rotating an agent's callback secret (core/dashboard/rotate-callback-secret.ts) with in-memory ports and a clock
 * moved by hand: who may rotate (owners and tokens; a member 403; another organization's agent, or one a restricted
 * token may not use, 404), what the answer shows, and the previous secret signing beside the new one for 24 hours.
 */
import { createHmac } from 'node:crypto';
import { createAgent, getAgent, listAgents } from '#core/dashboard/dashboard';
import { rotateCallbackSecret } from '#core/dashboard/rotate-callback-secret';
import { postSignedCallback } from '#core/flows/callback-delivery';
import type { Caller } from '#core/tenancy/tenancy';
import type { OutboundRequest } from '#ports/flows';
import { InMemoryAgentStore, SequentialIds, SettableClock } from '../../../helpers/in-memory-ports';

const OWNER: Caller = {
  organizationId: 'org-a',
  tokenId: 'person:owner-sub',
  scopes: ['dashboard'],
  role: 'owner',
  email: 'owner@example.com',
};
const MEMBER: Caller = { ...OWNER, tokenId: 'person:member-sub', role: 'member', email: 'member@example.com' };
const TOKEN: Caller = { organizationId: 'org-a', tokenId: 'token-a', scopes: ['dashboard'] };
const OTHER_ORG: Caller = { organizationId: 'org-b', tokenId: 'token-b', scopes: ['dashboard'] };
const DAY_MS = 24 * 60 * 60 * 1000;

async function setup() {
  const agents = new InMemoryAgentStore();
  const clock = new SettableClock(new Date('2026-03-01T10:00:00.000Z'));
  const deps = { agents, clock, ids: new SequentialIds() };
  const created = await createAgent(deps, OWNER, 'Support');
  const sibling = await createAgent(deps, OWNER, 'Sales');
  return { agents, clock, deps, created, agentId: created.agentId, siblingId: sibling.agentId };
}

/** Which of `secrets` a receiver would accept the request's signature with (each checked on its own). */
function acceptedBy(request: OutboundRequest, secrets: Record<string, string>): string[] {
  const headers = request.headers ?? {};
  const content = `${headers['webhook-id']}.${headers['webhook-timestamp']}.${request.serializedBody}`;
  const given = (headers['webhook-signature'] ?? '').split(' ');
  return Object.entries(secrets)
    .filter(([, secret]) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return given.includes(`v1,${createHmac('sha256', key).update(content, 'utf8').digest('base64')}`);
    })
    .map(([name]) => name);
}

async function sendCallback(deps: Awaited<ReturnType<typeof setup>>['deps'], agentId: string) {
  const sent: OutboundRequest[] = [];
  await postSignedCallback(
    {
      ...deps,
      http: {
        request: async (request) => {
          sent.push(request);
          return { status: 204, body: null };
        },
      },
    },
    {
      organizationId: 'org-a',
      agentId,
      target: { url: 'https://receiver.example.com/hook' },
      messageId: 'msg_x',
      payload: { content: 'Hello' },
    },
  );
  return sent[0];
}

it('gives an owner a new secret, shown in the answer only, with the previous one valid for 24 hours', async () => {
  const { deps, agentId, created, clock } = await setup();
  clock.advanceSeconds(60);

  const rotated = await rotateCallbackSecret(deps, OWNER, agentId);

  expect(rotated).toEqual({
    secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    createdAt: '2026-03-01T10:01:00.000Z',
    previousSecretValidUntil: '2026-03-02T10:01:00.000Z',
  });
  expect(rotated.secret).not.toBe(created.callbackSecret);
  // Never listed or read back.
  expect(JSON.stringify(await getAgent(deps, OWNER, agentId))).not.toContain('whsec_');
  expect(JSON.stringify(await listAgents(deps, OWNER))).not.toContain('whsec_');
});

it('lets a token of the organization rotate, and a token restricted to the agent', async () => {
  const { deps, agentId } = await setup();

  await expect(rotateCallbackSecret(deps, TOKEN, agentId)).resolves.toMatchObject({ secret: expect.any(String) });
  await expect(rotateCallbackSecret(deps, { ...TOKEN, agentIds: [agentId] }, agentId)).resolves.toMatchObject({
    secret: expect.any(String),
  });
});

it('refuses a member with 403 and changes nothing', async () => {
  const { deps, agents, agentId } = await setup();
  const before = await agents.get('org-a', agentId);

  await expect(rotateCallbackSecret(deps, MEMBER, agentId)).rejects.toMatchObject({
    status: 403,
    code: 'FORBIDDEN',
    details: [expect.objectContaining({ rule: 'member.owner' })],
  });
  expect(await agents.get('org-a', agentId)).toEqual(before);
});

it("answers 404 for another organization's agent and for an agent a restricted token may not use", async () => {
  const { deps, agents, agentId, siblingId } = await setup();
  const before = await agents.get('org-a', agentId);

  await expect(rotateCallbackSecret(deps, OTHER_ORG, agentId)).rejects.toMatchObject({
    status: 404,
    code: 'AGENT_NOT_FOUND',
  });
  await expect(rotateCallbackSecret(deps, { ...TOKEN, agentIds: [siblingId] }, agentId)).rejects.toMatchObject({
    status: 404,
    code: 'AGENT_NOT_FOUND',
  });
  await agents.markDeleting('org-a', siblingId, '2026-03-01T10:00:00.000Z');
  await expect(rotateCallbackSecret(deps, OWNER, siblingId)).rejects.toMatchObject({ code: 'AGENT_NOT_FOUND' });
  expect(await agents.get('org-a', agentId)).toEqual(before);
});

it('signs callbacks with both secrets (new first) until 24 hours after the rotation, then with the new one only', async () => {
  const { deps, agentId, created, clock } = await setup();
  const secrets = { old: created.callbackSecret as string, new: '' };
  expect(acceptedBy(await sendCallback(deps, agentId), secrets)).toEqual(['old']);

  const rotated = await rotateCallbackSecret(deps, OWNER, agentId);
  secrets.new = rotated.secret;
  const rotatedAt = Date.parse(rotated.createdAt);

  const right = await sendCallback(deps, agentId);
  expect(acceptedBy(right, secrets)).toEqual(['old', 'new']);
  const [first] = (right.headers?.['webhook-signature'] ?? '').split(' ');
  expect(acceptedBy({ ...right, headers: { ...right.headers, 'webhook-signature': first } }, secrets)).toEqual(['new']);

  clock.set(new Date(rotatedAt + DAY_MS - 1000));
  expect(acceptedBy(await sendCallback(deps, agentId), secrets)).toEqual(['old', 'new']);
  clock.set(new Date(rotatedAt + DAY_MS));
  expect(acceptedBy(await sendCallback(deps, agentId), secrets)).toEqual(['new']);
});

it('gives an agent made before callbacks were signed its first secret, with no previous one', async () => {
  const { deps, agents } = await setup();
  await agents.put({
    organizationId: 'org-a',
    agentId: '00000000-0000-4000-8000-0000000000b1',
    displayName: 'Older',
    createdAt: '2025-01-01T00:00:00.000Z',
  });

  const rotated = await rotateCallbackSecret(deps, OWNER, '00000000-0000-4000-8000-0000000000b1');

  expect(rotated.previousSecretValidUntil).toBeNull();
  expect((await agents.get('org-a', '00000000-0000-4000-8000-0000000000b1'))?.callbackSecrets).toEqual({
    current: { secret: rotated.secret, createdAt: rotated.createdAt },
  });
});

it('reads again when the secret changed between its read and its write, and keeps the other writer’s as previous', async () => {
  const { deps, agents, agentId } = await setup();
  const racing: typeof agents = Object.create(agents);
  let raced = false;
  racing.replaceCallbackSecrets = async (...args) => {
    if (!raced) {
      raced = true;
      const stored = await agents.get('org-a', agentId);
      await agents.replaceCallbackSecrets(
        'org-a',
        agentId,
        {
          current: {
            secret: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
            createdAt: '2026-03-01T10:00:00.000Z',
          },
        },
        stored?.callbackSecrets?.current.secret ?? null,
      );
    }
    return agents.replaceCallbackSecrets(...args);
  };

  const rotated = await rotateCallbackSecret({ ...deps, agents: racing }, OWNER, agentId);

  expect((await agents.get('org-a', agentId))?.callbackSecrets).toEqual({
    current: { secret: rotated.secret, createdAt: rotated.createdAt },
    previous: { secret: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', validUntil: '2026-03-02T10:00:00.000Z' },
  });
});

it('shows the secret of a new agent in its creation answer, except to a member', async () => {
  const { deps } = await setup();
  expect((await createAgent(deps, TOKEN, 'By a token')).callbackSecret).toMatch(/^whsec_/);
  expect((await createAgent(deps, MEMBER, 'By a member')).callbackSecret).toBeNull();
});
