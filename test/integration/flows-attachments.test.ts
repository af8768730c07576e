/**
 * Images attached to messages, end to end on the local runtime (`bin/local.ts` as a child process) whose default
 * model is the scripted model server of this test (OpenAI chat completions over real HTTP on loopback), with images
 * served by a loopback server (allowed through OUTBOUND_ALLOW_PRIVATE_NETWORK=true): each bad attachment is a 400
 * naming its field and rule and stores nothing; a good one, by data or by URL, reaches the model as an `image_url`
 * data URL in the user turn, is kept in the local S3 under the session and shown on the session by reference only,
 * and is read back from S3 by a later invocation; the offline model's answer; a model that refuses images is a
 * failed session, never a 5xx.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { ATTACHMENT_MAX_BYTES } from '#core/flows/attachments';
import { FLOW_INPUT_MAX_BODY_BYTES } from '../../lib/routes';
import { createDataset, type Dataset } from '../helpers/fixtures';
import { GIF, type ImageServer, JPEG, PNG, pngOfSize, startImageServer, WEBP } from '../helpers/images';
import { type ChatRequest, type ScriptedModelServer, startScriptedModelServer } from '../helpers/scripted-model-server';
import { client, startService, type TestService } from '../helpers/service';

let service: TestService;
let model: ScriptedModelServer;
let images: ImageServer;
let call: ReturnType<typeof client>;
let dataset: Dataset;
let s3: S3Client;

interface Result {
  sessionId: string;
  status: string;
  currentNode: string | null;
  aiMessages: { node: string; content: string }[];
  memory: Record<string, unknown>;
  error: { code: string; message: string; node: string | null } | null;
}

interface StoredAttachment {
  id: string;
  type: string;
  mediaType: string;
  bytes: number;
  source: string;
}

interface Session {
  messages: { role: string; content: string; attachments?: StoredAttachment[] }[];
}

interface ErrorBody {
  success: false;
  error: { code: string; details: { field: string; rule: string }[] };
}

const SESSION = (n: number) => `0b7e4d2a-5c1f-4e8a-9d3b-${String(n).padStart(12, '0')}`;
const png = () => ({ type: 'image', mediaType: 'image/png', data: PNG.toString('base64') });
const dataUrl = (mediaType: string, bytes: Buffer) => `data:${mediaType};base64,${bytes.toString('base64')}`;

function definition() {
  return {
    instructions: 'You are the support assistant of Acme routers.',
    flows: [
      {
        name: 'look',
        nodes: [
          { name: 'Look', type: 'trigger', triggerType: 'webhook' },
          {
            name: 'Describe',
            type: 'promptNode',
            displayName: 'Describe',
            prompt: 'Describe what the customer sent.',
            humanInTheLoop: true,
          },
          { name: 'FollowUp', type: 'promptNode', displayName: 'Follow up', prompt: 'Answer the customer.' },
        ],
        edges: [
          { from: 'Look', to: 'Describe', type: 'stepForward' },
          { from: 'Describe', to: 'FollowUp', type: 'stepForward' },
        ],
      },
      {
        name: 'offline',
        nodes: [
          { name: 'Offline', type: 'trigger', triggerType: 'webhook' },
          {
            name: 'OfflineLook',
            type: 'promptNode',
            displayName: 'Offline look',
            llmConfig: { name: 'ChatOffline' },
            prompt: 'Thank you for the pictures.',
          },
        ],
        edges: [{ from: 'Offline', to: 'OfflineLook', type: 'stepForward' }],
      },
      {
        name: 'app',
        nodes: [
          { name: 'CrmPhoto', type: 'trigger', triggerType: 'app', appName: 'crm', eventName: 'photo' },
          {
            name: 'AppLook',
            type: 'promptNode',
            displayName: 'App look',
            llmConfig: { name: 'ChatOffline' },
            prompt: 'A photo came from the CRM.',
          },
        ],
        edges: [{ from: 'CrmPhoto', to: 'AppLook', type: 'stepForward' }],
      },
    ],
  };
}

beforeAll(async () => {
  images = await startImageServer();
  model = await startScriptedModelServer();
  service = await startService({
    env: {
      // The model and image servers of this test are on loopback, which the runtime refuses unless told so.
      OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true',
      MODEL_BASE_URL: model.baseUrl,
      MODEL_NAME: 'scripted-vision',
    },
  });
  call = client(service);
  dataset = await createDataset(call, 'production');
  const put = await call('PUT', `/dashboard/agents/${dataset.agentId}/definition/production`, { body: definition() });
  if (put.status !== 200) throw new Error(JSON.stringify(put.body));
  s3 = new S3Client({
    endpoint: /S3 at (http:\/\/[^\s,)]+)/.exec(service.output())?.[1],
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: service.engineCredentials ?? undefined,
  });
});

afterAll(async () => {
  s3?.destroy();
  await service?.stop();
  await model?.close();
  await images?.close();
});

const webhook = (trigger: string, body: Record<string, unknown>) =>
  call<Result>('POST', `/api/v1/webhooks/${dataset.agentId}/production/${trigger}`, { body });

const session = (sessionId: string) =>
  call<Session>('GET', `/dashboard/agents/${dataset.agentId}/sessions/production/${sessionId}`);

/** The attachment objects of a session in the local S3. */
async function storedKeys(sessionId: string): Promise<string[]> {
  const listed = await s3.send(
    new ListObjectsV2Command({
      Bucket: 'documents',
      Prefix: `attachments/${dataset.agentId}/production/${sessionId}/`,
    }),
  );
  return (listed.Contents ?? []).map((object) => object.Key ?? '');
}

