/**
 * The flow runtime with attached images, against dynalite with the real session and definition stores and an
 * in-memory blob store: images are stored before the claim and referenced by the user's message; a claim that is
 * refused (409) and bad attachments (400) leave nothing stored; the model context carries the images, read back
 * from the store by a later invocation.
 */
import { randomUUID } from 'node:crypto';
import { GuardedImageDownloader } from '#adapters/network/guarded-download';
import { GuardedOutboundHttp } from '#adapters/network/outbound-http';
import { DynamoAnalyticsStore } from '#adapters/store/dynamodb/analytics-store';
import { DynamoDefinitionStore, DynamoSessionStore } from '#adapters/store/dynamodb/flow-stores';
import { AnalyticsRecorder } from '#core/analytics/track';
import { attachmentKey } from '#core/flows/attachments';
import { validateDefinition } from '#core/flows/definition';
import { OfflineFlowModel } from '#core/flows/offline-model';
import { type FlowRuntimeDeps, SESSION_LEASE_MS } from '#core/flows/run-context';
import { invoke } from '#core/flows/runtime';
import type { BrowserDriver, FlowModel, FlowModelContext } from '#ports/flows';
import { NO_METRICS } from '#ports/metrics';
import { TABLES } from '../../../../lib/tables';
import { inMemoryBlobStore } from '../../../helpers/blobs';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';
import { GIF, PNG } from '../../../helpers/images';
import { InMemoryAgentStore } from '../../../helpers/in-memory-ports';

let dynamo: LocalDynamo;
let sessions: DynamoSessionStore;
let definitions: DynamoDefinitionStore;
let analytics: DynamoAnalyticsStore;
const clock = { now: () => new Date() };
const png = { type: 'image' as const, mediaType: 'image/png' as const, data: PNG.toString('base64') };

beforeAll(async () => {
  dynamo = await startDynalite();
  sessions = new DynamoSessionStore(dynamo.client, await dynamo.createTable('sessions', TABLES.sessions));
  definitions = new DynamoDefinitionStore(
    dynamo.client,
    await dynamo.createTable('agentDefinitions', TABLES.agentDefinitions),
  );
  analytics = new DynamoAnalyticsStore(dynamo.client, await dynamo.createTable('analytics', TABLES.analytics), {
    clock,
    retentionDays: 30,
  });
});
afterAll(() => dynamo?.stop());

/** The offline model, keeping every context it was given. */
function recordingModel() {
  const offline = new OfflineFlowModel();
  const contexts: FlowModelContext[] = [];
  const model: FlowModel = Object.assign(Object.create(offline) as FlowModel, {
    respond: (context: FlowModelContext, prompt: string) => {
      contexts.push(context);
      return offline.respond(context, prompt);
    },
  });
  return { model, contexts };
}

function runtime() {
  const blobs = inMemoryBlobStore();
  const { model, contexts } = recordingModel();
  const deps: FlowRuntimeDeps = {
    definitions,
    sessions,
    models: () => model,
    http: new GuardedOutboundHttp({ allowPrivateNetwork: false }),
    // No definition of this file has a callbackUrl: the agents' callback secrets are never read.
    agents: new InMemoryAgentStore(),
    browser: {} as BrowserDriver,
    recorder: new AnalyticsRecorder(analytics, { uuid: randomUUID }, { maxDelayMs: 600_000 }),
    defaultRetrieval: async () => null,
    knowledge: {
      agents: {} as never,
      knowledgeBases: {} as never,
      index: {} as never,
      embedder: null,
      metrics: NO_METRICS,
    },
    generateModel: null,
    clock,
    ids: { uuid: randomUUID },
    attachments: { blobs, downloads: new GuardedImageDownloader({ allowPrivateNetwork: false }) },
  };
  return { deps, blobs, contexts };
}

async function agent(): Promise<string> {
  const agentId = randomUUID();
  const outcome = validateDefinition({
    flows: [
      {
        name: 'main',
        nodes: [
          { name: 'Start', type: 'trigger', triggerType: 'webhook' },
          { name: 'Look', type: 'promptNode', displayName: 'Look', prompt: 'Look.' },
        ],
        edges: [{ from: 'Start', to: 'Look', type: 'stepForward' }],
      },
    ],
  });
  if (!outcome.valid) throw new Error(JSON.stringify(outcome.problems));
  await definitions.put({
    agentId,
    environment: 'production',
    organizationId: 'org-1',
    definition: outcome.definition,
    version: 1,
    updatedAt: new Date().toISOString(),
    hasSchedule: false,
  });
  return agentId;
}

