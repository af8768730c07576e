/**
 * The offline flow model: the exact, deterministic rules of lambdas/core/flows/offline-model.ts.
 */
import { OfflineFlowModel } from '#core/flows/offline-model';
import type { FlowModelContext, ToolParameterSpec } from '#ports/flows';
import type { ModelMessage } from '#ports/model';

const model = new OfflineFlowModel();
const user = (content: string): ModelMessage => ({ role: 'user', content });
const assistant = (content: string): ModelMessage => ({ role: 'assistant', content });

const retrievalBlock = (first: string) =>
  [
    'Relevant knowledge (use it to answer; it may be incomplete):',
    `[1] (document doc-7, score 0.82) ${first}`,
    '[2] (document doc-3, score 0.41) Shipping takes five days.',
  ].join('\n');

describe('OfflineFlowModel.respond', () => {
  it('is named offline', () => {
    expect(model.name).toBe('offline');
  });

  it('answers with the rendered prompt itself, trimmed, when there is no retrieval context', async () => {
    const context: FlowModelContext = { system: 'You are a helpful agent.', messages: [user('Hi')] };

    await expect(model.respond(context, '  Greet Ada and ask for her order number.\n')).resolves.toBe(
      'Greet Ada and ask for her order number.',
    );
    await expect(model.respond({ messages: [] }, 'Say hello')).resolves.toBe('Say hello');
  });

  it('appends the first retrieved entry without its document and score prefix', async () => {
    const context: FlowModelContext = {
      system: `You are a helpful agent.\n\n${retrievalBlock('Gold customers get free returns.')}`,
      messages: [user('Can I return this?')],
    };

    await expect(model.respond(context, 'Answer the question.')).resolves.toBe(
      'Answer the question.\nKnowledge: Gold customers get free returns.',
    );
  });

  it('cuts the retrieved entry to 300 characters', async () => {
    const long = `${'a'.repeat(299)}bcdef`;
    const answer = await model.respond({ system: retrievalBlock(long), messages: [] }, 'Answer.');

    expect(answer).toBe(`Answer.\nKnowledge: ${'a'.repeat(299)}b`);
  });

  it('gives the Knowledge line alone for an empty prompt, and none for a header without entry [1]', async () => {
    await expect(
      model.respond({ system: retrievalBlock('Refunds within 30 days.'), messages: [] }, '  '),
    ).resolves.toBe('Knowledge: Refunds within 30 days.');
    await expect(
      model.respond(
        { system: 'Relevant knowledge (use it to answer; it may be incomplete):', messages: [] },
        'Answer.',
      ),
    ).resolves.toBe('Answer.');
    await expect(
      model.respond({ system: '[1] (document d, score 0.9) Not in a retrieval block.', messages: [] }, 'Answer.'),
    ).resolves.toBe('Answer.');
  });

  it('keeps a document id holding commas and parentheses out of the knowledge text', async () => {
    const system =
      'Relevant knowledge (use it to answer; it may be incomplete):\n[1] (document a,(b), score 0.50) Text.';

    await expect(model.respond({ system, messages: [] }, 'Answer.')).resolves.toBe('Answer.\nKnowledge: Text.');
  });
});

describe('OfflineFlowModel.chooseCondition', () => {
  const conditions = ['The user wants a refund', 'The user asks about shipping times', 'The user wants to talk'];

  it.each([
    ['the condition sharing the most words', 'I want to talk about shipping times', false, 1],
    ['the only condition sharing a word', 'I want a refund for my order', false, 0],
    ['on words in any case', 'TALK please', false, 2],
    ['the first condition on a tie', 'user', false, 0],
    ['stay when no word is shared and staying is allowed', 'Good morning', true, 'stay'],
    ['null when no word is shared and staying is not allowed', 'Good morning', false, null],
    ['no condition on stop words and words shorter than 3 letters alone', 'the about to a', false, null],
  ] as const)('picks %s', async (_, message, allowStay, expected) => {
    const context = { messages: [assistant('How can I help?'), user(message)] };

    await expect(model.chooseCondition(context, { conditions, allowStay })).resolves.toBe(expected);
  });

  it('reads only the last user message, not earlier turns or the assistant', async () => {
    const context = { messages: [user('refund please'), assistant('Shipping takes five days.'), user('Thanks, bye')] };

    await expect(model.chooseCondition(context, { conditions, allowStay: true })).resolves.toBe('stay');
  });

  it('is null when there is no user message, even when staying is allowed', async () => {
    await expect(
      model.chooseCondition({ messages: [assistant('refund shipping')] }, { conditions, allowStay: true }),
    ).resolves.toBeNull();
  });

  it('matches unicode words and digits', async () => {
    const context = { messages: [user('Rückgabe für Bestellung 12345')] };

    await expect(
      model.chooseCondition(context, { conditions: ['Versand', 'Rückgabe einer Bestellung'], allowStay: false }),
    ).resolves.toBe(1);
    await expect(
      model.chooseCondition(context, { conditions: ['order 12345', 'Versand'], allowStay: false }),
    ).resolves.toBe(0);
  });
});

describe('OfflineFlowModel.inferParameters', () => {
  const parameters: Record<string, ToolParameterSpec> = {
    city: { type: 'string' },
    days: { type: 'number' },
    metric: { type: 'boolean' },
    filters: { type: 'object' },
    tags: { type: 'array' },
  };
  const infer = (memory: Record<string, unknown>, missing = Object.keys(parameters)) =>
    model.inferParameters(
      { messages: [user('Weather in Paris for 3 days')] },
      { toolName: 'weather', parameters, missing, memory },
    );

  it('takes memory values of the parameter type', async () => {
    await expect(
      infer({ city: 'Paris', days: 3, metric: false, filters: { wind: true }, tags: ['a'], other: 'x' }),
    ).resolves.toEqual({ city: 'Paris', days: 3, metric: false, filters: { wind: true }, tags: ['a'] });
  });

  it('converts numeric strings for numbers and true/false for booleans, nothing else', async () => {
    await expect(infer({ days: '2.5e1', metric: 'true' })).resolves.toEqual({ days: 25, metric: true });
    await expect(infer({ days: '-2.5', metric: 'false' })).resolves.toEqual({ days: -2.5, metric: false });
    await expect(infer({ days: '0x10', metric: 'yes' })).resolves.toEqual({});
    await expect(infer({ days: ' 7 ', metric: ' true' })).resolves.toEqual({});
    await expect(infer({ days: '', metric: 'TRUE' })).resolves.toEqual({});
  });

  it('leaves out values of another type, null, and parameters that are not missing or have no spec', async () => {
    await expect(
      infer({ city: 42, days: Number.NaN, metric: 1, filters: ['x'], tags: { a: 1 }, extra: 'x' }),
    ).resolves.toEqual({});
    await expect(infer({ city: null, filters: null })).resolves.toEqual({});
    await expect(infer({ city: 'Paris', days: 3, extra: 'x' }, ['days', 'extra'])).resolves.toEqual({ days: 3 });
  });

  it('does not read inherited properties of the memory object', async () => {
    const spec: Record<string, ToolParameterSpec> = {
      toString: { type: 'string' as const },
      constructor: { type: 'object' as const },
    };

    await expect(
      model.inferParameters(
        { messages: [] },
        { toolName: 't', parameters: spec, missing: ['toString', 'constructor'], memory: {} },
      ),
    ).resolves.toEqual({});
  });
});
