/** The Bedrock Converse adapter's request shape, against a stand-in client (Bedrock cannot run here). */
import { type BedrockRuntimeClient, type ConverseCommand, ThrottlingException } from '@aws-sdk/client-bedrock-runtime';
import { BedrockConverseModel, CONVERSATION_START } from '#adapters/model/bedrock-converse';
import { ServiceBusyError } from '#core/errors';
import { ModelError } from '#ports/model';

function recordingClient(answer: unknown) {
  const sent: ConverseCommand['input'][] = [];
  const client = {
    send: async (command: ConverseCommand) => {
      sent.push(command.input);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  } as unknown as BedrockRuntimeClient;
  return { client, sent };
}

const reply = (text: string) => ({ output: { message: { role: 'assistant', content: [{ text }] } } });

it('sends system text apart and merges consecutive turns of one role', async () => {
  const { client, sent } = recordingClient(reply('ok'));
  const model = new BedrockConverseModel(client, 'amazon.nova-lite-v1:0');
  const answer = await model.generate({
    system: 'Be brief.',
    messages: [
      { role: 'user', content: 'a' },
      { role: 'system', content: 'Relevant knowledge: x' },
      { role: 'user', content: 'b' },
    ],
  });
  expect(answer.text).toBe('ok');
  expect(sent[0].system).toEqual([{ text: 'Be brief.' }, { text: 'Relevant knowledge: x' }]);
  expect(sent[0].messages).toEqual([{ role: 'user', content: [{ text: 'a' }, { text: 'b' }] }]);
});

it('opens a conversation that starts with the assistant with a user turn, as Converse requires', async () => {
  const { client, sent } = recordingClient(reply('fine'));
  const model = new BedrockConverseModel(client, 'amazon.nova-lite-v1:0');
  await model.generate({
    messages: [
      { role: 'assistant', content: 'Hello, how can I help?' },
      { role: 'user', content: 'My router is broken' },
    ],
  });
  expect(sent[0].messages?.map((m) => [m.role, m.content?.[0].text])).toEqual([
    ['user', CONVERSATION_START],
    ['assistant', 'Hello, how can I help?'],
    ['user', 'My router is broken'],
  ]);
});

it('turns a failure into a ModelError that names the model and not the cause', async () => {
  const { client } = recordingClient(Object.assign(new Error('AccessDeniedException: nope'), { name: 'AccessDenied' }));
  const failure = new BedrockConverseModel(client, 'm1').generate({ messages: [{ role: 'user', content: 'x' }] });
  await expect(failure).rejects.toBeInstanceOf(ModelError);
  await expect(failure).rejects.toMatchObject({ code: 'MODEL_ERROR', message: 'The model bedrock-converse:m1 failed' });
});

it('answers a model still throttled after the SDK retries with 503 SERVICE_BUSY and a wait, not MODEL_ERROR', async () => {
  const throttled = new ThrottlingException({ message: 'Too many requests', $metadata: { httpStatusCode: 429 } });
  const { client } = recordingClient(throttled);
  const failure = new BedrockConverseModel(client, 'm1').generate({ messages: [{ role: 'user', content: 'x' }] });
  await expect(failure).rejects.toBeInstanceOf(ServiceBusyError);
  await expect(failure).rejects.toMatchObject({ status: 503, code: 'SERVICE_BUSY', retryAfterSeconds: 5 });
});

it("says an earlier tool node's step in words in a user turn (tool blocks would need a toolConfig)", async () => {
  const { client, sent } = recordingClient(reply('shipped'));
  const model = new BedrockConverseModel(client, 'amazon.nova-lite-v1:0');
  await model.generate({
    messages: [
      { role: 'assistant', content: 'Hello Ada.' },
      {
        role: 'tool',
        content: 'Tool node Lookup called lookupOrder with {"orderId":"A-1"}; it answered {"status":"shipped"}',
        toolStep: {
          call: { id: 'tool_step_1', name: 'lookupOrder', input: { orderId: 'A-1' } },
          result: { status: 'shipped' },
        },
      },
      { role: 'user', content: 'Tell the customer where the order is.' },
    ],
  });
  expect(sent[0].toolConfig).toBeUndefined();
  expect(sent[0].messages).toEqual([
    { role: 'user', content: [{ text: CONVERSATION_START }] },
    { role: 'assistant', content: [{ text: 'Hello Ada.' }] },
    {
      role: 'user',
      content: [
        { text: 'Tool node Lookup called lookupOrder with {"orderId":"A-1"}; it answered {"status":"shipped"}' },
        { text: 'Tell the customer where the order is.' },
      ],
    },
  ]);
});

it('sends the inference parameters in inferenceConfig, the temperature cut to Converse range, and reads usage back', async () => {
  const { client, sent } = recordingClient({
    ...reply('ok'),
    usage: { inputTokens: 21, outputTokens: 3, totalTokens: 24 },
  });
  const model = new BedrockConverseModel(client, 'amazon.nova-lite-v1:0');
  const answer = await model.generate({
    messages: [{ role: 'user', content: 'a' }],
    temperature: 1.5,
    maxTokens: 300,
    topP: 0.8,
    stopSequences: ['END'],
  });
  expect(sent[0].inferenceConfig).toEqual({ temperature: 1, maxTokens: 300, topP: 0.8, stopSequences: ['END'] });
  expect(answer).toEqual({ text: 'ok', usage: { inputTokens: 21, outputTokens: 3 } });
});
