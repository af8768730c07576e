/**
 * Scoped tools of prompt nodes and the retrieval built-ins, where no engine is needed: how a definition naming them
 * is validated (every problem with its node, field and rule), and how the offline model calls a tool.
 */
import { BUILT_IN_TOOLS, type DefinitionProblem, LIMITS, validateDefinition } from '#core/flows/definition';
import { OFFLINE_TOOL_CALL_ID, OFFLINE_TOOL_RESULT_MAX_CHARACTERS, OfflineFlowModel } from '#core/flows/offline-model';
import type { ScopedTool } from '#ports/flows';

function definitionWith(nodes: Record<string, unknown>[]) {
  const names = ['Start', ...nodes.map((n) => n.name as string)];
  return {
    tools: [
      {
        name: 'lookupOrder',
        url: 'https://tools.example.com/orders',
        parameters: { orderId: { type: 'string', required: true } },
      },
    ],
    flows: [
      {
        name: 'main',
        nodes: [{ name: 'Start', type: 'trigger', triggerType: 'webhook' }, ...nodes],
        edges: names.slice(1).map((to, i) => ({ from: names[i], to, type: 'stepForward' })),
      },
    ],
  };
}

const prompt = (tools: unknown) => ({
  name: 'Answer',
  type: 'promptNode',
  displayName: 'Answer',
  prompt: 'Help.',
  tools,
});

function problems(definition: unknown): Pick<DefinitionProblem, 'field' | 'rule' | 'node'>[] {
  const outcome = validateDefinition(definition);
  return outcome.valid ? [] : outcome.problems.map(({ field, rule, node }) => ({ field, rule, node }));
}

describe('validation of scoped tools and retrieval tools', () => {
  it('accepts declared and built-in tools on a prompt node, the retrieval tools among them', () => {
    const outcome = validateDefinition(
      definitionWith([prompt(['lookupOrder', 'setMemory', 'retrieveFromKnowledgeBase'])]),
    );
    expect(outcome.problems).toEqual([]);
    expect(Object.keys(BUILT_IN_TOOLS)).toEqual(
      expect.arrayContaining(['retrieveFromKnowledgeBase', 'retrieveAndGenerateFromKnowledgeBase']),
    );
  });

  it('reports an unknown tool and a tool listed twice, each at its index, in one answer', () => {
    expect(problems(definitionWith([prompt(['lookupOrder', 'lookupInvoice', 'lookupOrder'])]))).toEqual([
      { field: 'flows.0.nodes.1.tools.1', rule: 'tool.unknown', node: 'Answer' },
      { field: 'flows.0.nodes.1.tools.2', rule: 'tool.duplicate', node: 'Answer' },
    ]);
  });

  it(`refuses more than ${LIMITS.toolsPerPromptNode} tools on one node, and a name that is no tool name`, () => {
    const many = Array.from({ length: LIMITS.toolsPerPromptNode + 1 }, (_, i) => `tool${i}`);
    expect(problems(definitionWith([prompt(many)]))).toEqual([
      { field: 'flows.0.nodes.1.tools', rule: 'maxItems', node: 'Answer' },
    ]);
    expect(problems(definitionWith([prompt(['not a name'])]))).toEqual([
      { field: 'flows.0.nodes.1.tools.0', rule: 'format.regex', node: 'Answer' },
    ]);
  });

  it('accepts a tool node on a retrieval tool and refuses a parameter the tool does not have', () => {
    const search = {
      name: 'Search',
      type: 'tool',
      toolName: 'retrieveFromKnowledgeBase',
      parameters: { query: '{memory.question}', numberOfResults: 3, filters: [] },
    };
    expect(problems(definitionWith([search]))).toEqual([]);
    expect(problems(definitionWith([{ ...search, parameters: { query: 'x', topK: 3 } }]))).toEqual([
      { field: 'flows.0.nodes.1.parameters.topK', rule: 'tool.unknownParameter', node: 'Search' },
    ]);
  });
});

describe('the offline model with scoped tools', () => {
  const model = new OfflineFlowModel();
  const tools: ScopedTool[] = [
    {
      name: 'lookupOrder',
      description: 'Finds an order',
      parameters: { orderId: { type: 'string', required: true }, quantity: { type: 'number' } },
      anyParameters: false,
    },
    { name: 'lookup', description: 'A shorter name', parameters: {}, anyParameters: false },
    { name: 'setMemory', description: 'Writes memory', parameters: {}, anyParameters: true },
  ];

  it('calls the tool named earliest in the prompt, as a whole word, with what memory gives of its parameters', async () => {
    const turn = await model.respondWithTools(
      { messages: [] },
      {
        prompt: 'Use lookupOrder to find the order, then setMemory.',
        tools,
        rounds: [],
        memory: { orderId: 'A-1', quantity: '2', other: 'x' },
      },
    );
    // `lookup` is inside `lookupOrder`, so it is not named; quantity is converted as inferParameters does.
    expect(turn).toEqual({
      calls: [{ id: OFFLINE_TOOL_CALL_ID, name: 'lookupOrder', input: { orderId: 'A-1', quantity: 2 } }],
    });
  });

  it('answers like respond, calling nothing, when no scoped tool is named in the prompt', async () => {
    const turn = await model.respondWithTools(
      { messages: [] },
      { prompt: '  Greet the customer.  ', tools, rounds: [], memory: {} },
    );
    expect(turn).toEqual({ answer: 'Greet the customer.' });
  });

  it('answers after its call with the prompt and one line per result, cut when long', async () => {
    const long = 'x'.repeat(OFFLINE_TOOL_RESULT_MAX_CHARACTERS * 2);
    const turn = await model.respondWithTools(
      { messages: [] },
      {
        prompt: 'Use lookupOrder.',
        tools,
        memory: {},
        rounds: [
          {
            calls: [{ id: OFFLINE_TOOL_CALL_ID, name: 'lookupOrder', input: {} }],
            results: [{ callId: OFFLINE_TOOL_CALL_ID, content: { status: 'shipped', note: long } }],
          },
        ],
      },
    );
    if (!('answer' in turn)) throw new Error('expected an answer');
    const [first, second] = turn.answer.split('\n');
    expect(first).toBe('Use lookupOrder.');
    expect(second.startsWith('lookupOrder: {"status":"shipped","note":"xxx')).toBe(true);
    expect([...second.slice('lookupOrder: '.length)]).toHaveLength(OFFLINE_TOOL_RESULT_MAX_CHARACTERS + 1);
    expect(second.endsWith('…')).toBe(true);
  });
});
