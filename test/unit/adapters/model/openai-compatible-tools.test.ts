/**
 * Tool calling over the OpenAI chat completions protocol, against the scripted model server on 127.0.0.1: the tools
 * a prompted flow model offers (their JSON schemas), the calls read back from `tool_calls`, and each round sent
 * again as the assistant's `tool_calls` followed by one `tool` message per result.
 */
import { OpenAiCompatibleModel } from '#adapters/model/openai-compatible';
import { modelToolOf, PromptedFlowModel } from '#adapters/model/prompted-flow-model';
import type { ScopedTool } from '#ports/flows';
import { ModelError } from '#ports/model';
import {
  type ScriptedModelServer,
  scriptedUsage,
  startScriptedModelServer,
  toolResults,
} from '../../../helpers/scripted-model-server';

let server: ScriptedModelServer;
let model: OpenAiCompatibleModel;

const lookupOrder: ScopedTool = {
  name: 'lookupOrder',
  description: 'Finds an order by its id',
  parameters: {
    orderId: { type: 'string', required: true, description: 'the id on the receipt' },
    lines: { type: 'array' },
  },
  anyParameters: false,
};

beforeAll(async () => {
  server = await startScriptedModelServer();
  model = new OpenAiCompatibleModel({ baseUrl: server.baseUrl, model: 'scripted' });
});

afterAll(async () => {
  await server.close();
});

describe('OpenAiCompatibleModel with tools', () => {
  it('sends each tool as a function with its JSON schema and reads tool_calls back with parsed arguments', async () => {
    server.script(() => ({ toolCalls: [{ id: 'call_a', name: 'lookupOrder', arguments: { orderId: 'A-1' } }] }));
    const response = await model.generate({
      messages: [{ role: 'user', content: 'Where is order A-1?' }],
      tools: [modelToolOf(lookupOrder)],
    });
    expect(response).toEqual({
      text: '',
      toolCalls: [{ id: 'call_a', name: 'lookupOrder', input: { orderId: 'A-1' } }],
      usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) },
    });
    expect(server.requests[0].tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'lookupOrder',
          description: 'Finds an order by its id',
          parameters: {
            type: 'object',
            properties: {
              orderId: { type: 'string', description: 'the id on the receipt' },
              lines: { type: 'array', items: {} },
            },
            required: ['orderId'],
            additionalProperties: false,
          },
        },
      },
    ]);
  });

  it('sends a round as the assistant tool_calls, then one tool message per result, in order', async () => {
    server.script(() => ({ content: 'Order A-1 shipped.' }));
    const response = await model.generate({
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Where is order A-1?' }],
      tools: [modelToolOf(lookupOrder)],
      toolRounds: [
        {
          text: 'Looking it up.',
          calls: [
            { id: 'call_a', name: 'lookupOrder', input: { orderId: 'A-1' } },
            { id: 'call_b', name: 'lookupOrder', input: '{not json' },
          ],
          results: [
            { callId: 'call_a', content: { status: 'shipped' } },
            { callId: 'call_b', content: { error: { code: 'TOOL_PARAMETERS_INVALID', message: 'x' } } },
          ],
        },
      ],
    });
    const { usage } = response;
    expect(response).toEqual({ text: 'Order A-1 shipped.', usage });
    // What the server counted for this request: the usage is read from the answer, not made up.
    const counted = scriptedUsage(server.requests[0], { content: 'Order A-1 shipped.' });
    expect(usage).toEqual({ inputTokens: counted.prompt_tokens, outputTokens: counted.completion_tokens });
    expect(server.requests[0].messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Where is order A-1?' },
      {
        role: 'assistant',
        content: 'Looking it up.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'lookupOrder', arguments: '{"orderId":"A-1"}' } },
          // Arguments that were not JSON go back as the model wrote them.
          { id: 'call_b', type: 'function', function: { name: 'lookupOrder', arguments: '{not json' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"status":"shipped"}' },
      {
        role: 'tool',
        tool_call_id: 'call_b',
        content: '{"error":{"code":"TOOL_PARAMETERS_INVALID","message":"x"}}',
      },
    ]);
  });

  it('keeps arguments that are not JSON as their text and numbers calls that come without an id', async () => {
    server.script(() => ({
      status: 200,
      body: {
        choices: [
          {
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [
                { type: 'function', function: { name: 'lookupOrder', arguments: '{"orderId": ' } },
                { type: 'function', function: { name: 'lookupOrder', arguments: { orderId: 'B-2' } } },
              ],
            },
          },
        ],
      },
    }));
    const response = await model.generate({
      messages: [{ role: 'user', content: 'x' }],
      tools: [modelToolOf(lookupOrder)],
    });
    expect(response.toolCalls).toEqual([
      { id: 'call_0', name: 'lookupOrder', input: '{"orderId": ' },
      { id: 'call_1', name: 'lookupOrder', input: { orderId: 'B-2' } },
    ]);
  });

  it('ignores tool_calls when no tool was offered, so an answer without text is still an error', async () => {
    server.script(() => ({ toolCalls: [{ name: 'lookupOrder', arguments: {} }] }));
    const answer = model.generate({ messages: [{ role: 'user', content: 'x' }] });
    await expect(answer).rejects.toBeInstanceOf(ModelError);
    expect(server.requests[0].tools).toBeUndefined();
  });
});

describe('PromptedFlowModel.respondWithTools', () => {
  it('asks with the prompt as the last user turn and the tools instruction, and returns the calls', async () => {
    server.script(() => ({ toolCalls: [{ id: 'call_1', name: 'lookupOrder', arguments: { orderId: 'A-1' } }] }));
    const flowModel = new PromptedFlowModel(model, { temperature: 0.3 });
    const turn = await flowModel.respondWithTools(
      { system: 'You are the support assistant.', messages: [{ role: 'user', content: 'Where is A-1?' }] },
      { prompt: 'Answer about order A-1.', tools: [lookupOrder], rounds: [], memory: {} },
    );
    expect(turn).toEqual({ calls: [{ id: 'call_1', name: 'lookupOrder', input: { orderId: 'A-1' } }] });
    const [sent] = server.requests;
    expect(sent.temperature).toBe(0.3);
    expect(sent.messages.at(-1)).toEqual({ role: 'user', content: 'Answer about order A-1.' });
    expect(sent.messages[0].content).toMatch(/^You are the support assistant\.\n\n.*You may call the tools/s);
    expect(sent.tools?.map((t) => t.function.name)).toEqual(['lookupOrder']);
  });

  it('answers with the text once the model stops calling, the results having been sent as tool messages', async () => {
    server.script(() => ({ content: '  Order A-1 shipped on 20 November.  ' }));
    const flowModel = new PromptedFlowModel(model);
    const turn = await flowModel.respondWithTools(
      { messages: [] },
      {
        prompt: 'Answer about order A-1.',
        tools: [lookupOrder],
        rounds: [
          {
            calls: [{ id: 'call_1', name: 'lookupOrder', input: { orderId: 'A-1' } }],
            results: [{ callId: 'call_1', content: { status: 'shipped' } }],
          },
        ],
        memory: {},
      },
    );
    expect(turn).toEqual({ answer: 'Order A-1 shipped on 20 November.' });
    expect(toolResults(server.requests[0])).toEqual([{ callId: 'call_1', content: { status: 'shipped' } }]);
  });

  it('describes setMemory, which takes any parameter, as an object that allows more properties', () => {
    expect(
      modelToolOf({ name: 'setMemory', description: 'Writes memory', parameters: {}, anyParameters: true }).inputSchema,
    ).toEqual({ type: 'object', properties: {}, additionalProperties: true });
  });
});