/** The user turns of a model request that carry images, as the image_url parts' URLs. */
function imagesSent(request: ChatRequest): string[][] {
  return request.messages
    .filter((m) => m.role === 'user' && Array.isArray(m.content))
    .map((m) =>
      (m.content as unknown as { type: string; image_url?: { url: string } }[])
        .filter((part) => part.type === 'image_url')
        .map((part) => part.image_url?.url ?? ''),
    );
}

describe('bad attachments', () => {
  it.each([
    ['more than 4', { attachments: [png(), png(), png(), png(), png()] }, [{ field: 'attachments', rule: 'maxItems' }]],
    [
      'a media type that is not an image format of the four',
      { attachments: [{ ...png(), mediaType: 'image/svg+xml' }] },
      [{ field: 'attachments.0.mediaType', rule: 'attachment.mediaType' }],
    ],
    [
      'bytes that are not the declared type, and bytes that are no image',
      {
        attachments: [
          png(),
          { type: 'image', mediaType: 'image/jpeg', data: PNG.toString('base64') },
          { type: 'image', mediaType: 'image/webp', data: Buffer.from('<svg/>').toString('base64') },
        ],
      },
      [
        { field: 'attachments.1.data', rule: 'attachment.mediaType' },
        { field: 'attachments.2.data', rule: 'attachment.mediaType' },
      ],
    ],
    [
      'data that is not base64, both data and url, neither, a URL that is not http(s)',
      {
        attachments: [
          { ...png(), data: `data:image/png;base64,${PNG.toString('base64')}` },
          { ...png(), url: 'https://example.com/router.png' },
          { type: 'image', mediaType: 'image/png' },
          { type: 'image', url: 'ftp://example.com/router.png' },
        ],
      },
      [
        { field: 'attachments.0.data', rule: 'attachment.base64' },
        { field: 'attachments.1', rule: 'attachment.source' },
        { field: 'attachments.2', rule: 'attachment.source' },
        { field: 'attachments.3.url', rule: 'attachment.url' },
      ],
    ],
    [
      'a URL over 5 MiB, one that is no image whatever its Content-Type, one that answers 404',
      {
        attachments: [
          { type: 'image', url: '{images}/huge.png' },
          { type: 'image', url: '{images}/page.png' },
          { type: 'image', url: '{images}/gone.png' },
        ],
      },
      [
        { field: 'attachments.0.url', rule: 'attachment.maxBytes' },
        { field: 'attachments.1.url', rule: 'attachment.mediaType' },
        { field: 'attachments.2.url', rule: 'attachment.fetch' },
      ],
    ],
  ])('%s: 400 naming each field and rule, nothing stored, no session', async (_case, body, details) => {
    images.serve('/huge.png', { body: pngOfSize(ATTACHMENT_MAX_BYTES + 1) });
    images.serve('/page.png', { headers: { 'content-type': 'image/png' }, body: Buffer.from('<html>hi</html>') });
    const sessionId = SESSION(Math.floor(Math.random() * 1e9));
    const json = JSON.stringify(body).replaceAll('{images}', images.url);
    const response = await call<ErrorBody>('POST', `/api/v1/webhooks/${dataset.agentId}/production/Look`, {
      body: { ...JSON.parse(json), sessionId, message: 'Look' },
    });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('VALIDATION_ERROR');
    expect(response.body.error.details.map(({ field, rule }) => ({ field, rule }))).toEqual(details);
    expect(await storedKeys(sessionId)).toEqual([]);
    expect((await session(sessionId)).status).toBe(404);
  });

  it('app events: the same rules under the same field names', async () => {
    const response = await call<ErrorBody>('POST', `/api/v1/app-events/${dataset.agentId}/production`, {
      body: { appName: 'crm', eventName: 'photo', attachments: [png(), { type: 'image', mediaType: 'image/tiff' }] },
    });
    expect(response.status).toBe(400);
    expect(response.body.error.details.map(({ field, rule }) => ({ field, rule }))).toEqual([
      { field: 'attachments.1', rule: 'attachment.source' },
      { field: 'attachments.1.mediaType', rule: 'attachment.mediaType' },
    ]);
  });

  it(`a body over ${FLOW_INPUT_MAX_BODY_BYTES} bytes is a 413; one over the 1 MiB of other routes is read`, async () => {
    model.script(() => ({ content: 'A large photo.' }));
    const large = { type: 'image', mediaType: 'image/png', data: pngOfSize(2 * 1024 * 1024).toString('base64') };
    const read = await webhook('Look', { message: 'Large', attachments: [large] });
    expect(read.status).toBe(200);
    expect(read.body.status).toBe('paused');
    const tooLarge = { ...large, data: pngOfSize(4 * 1024 * 1024).toString('base64') };
    const refused = await call<ErrorBody>('POST', `/api/v1/webhooks/${dataset.agentId}/production/Look`, {
      body: { message: 'Too large', attachments: [tooLarge] },
    });
    expect(refused.status).toBe(413);
    expect(refused.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });
});

describe('good attachments', () => {
  it('by data and by URL: the model gets each as an image_url data URL in the user turn; the session keeps references', async () => {
    // The header says octet-stream and the request no mediaType: the bytes decide (a JPEG), through a redirect.
    images.serve('/photo', { headers: { 'content-type': 'application/octet-stream' }, body: JPEG });
    images.serve('/share/photo', { status: 302, headers: { location: '/photo' } });
    model.script(() => ({ content: 'The case of the router is cracked.' }));
    const first = await webhook('Look', {
      message: 'My router arrived like this',
      customer: 'Ada',
      attachments: [png(), { type: 'image', url: `${images.url}/share/photo` }],
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'paused', currentNode: 'Describe', error: null });
    expect(first.body.aiMessages.map((m) => m.content)).toEqual(['The case of the router is cracked.']);
    // Attachments are not payload: memory holds the payload only.
    expect(first.body.memory).toEqual({ customer: 'Ada' });

    const [request] = model.requests;
    expect(request.model).toBe('scripted-vision');
    expect(request.messages[1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'My router arrived like this' },
        { type: 'image_url', image_url: { url: dataUrl('image/png', PNG) } },
        { type: 'image_url', image_url: { url: dataUrl('image/jpeg', JPEG) } },
      ],
    });

    // The session: the message with its attachments by reference, no image bytes anywhere in it.
    const { sessionId } = first.body;
    const stored = await session(sessionId);
    expect(stored.status).toBe(200);
    const attachments = stored.body.messages[0].attachments ?? [];
    expect(stored.body.messages[0]).toMatchObject({ role: 'user', content: 'My router arrived like this' });
    expect(attachments).toEqual([
      { id: expect.any(String), type: 'image', mediaType: 'image/png', bytes: PNG.length, source: 'data' },
      { id: expect.any(String), type: 'image', mediaType: 'image/jpeg', bytes: JPEG.length, source: 'url' },
    ]);
    const text = JSON.stringify(stored.body);
    expect(text).not.toContain(PNG.toString('base64').slice(0, 40));
    expect(text).not.toContain(JPEG.toString('base64').slice(0, 12));
    expect(text).not.toContain(images.url);

    // invocation_start records the references too, not the bytes.
    const events = await call<{ data: { eventName: string; payload: Record<string, unknown> }[] }>(
      'POST',
      '/api/v1/events/agent',
      { body: { agentId: dataset.agentId, filters: { sessionId, eventName: 'invocation_start' } } },
    );
    expect(events.body.data.map((e) => e.payload.attachments)).toEqual([attachments]);

    // The bytes are in the local S3 under the session, with their type.
    const keys = attachments.map((a) => `attachments/${dataset.agentId}/production/${sessionId}/${a.id}`);
    expect((await storedKeys(sessionId)).sort()).toEqual([...keys].sort());
    const object = await s3.send(new GetObjectCommand({ Bucket: 'documents', Key: keys[1] }));
    expect(object.ContentType).toBe('image/jpeg');
    expect(Buffer.from(await (object.Body?.transformToByteArray() ?? new Uint8Array()))).toEqual(JPEG);

    // The next invocation (a new request, nothing of the first in memory) reads the images back from S3.
    model.script(() => ({ content: 'A replacement is on its way.' }));
    const second = await webhook('Look', { sessionId, message: 'Yes, the light is off' });
    expect(second.body).toMatchObject({ status: 'completed', error: null });
    const followUp = model.requests.at(-1) as ChatRequest;
    expect(imagesSent(followUp)).toEqual([[dataUrl('image/png', PNG), dataUrl('image/jpeg', JPEG)]]);
    expect(followUp.messages.slice(-2)).toEqual([
      { role: 'user', content: 'Yes, the light is off' },
      { role: 'user', content: 'Answer the customer.' },
    ]);
  });

  it('images without a message make a user message of their own, seen by the offline model as documented', async () => {
    const result = await webhook('Offline', {
      attachments: [
        { type: 'image', mediaType: 'image/gif', data: GIF.toString('base64') },
        { type: 'image', mediaType: 'image/webp', data: WEBP.toString('base64') },
      ],
    });
    expect(result.status).toBe(200);
    expect(result.body.aiMessages.map((m) => m.content)).toEqual([
      'Thank you for the pictures.\nImages: 2 attached; the offline model cannot see them.',
    ]);
    const stored = await session(result.body.sessionId);
    expect(stored.body.messages[0]).toMatchObject({
      role: 'user',
      content: '',
      attachments: [{ mediaType: 'image/gif' }, { mediaType: 'image/webp' }],
    });
  });

  it('app events carry attachments to the app trigger', async () => {
    const result = await call<Result>('POST', `/api/v1/app-events/${dataset.agentId}/production`, {
      body: { appName: 'crm', eventName: 'photo', message: 'From the field', attachments: [png()] },
    });
    expect(result.status).toBe(200);
    expect(result.body.aiMessages.map((m) => m.content)).toEqual([
      'A photo came from the CRM.\nImages: 1 attached; the offline model cannot see them.',
    ]);
    expect(await storedKeys(result.body.sessionId)).toHaveLength(1);
  });

  it('a model that refuses the images (HTTP 400) fails the session with MODEL_IMAGES_REFUSED: a 200, never a 5xx', async () => {
    model.script((request) =>
      imagesSent(request).length > 0
        ? { status: 400, body: { error: { message: 'image input is not supported by this model' } } }
        : { content: 'unreachable' },
    );
    const result = await webhook('Look', { message: 'Here', attachments: [png()] });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({
      status: 'failed',
      error: { code: 'MODEL_IMAGES_REFUSED', node: 'Describe' },
    });
    expect(result.body.error?.message).toContain('MODEL_IMAGE_INPUT=false');
  });
});
