/**
 * Images of a user message as each model gets them: Bedrock Converse `image` blocks with the bytes (against the
 * recorded Converse request shape; only the SDK client's `send` is stood in for), OpenAI-compatible `image_url`
 * parts with a data URL (the scripted model server, over real HTTP), a text note for a model declared text-only, a
 * provider's 4xx to a request with images as MODEL_IMAGES_REFUSED, and the offline model's documented answer.
 */
import {
  type BedrockRuntimeClient,
  type ConverseCommand,
  type ConverseCommandOutput,
  ValidationException,
} from '@aws-sdk/client-bedrock-runtime';
import { BedrockConverseModel } from '#adapters/model/bedrock-converse';
import { OpenAiCompatibleModel } from '#adapters/model/openai-compatible';
import { PromptedFlowModel } from '#adapters/model/prompted-flow-model';
import { OfflineFlowModel } from '#core/flows/offline-model';
import type { FlowModelContext } from '#ports/flows';
import { GIF, PNG } from '../../../helpers/images';
import { type ScriptedModelServer, startScriptedModelServer } from '../../../helpers/scripted-model-server';

/** A Converse answer as Bedrock returns it (Claude 3 Haiku; figures from a real run's shape). */
const ANSWER = {
  $metadata: {
    httpStatusCode: 200,
    requestId: '3c9d2f0e-6a1b-4c7d-8e2f-5a6b7c8d9e0f',
    attempts: 1,
    totalRetryDelay: 0,
  },
  output: { message: { role: 'assistant', content: [{ text: 'A router with a cracked case.' }] } },
  stopReason: 'end_turn',
  usage: { inputTokens: 1604, outputTokens: 9, totalTokens: 1613 },
  metrics: { latencyMs: 912 },
} as unknown as ConverseCommandOutput;

const MODEL_ID = 'anthropic.claude-3-haiku-20240307-v1:0';

function scriptedClient(answer: () => ConverseCommandOutput) {
  const sent: ConverseCommand['input'][] = [];
  const client = {
    send: async (command: ConverseCommand) => {
      sent.push(command.input);
      return answer();
    },
  } as unknown as BedrockRuntimeClient;
  return { client, sent };
}

const context: FlowModelContext = {
  system: 'You are the support assistant of Acme routers.',
  messages: [
    { role: 'user', content: 'My router arrived like this.', images: [{ mediaType: 'image/png', data: PNG }] },
    { role: 'assistant', content: 'I am sorry. Is the power light on?' },
    { role: 'user', content: '', images: [{ mediaType: 'image/gif', data: GIF }] },
  ],
};

describe('Bedrock Converse', () => {
  it('sends each image of a user turn as an image block with its bytes, after the text', async () => {
    const { client, sent } = scriptedClient(() => ANSWER);
    const model = new PromptedFlowModel(new BedrockConverseModel(client, MODEL_ID));
    await expect(model.respond(context, 'Describe the damage.')).resolves.toBe('A router with a cracked case.');
    expect(sent[0].messages).toEqual([
      {
        role: 'user',
        content: [{ text: 'My router arrived like this.' }, { image: { format: 'png', source: { bytes: PNG } } }],
      },
      { role: 'assistant', content: [{ text: 'I am sorry. Is the power light on?' }] },
      // The image-only message has no (empty) text block; the node's prompt joins the same user turn.
      {
        role: 'user',
        content: [{ image: { format: 'gif', source: { bytes: GIF } } }, { text: 'Describe the damage.' }],
      },
    ]);
  });

  it('tells a model declared text-only (BEDROCK_IMAGE_INPUT=false) in words, without image blocks', async () => {
    const { client, sent } = scriptedClient(() => ANSWER);
    const model = new PromptedFlowModel(new BedrockConverseModel(client, MODEL_ID, { imageInput: false }));
    await model.respond(context, 'Describe the damage.');
    expect(JSON.stringify(sent[0].messages)).not.toContain('"image"');
    expect(sent[0].messages?.[0].content).toEqual([
      {
        text: 'My router arrived like this.\n[The user attached 1 image(s) (image/png); the model answering cannot see images.]',
      },
    ]);
    expect(sent[0].messages?.[2].content?.[0]).toEqual({
      text: '[The user attached 1 image(s) (image/gif); the model answering cannot see images.]',
    });
  });

  it('fails a node with MODEL_IMAGES_REFUSED when Converse refuses a request with images, MODEL_ERROR without', async () => {
    const refusal = () => {
      throw new ValidationException({
        message: "This model doesn't support the image content block that you provided. Try again with text only.",
        $metadata: { httpStatusCode: 400, requestId: '7e1f0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b' },
      });
    };
    const model = new PromptedFlowModel(new BedrockConverseModel(scriptedClient(refusal).client, MODEL_ID));
    await expect(model.respond(context, 'Describe it.')).rejects.toMatchObject({
      status: 422,
      code: 'MODEL_IMAGES_REFUSED',
      message: expect.stringContaining('BEDROCK_IMAGE_INPUT=false'),
    });
    await expect(model.respond({ messages: [] }, 'Describe it.')).rejects.toMatchObject({ code: 'MODEL_ERROR' });
  });
});