const call = (
  deps: FlowRuntimeDeps,
  agentId: string,
  input: { sessionId?: string; message?: string; attachments?: unknown[] },
) =>
  invoke(deps, {
    agentId,
    environment: 'production',
    organizationId: 'org-1',
    trigger: { type: 'webhook', name: 'Start' },
    sessionId: input.sessionId,
    message: input.message,
    attachments: input.attachments as never,
    body: {},
    invocationId: randomUUID(),
  });

it('stores the images under the session, references them from the message, and shows them to the model', async () => {
  const { deps, blobs, contexts } = runtime();
  const agentId = await agent();
  const result = await call(deps, agentId, {
    message: 'Broken',
    attachments: [png, { type: 'image', mediaType: 'image/gif', data: GIF.toString('base64') }],
  });
  expect(result.status).toBe('completed');
  const stored = await sessions.get(agentId, 'production', result.sessionId);
  const attachments = stored?.messages[0].attachments ?? [];
  expect(attachments.map((a) => [a.mediaType, a.bytes, a.source])).toEqual([
    ['image/png', PNG.length, 'data'],
    ['image/gif', GIF.length, 'data'],
  ]);
  const scope = { agentId, environment: 'production' as const, sessionId: result.sessionId };
  expect([...blobs.objects.keys()]).toEqual(attachments.map((a) => attachmentKey(scope, a.id)));
  expect(contexts[0].messages[0]).toEqual({
    role: 'user',
    content: 'Broken',
    images: [
      { mediaType: 'image/png', data: PNG },
      { mediaType: 'image/gif', data: GIF },
    ],
  });

  // A later invocation (a new runtime: nothing kept in memory) reads them back from the store.
  const later = runtime();
  for (const [key, bytes] of blobs.objects) later.blobs.objects.set(key, bytes);
  const again = await call(later.deps, agentId, { sessionId: result.sessionId, message: 'Still broken' });
  expect(again.aiMessages.map((m) => m.content)).toEqual([
    'Look.\nImages: 2 attached; the offline model cannot see them.',
  ]);
  expect(later.contexts[0].messages.map((m) => [m.role, m.content, m.images?.map((i) => i.data)])).toEqual([
    ['user', 'Broken', [PNG, GIF]],
    ['assistant', 'Look.\nImages: 2 attached; the offline model cannot see them.', undefined],
    ['user', 'Still broken', undefined],
  ]);
});

it('deletes the images it stored when the session is busy (409), and stores none for bad attachments (400)', async () => {
  const { deps, blobs } = runtime();
  const agentId = await agent();
  const sessionId = randomUUID();
  const now = new Date().toISOString();
  await sessions.create({
    agentId,
    environment: 'production',
    sessionId,
    organizationId: 'org-1',
    status: 'running',
    flowName: 'main',
    currentNode: 'Look',
    memory: {},
    messages: [],
    outputs: {},
    aiMessages: [],
    error: null,
    trigger: { name: 'Start', type: 'webhook' },
    invocations: 1,
    leaseUntil: new Date(Date.now() + SESSION_LEASE_MS).toISOString(),
    version: 1,
    createdAt: now,
    updatedAt: now,
  });
  await expect(call(deps, agentId, { sessionId, message: 'Hi', attachments: [png] })).rejects.toMatchObject({
    status: 409,
    code: 'SESSION_BUSY',
  });
  expect(blobs.objects.size).toBe(0);

  const fresh = randomUUID();
  await expect(
    call(deps, agentId, {
      sessionId: fresh,
      attachments: [png, { type: 'image', mediaType: 'image/png', data: Buffer.from('GIF89a').toString('base64') }],
    }),
  ).rejects.toMatchObject({ status: 400, details: [{ field: 'attachments.1.data', rule: 'attachment.mediaType' }] });
  expect(blobs.objects.size).toBe(0);
  expect(await sessions.get(agentId, 'production', fresh)).toBeUndefined();
});
