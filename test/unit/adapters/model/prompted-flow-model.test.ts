/**
 * The prompted flow model and the flow model resolver against a real HTTP server on 127.0.0.1 playing an
 * OpenAI-compatible chat completions endpoint: what each call sends, and how each answer is read back.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BedrockConverseModel } from '#adapters/model/bedrock-converse';
import { OpenAiCompatibleModel } from '#adapters/model/openai-compatible';
import { PromptedFlowModel } from '#adapters/model/prompted-flow-model';
import { flowModelResolverFromEnv } from '#composition/flow-model';
import { AppError } from '#core/errors';
import { OfflineFlowModel } from '#core/flows/offline-model';
import type { FlowModelContext, LlmConfig, ToolParameterSpec } from '#ports/flows';
import { ModelError } from '#ports/model';

interface ChatBody {
  readonly model: string;
  readonly messages: { role: string; content: string }[];
  readonly temperature?: number;
  readonly max_tokens?: number;
}

interface Recorded {
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: ChatBody;
}

let server: Server;
let baseUrl: string;
let recorded: Recorded[];
let reply: string;
let status: number;

beforeAll(async () => {
  server = createServer((request, response: ServerResponse) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      recorded.push({
        url: request.url ?? '',
        headers: request.headers,
        body: JSON.parse(Buffer.concat(parts).toString('utf8')),
      });
      const body =
        status === 200
          ? { choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }] }
          : { error: { message: 'overloaded' } };
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

beforeEach(() => {
  recorded = [];
  reply = 'Hello from the model.';
  status = 200;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const conversation: FlowModelContext = {
  system: 'You are the support agent of Acme.',
  messages: [
    { role: 'assistant', content: 'How can I help?' },
    { role: 'user', content: 'My parcel has not arrived.' },
  ],
};
const lastMessage = (request: Recorded) => request.body.messages.at(-1)?.content ?? '';
const prompted = (options?: { temperature?: number; maxTokens?: number }) =>
  new PromptedFlowModel(new OpenAiCompatibleModel({ baseUrl, model: 'local-model' }), options);

describe('PromptedFlowModel.respond', () => {
  it('sends the system text, the conversation and the prompt as the last user turn, with its temperature', async () => {
    reply = '  Sorry to hear that. What is your order number?\n';
    const model = prompted({ temperature: 0.7, maxTokens: 256 });
    const answer = await model.respond(conversation, 'Apologize and ask for the order number.');

    expect(answer).toBe('Sorry to hear that. What is your order number?');
    expect(model.name).toBe('openai-compatible:local-model');
    expect(recorded).toHaveLength(1);
    const { body } = recorded[0];
    expect(body.model).toBe('local-model');
    expect(body.temperature).toBe(0.7);
    expect(body.max_tokens).toBe(256);
    expect(body.messages[0].role).toBe('system');
    expect(body.messages[0].content).toMatch(/^You are the support agent of Acme\.\n\n.*instruction/s);
    expect(body.messages.slice(1)).toEqual([
      { role: 'assistant', content: 'How can I help?' },
      { role: 'user', content: 'My parcel has not arrived.' },
      { role: 'user', content: 'Apologize and ask for the order number.' },
    ]);
  });

  it('sends its instruction alone as system text when the context has none, and no unset options', async () => {
    await prompted().respond({ messages: [] }, 'Greet the user.');

    const { body } = recorded[0];
    expect(body.messages).toHaveLength(2);
    expect(body.messages[0]).toMatchObject({ role: 'system', content: expect.stringMatching(/^You speak for/) });
    expect(body.messages[1]).toEqual({ role: 'user', content: 'Greet the user.' });
    expect(body).not.toHaveProperty('temperature');
    expect(body).not.toHaveProperty('max_tokens');
  });

  it('lets a ModelError of the provider through', async () => {
    status = 500;
    const error = await prompted()
      .respond(conversation, 'Answer.')
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ status: 502, code: 'MODEL_ERROR' });
  });
});

describe('PromptedFlowModel.chooseCondition', () => {
  const conditions = ['The parcel is lost', 'The user wants a refund', 'The user asks for the delivery date'];

  it('asks once, at temperature 0, for the number of the condition after the conversation', async () => {
    reply = '3';
    const choice = await prompted({ temperature: 0.9 }).chooseCondition(conversation, { conditions, allowStay: true });

    expect(choice).toBe(2);
    expect(recorded).toHaveLength(1);
    const { body } = recorded[0];
    expect(body.temperature).toBe(0);
    expect(body.messages.slice(1, 3)).toEqual(conversation.messages);
    const question = lastMessage(recorded[0]);
    expect(question).toContain('0 = stay on this step');
    expect(question).toContain(
      '1 = The parcel is lost\n2 = The user wants a refund\n3 = The user asks for the delivery date',
    );
    expect(question).toMatch(/just the number, or none/);
  });

  it('offers no stay option when staying is not allowed', async () => {
    reply = '1';
    await prompted().chooseCondition(conversation, { conditions, allowStay: false });

    expect(lastMessage(recorded[0])).not.toContain('0 =');
  });

  it.each([
    ['2', true, 1],
    ['Condition 2.', false, 1],
    ['none', true, null],
    ['None of them; 1 and 2 do not hold.', true, null],
    ['7', true, null],
    ['-1', true, null],
    ['0', true, 'stay'],
    ['0', false, null],
    ['I cannot tell.', true, null],
    ['<think>Maybe 1? No, the user asked about dates.</think>\n3', false, 2],
  ] as const)('reads the answer %j (stay allowed: %s) as %j', async (answer, allowStay, expected) => {
    reply = answer;

    await expect(prompted().chooseCondition(conversation, { conditions, allowStay })).resolves.toBe(expected);
  });

  it('puts a condition written over several lines on one line', async () => {
    reply = '1';
    await prompted().chooseCondition(conversation, { conditions: ['The parcel\n  is lost'], allowStay: false });

    expect(lastMessage(recorded[0])).toContain('1 = The parcel is lost\n');
  });

  it('does not call the model when there is nothing to choose from', async () => {
    await expect(prompted().chooseCondition(conversation, { conditions: [], allowStay: false })).resolves.toBeNull();
    expect(recorded).toHaveLength(0);
  });
});

describe('PromptedFlowModel.inferParameters', () => {
  const parameters: Record<string, ToolParameterSpec> = {
    orderId: { type: 'string', description: 'The order number', required: true },
    urgent: { type: 'boolean' },
    quantity: { type: 'number' },
    address: { type: 'object' },
  };
  const infer = (missing: readonly string[] = ['orderId', 'urgent', 'quantity']) =>
    prompted({ temperature: 0.8, maxTokens: 300 }).inferParameters(conversation, {
      toolName: 'track_parcel',
      hint: 'The order number\nstarts with A-',
      parameters,
      missing,
      memory: { customerName: 'Ada' },
    });

  it('asks once, at temperature 0, for a JSON object with exactly the missing keys', async () => {
    reply = '{"orderId": "A-123", "urgent": true, "quantity": 2}';

    await expect(infer()).resolves.toEqual({ orderId: 'A-123', urgent: true, quantity: 2 });
    expect(recorded).toHaveLength(1);
    const { body } = recorded[0];
    expect(body.temperature).toBe(0);
    expect(body.max_tokens).toBe(300);
    expect(body.messages.slice(1, 3)).toEqual(conversation.messages);
    const question = lastMessage(recorded[0]);
    expect(question).toContain('Tool: track_parcel');
    expect(question).toContain('Hint: The order number starts with A-');
    expect(question).toContain('Session memory (JSON): {"customerName":"Ada"}');
    expect(question).toContain('- "orderId" (string, required): The order number');
    expect(question).toContain('- "urgent" (boolean)');
    expect(question).toContain('exactly these keys: "orderId", "urgent", "quantity".');
    expect(question).not.toContain('address');
  });

  it('reads a fenced ```json block', async () => {
    reply = 'Here you go:\n```json\n{\n  "orderId": "A-9",\n  "urgent": false\n}\n```\nAnything else?';

    await expect(infer()).resolves.toEqual({ orderId: 'A-9', urgent: false });
  });

  it('reads the first {...} block of an answer in words, braces inside strings included', async () => {
    reply = 'Sure! {"orderId": "A-{7}", "quantity": 1} is what I found. {"orderId": "B"}';

    await expect(infer()).resolves.toEqual({ orderId: 'A-{7}', quantity: 1 });
  });

  it('drops keys not asked for and values of the wrong type', async () => {
    reply = '{"orderId": 123, "urgent": "yes", "quantity": "2", "address": {"city": "Paris"}, "extra": 1}';

    await expect(infer()).resolves.toEqual({});
    reply = '{"orderId": null, "urgent": true, "extra": 1}';
    await expect(infer()).resolves.toEqual({ urgent: true });
  });

  it.each([
    ['garbage', 'I do not know the order number.'],
    ['invalid JSON', '{orderId: A-1,}'],
    ['an unclosed object', '{"orderId": "A-1"'],
    ['a fence holding no object', '```json\n["A-1", true]\n```\n{"orderId": "A-2"}'],
  ])('infers nothing from %s', async (_, answer) => {
    reply = answer;

    await expect(infer()).resolves.toEqual({});
  });

  it('does not call the model when no missing parameter has a spec', async () => {
    await expect(infer([])).resolves.toEqual({});
    await expect(infer(['unknown'])).resolves.toEqual({});
    expect(recorded).toHaveLength(0);
  });
});

describe('flowModelResolverFromEnv', () => {
  const openAiEnv = () => ({ MODEL_BASE_URL: baseUrl, MODEL_NAME: 'default-model' });
  const failure = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      return error;
    }
    throw new Error('expected a failure');
  };

  it('defaults to the OpenAI-compatible server, then Bedrock Converse, then the offline model', async () => {
    const openAi = flowModelResolverFromEnv({ ...openAiEnv(), BEDROCK_FLOW_MODEL_ID: 'amazon.nova-lite-v1:0' })(
      undefined,
    );
    expect(openAi).toBeInstanceOf(PromptedFlowModel);
    expect(openAi.name).toBe('openai-compatible:default-model');
    await openAi.respond(conversation, 'Answer.');
    expect(recorded[0].body.model).toBe('default-model');

    const bedrock = flowModelResolverFromEnv({ BEDROCK_FLOW_MODEL_ID: 'amazon.nova-lite-v1:0' })(undefined);
    expect(bedrock).toBeInstanceOf(PromptedFlowModel);
    expect((bedrock as PromptedFlowModel).provider).toBeInstanceOf(BedrockConverseModel);
    expect(bedrock.name).toBe('bedrock-converse:amazon.nova-lite-v1:0');

    expect(flowModelResolverFromEnv({})(undefined)).toBeInstanceOf(OfflineFlowModel);
    expect(flowModelResolverFromEnv({ MODEL_BASE_URL: '', BEDROCK_FLOW_MODEL_ID: '' })(undefined).name).toBe('offline');
  });

  it('gives the offline model for ChatOffline, whatever is configured', () => {
    const resolve = flowModelResolverFromEnv({ ...openAiEnv(), BEDROCK_FLOW_MODEL_ID: 'amazon.nova-lite-v1:0' });

    expect(resolve({ name: 'ChatOffline' })).toBeInstanceOf(OfflineFlowModel);
  });

  it('sends the model, temperature and maxTokens of a ChatOpenAICompatible node to the configured server', async () => {
    const model = flowModelResolverFromEnv(openAiEnv())({
      name: 'ChatOpenAICompatible',
      properties: { model: 'llama3.1', temperature: 0.4, maxTokens: 99 },
    });
    await model.respond(conversation, 'Answer.');
    await model.chooseCondition(conversation, { conditions: ['x'], allowStay: false });

    expect(model.name).toBe('openai-compatible:llama3.1');
    expect(recorded.map(({ url, body }) => [url, body.model, body.temperature, body.max_tokens])).toEqual([
      ['/v1/chat/completions', 'llama3.1', 0.4, 99],
      ['/v1/chat/completions', 'llama3.1', 0, 99],
    ]);
  });

  it('uses MODEL_NAME for a ChatOpenAICompatible node without a model', () => {
    expect(flowModelResolverFromEnv(openAiEnv())({ name: 'ChatOpenAICompatible' }).name).toBe(
      'openai-compatible:default-model',
    );
  });

  it('never takes the endpoint from the definition', async () => {
    const config = {
      name: 'ChatOpenAICompatible',
      properties: { model: 'm', baseUrl: 'http://169.254.169.254/latest', endpoint: 'http://10.0.0.1' },
    } as unknown as LlmConfig;
    await flowModelResolverFromEnv(openAiEnv())(config).respond(conversation, 'Answer.');

    expect(recorded).toHaveLength(1);
    expect(recorded[0].body.model).toBe('m');
  });

  it('builds one provider per class and model, whatever the temperature', () => {
    const resolve = flowModelResolverFromEnv({ ...openAiEnv(), BEDROCK_FLOW_MODEL_ID: 'amazon.nova-lite-v1:0' });
    const provider = (config: LlmConfig | undefined) => (resolve(config) as PromptedFlowModel).provider;

    const llama = provider({ name: 'ChatOpenAICompatible', properties: { model: 'llama3.1', temperature: 0.1 } });
    expect(provider({ name: 'ChatOpenAICompatible', properties: { model: 'llama3.1', temperature: 0.9 } })).toBe(llama);
    expect(provider({ name: 'ChatOpenAICompatible', properties: { model: 'qwen' } })).not.toBe(llama);
    expect(provider({ name: 'ChatOpenAICompatible' })).toBe(provider(undefined));
    const nova = provider({ name: 'ChatBedrockConverse', properties: { temperature: 0.2 } });
    expect(provider({ name: 'ChatBedrockConverse', properties: { model: 'amazon.nova-lite-v1:0' } })).toBe(nova);
  });

  it('picks the Bedrock model of a ChatBedrockConverse node, else BEDROCK_FLOW_MODEL_ID', () => {
    const resolve = flowModelResolverFromEnv({ ...openAiEnv(), BEDROCK_FLOW_MODEL_ID: 'amazon.nova-lite-v1:0' });
    const named = resolve({ name: 'ChatBedrockConverse', properties: { model: 'eu.amazon.nova-pro-v1:0' } });

    expect(named).toBeInstanceOf(PromptedFlowModel);
    expect((named as PromptedFlowModel).provider).toBeInstanceOf(BedrockConverseModel);
    expect(named.name).toBe('bedrock-converse:eu.amazon.nova-pro-v1:0');
    expect(resolve({ name: 'ChatBedrockConverse' }).name).toBe('bedrock-converse:amazon.nova-lite-v1:0');
    expect(flowModelResolverFromEnv({})({ name: 'ChatBedrockConverse', properties: { model: 'm' } }).name).toBe(
      'bedrock-converse:m',
    );
  });

  it('fails with a 503 MODEL_NOT_CONFIGURED naming the variable when the class has no configuration', () => {
    const resolve = flowModelResolverFromEnv({ BEDROCK_FLOW_MODEL_ID: '' });

    const openAi = failure(() => resolve({ name: 'ChatOpenAICompatible', properties: { model: 'llama3.1' } }));
    expect(openAi).toBeInstanceOf(AppError);
    expect(openAi).toMatchObject({ status: 503, code: 'MODEL_NOT_CONFIGURED' });
    expect((openAi as AppError).message).toContain('MODEL_BASE_URL');

    const bedrock = failure(() => resolve({ name: 'ChatBedrockConverse', properties: { temperature: 0 } }));
    expect(bedrock).toMatchObject({ status: 503, code: 'MODEL_NOT_CONFIGURED' });
    expect((bedrock as AppError).message).toContain('BEDROCK_FLOW_MODEL_ID');
  });

  it('fails at creation on an invalid OpenAI-compatible configuration, as the generate model does', () => {
    expect(() => flowModelResolverFromEnv({ MODEL_BASE_URL: baseUrl })).toThrow(/MODEL_NAME/);
    expect(() => flowModelResolverFromEnv({ MODEL_BASE_URL: 'file:///etc/passwd', MODEL_NAME: 'm' })).toThrow(
      /MODEL_BASE_URL/,
    );
  });
});
