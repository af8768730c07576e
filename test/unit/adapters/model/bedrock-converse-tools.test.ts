/**
 * Tool calling through the Bedrock Converse adapter, against recorded Converse shapes (Bedrock cannot run here, so
 * the SDK client's `send` is the one thing stood in for): `toolConfig` with each tool's JSON schema, `toolUse`
 * blocks read back as calls, and each round sent again as the assistant's `toolUse` blocks and a user turn of
 * `toolResult` blocks.
 */
import type { BedrockRuntimeClient, ConverseCommand, ConverseCommandOutput } from '@aws-sdk/client-bedrock-runtime';
import { BedrockConverseModel } from '#adapters/model/bedrock-converse';
import { modelToolOf, PromptedFlowModel } from '#adapters/model/prompted-flow-model';
import type { ScopedTool } from '#ports/flows';
import { ModelError } from '#ports/model';

/** A Converse answer asking for a tool, as Bedrock returns it (Claude 3 Haiku; ids and figures from a real run's shape). */
const TOOL_USE_OUTPUT = {
  $metadata: {
    httpStatusCode: 200,
    requestId: '8d1a43c6-0b9d-4f5e-9c61-2f1c7a0e5b11',
    attempts: 1,
    totalRetryDelay: 0,
  },
  output: {
    message: {
      role: 'assistant',
      content: [
        { text: 'I will look up the order.' },
        { toolUse: { toolUseId: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: 'lookupOrder', input: { orderId: 'A-1' } } },
      ],
    },
  },
  stopReason: 'tool_use',
  usage: { inputTokens: 412, outputTokens: 61, totalTokens: 473 },
  metrics: { latencyMs: 1203 },
} as unknown as ConverseCommandOutput;

const FINAL_OUTPUT = {
  $metadata: {
    httpStatusCode: 200,
    requestId: '0f0c9a8e-5b7d-4e36-8a0b-7d9b3f0c2a44',
    attempts: 1,
    totalRetryDelay: 0,
  },
  output: { message: { role: 'assistant', content: [{ text: 'Order A-1 shipped on 20 November.' }] } },
  stopReason: 'end_turn',
  usage: { inputTokens: 530, outputTokens: 14, totalTokens: 544 },
  metrics: { latencyMs: 640 },
} as unknown as ConverseCommandOutput;

const lookupOrder: ScopedTool = {
  name: 'lookupOrder',
  description: 'Finds an order by its id',
  parameters: { orderId: { type: 'string', required: true } },
  anyParameters: false,
};

function scriptedClient(...answers: ConverseCommandOutput[]) {
  const sent: ConverseCommand['input'][] = [];
  const client = {
    send: async (command: ConverseCommand) => {
      sent.push(command.input);
      const answer = answers.shift();
      if (!answer) throw new Error('no answer left');
      return answer;
    },
  } as unknown as BedrockRuntimeClient;
  return { client, sent };
}

it('sends toolConfig with each tool JSON schema and reads toolUse blocks back as calls', async () => {
  const { client, sent } = scriptedClient(TOOL_USE_OUTPUT);
  const model = new BedrockConverseModel(client, 'anthropic.claude-3-haiku-20240307-v1:0');
  const response = await model.generate({
    messages: [{ role: 'user', content: 'Where is order A-1?' }],
    tools: [modelToolOf(lookupOrder)],
  });
  expect(response).toEqual({
    text: 'I will look up the order.',
    toolCalls: [{ id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: 'lookupOrder', input: { orderId: 'A-1' } }],
    // The recorded answer's `usage`.
    usage: { inputTokens: 412, outputTokens: 61 },
  });
  expect(sent[0].toolConfig).toEqual({
    tools: [
      {
        toolSpec: {
          name: 'lookupOrder',
          description: 'Finds an order by its id',
          inputSchema: {
            json: {
              type: 'object',
              properties: { orderId: { type: 'string' } },
              required: ['orderId'],
              additionalProperties: false,
            },
          },
        },
      },
    ],
  });
});

it('runs a prompt node turn by turn: the call, then the result as a toolResult block, then the answer', async () => {
  const { client, sent } = scriptedClient(TOOL_USE_OUTPUT, FINAL_OUTPUT);
  const flowModel = new PromptedFlowModel(new BedrockConverseModel(client, 'anthropic.claude-3-haiku-20240307-v1:0'));
  const context = { system: 'You are the support assistant.', messages: [] };
  const request = { prompt: 'Tell the customer where order A-1 is.', tools: [lookupOrder], memory: {} };

  const first = await flowModel.respondWithTools(context, { ...request, rounds: [] });
  expect(first).toEqual({
    calls: [{ id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: 'lookupOrder', input: { orderId: 'A-1' } }],
    text: 'I will look up the order.',
  });
  if (!('calls' in first)) throw new Error('expected calls');
  const second = await flowModel.respondWithTools(context, {
    ...request,
    rounds: [
      {
        calls: first.calls,
        text: first.text,
        results: [
          { callId: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', content: { status: 'shipped', shippedAt: '2026-11-20' } },
        ],
      },
    ],
  });
  expect(second).toEqual({ answer: 'Order A-1 shipped on 20 November.' });

  // The second request, as Converse wants it: user, assistant (text + toolUse), user (toolResult), and toolConfig.
  expect(sent[1].messages).toEqual([
    { role: 'user', content: [{ text: 'Tell the customer where order A-1 is.' }] },
    {
      role: 'assistant',
      content: [
        { text: 'I will look up the order.' },
        { toolUse: { toolUseId: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: 'lookupOrder', input: { orderId: 'A-1' } } },
      ],
    },
    {
      role: 'user',
      content: [
        {
          toolResult: {
            toolUseId: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q',
            content: [{ json: { status: 'shipped', shippedAt: '2026-11-20' } }],
          },
        },
      ],
    },
  ]);
  expect(sent[1].toolConfig?.tools?.map((t) => t.toolSpec?.name)).toEqual(['lookupOrder']);
  expect(sent[1].system?.[0].text).toMatch(/^You are the support assistant\.\n\n/);
});

it('sends a result that is not a JSON object as its JSON text, and no status field', async () => {
  const { client, sent } = scriptedClient(FINAL_OUTPUT);
  await new BedrockConverseModel(client, 'm1').generate({
    messages: [{ role: 'user', content: 'x' }],
    tools: [modelToolOf(lookupOrder)],
    toolRounds: [
      {
        calls: [{ id: 't1', name: 'lookupOrder', input: { orderId: 'A-1' } }],
        results: [{ callId: 't1', content: ['a', 1] }],
      },
    ],
  });
  expect(sent[0].messages?.at(-1)).toEqual({
    role: 'user',
    content: [{ toolResult: { toolUseId: 't1', content: [{ text: '["a",1]' }] } }],
  });
});

it('takes no call from an answer to a request without tools: no text is still an error', async () => {
  const toolOnly = {
    ...TOOL_USE_OUTPUT,
    output: { message: { role: 'assistant', content: [TOOL_USE_OUTPUT.output?.message?.content?.[1]] } },
  } as unknown as ConverseCommandOutput;
  const { client, sent } = scriptedClient(toolOnly);
  await expect(
    new BedrockConverseModel(client, 'm1').generate({ messages: [{ role: 'user', content: 'x' }] }),
  ).rejects.toBeInstanceOf(ModelError);
  expect(sent[0].toolConfig).toBeUndefined();
});