describe('OpenAI-compatible', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await startScriptedModelServer();
  });
  afterAll(() => server.close());

  it('sends a user message with images as a text part and image_url parts holding data URLs', async () => {
    server.script(() => ({ content: 'A cracked case.' }));
    const model = new PromptedFlowModel(new OpenAiCompatibleModel({ baseUrl: server.baseUrl, model: 'vision' }));
    await expect(model.respond(context, 'Describe the damage.')).resolves.toBe('A cracked case.');
    const [request] = server.requests;
    expect(request.messages.slice(1, 4)).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'My router arrived like this.' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
        ],
      },
      { role: 'assistant', content: 'I am sorry. Is the power light on?' },
      {
        role: 'user',
        content: [{ type: 'image_url', image_url: { url: `data:image/gif;base64,${GIF.toString('base64')}` } }],
      },
    ]);
  });

  it('says in words what a text-only model (MODEL_IMAGE_INPUT=false) cannot see', async () => {
    server.script(() => ({ content: 'I cannot see images.' }));
    const provider = new OpenAiCompatibleModel({ baseUrl: server.baseUrl, model: 'text', imageInput: false });
    await new PromptedFlowModel(provider).respond(context, 'Describe the damage.');
    expect(server.requests[0].messages[1]).toEqual({
      role: 'user',
      content:
        'My router arrived like this.\n[The user attached 1 image(s) (image/png); the model answering cannot see images.]',
    });
    expect(JSON.stringify(server.requests[0])).not.toContain('image_url');
  });

  it("maps the server's 400 to a request with images to MODEL_IMAGES_REFUSED; a 429 stays MODEL_ERROR", async () => {
    const model = new PromptedFlowModel(new OpenAiCompatibleModel({ baseUrl: server.baseUrl, model: 'text' }));
    server.script(() => ({ status: 400, body: { error: { message: 'image input is not supported' } } }));
    await expect(model.respond(context, 'Describe it.')).rejects.toMatchObject({
      code: 'MODEL_IMAGES_REFUSED',
      message: expect.stringMatching(/refused a request with 2 image\(s\) \(HTTP 400\).*MODEL_IMAGE_INPUT=false/),
    });
    server.script(() => ({ status: 429, body: { error: { message: 'slow down' } } }));
    await expect(model.respond(context, 'Describe it.')).rejects.toMatchObject({ code: 'MODEL_ERROR' });
  });
});

describe('the offline model', () => {
  it('answers its prompt and says how many images it received and that it cannot see them', async () => {
    const offline = new OfflineFlowModel();
    await expect(offline.respond(context, 'Describe the damage.')).resolves.toBe(
      'Describe the damage.\nImages: 2 attached; the offline model cannot see them.',
    );
    await expect(offline.respond({ messages: [context.messages[1]] }, 'Describe the damage.')).resolves.toBe(
      'Describe the damage.',
    );
  });
});
