/** What a prompt node's model sees of the run (docs/flows.md, "What a prompt node sees"): modelContext's transcript. */
import { modelContext, type RunContext, TRANSCRIPT_MAX_CHARS } from '#core/flows/run-context';
import type { SessionMessage } from '#core/flows/session';

const at = '2026-11-28T10:00:00.000Z';

function contextOf(messages: SessionMessage[]): RunContext {
  return {
    session: { messages },
    definition: { instructions: 'Be kind.' },
    images: new Map(),
  } as unknown as RunContext;
}

const tool = (node: string, output: unknown): SessionMessage => ({
  role: 'tool',
  content: `Tool node ${node} called lookupOrder with {}; it answered ${JSON.stringify(output)}`,
  node,
  tool: { name: 'lookupOrder', input: {}, output },
  at,
});

it('holds the user and AI messages and each tool step, in order; the system messages go to the system text', () => {
  const seen = modelContext(
    contextOf([
      { role: 'user', content: 'Where is A-1?', at },
      { role: 'system', content: 'Relevant knowledge: orders ship in 2 days.', at },
      { role: 'assistant', content: 'Let me look.', node: 'Greet', at },
      tool('Lookup', { status: 'shipped' }),
    ]),
  );
  expect(seen.system).toBe('Be kind.\n\nRelevant knowledge: orders ship in 2 days.');
  expect(seen.messages).toEqual([
    { role: 'user', content: 'Where is A-1?' },
    { role: 'assistant', content: 'Let me look.' },
    {
      role: 'tool',
      content: 'Tool node Lookup called lookupOrder with {}; it answered {"status":"shipped"}',
      toolStep: { call: { id: 'tool_step_2', name: 'lookupOrder', input: {} }, result: { status: 'shipped' } },
    },
  ]);
});

it('keeps the newest steps within TRANSCRIPT_MAX_CHARS and names the older ones by node and status', () => {
  const big = 'x'.repeat(5_000);
  const messages = [
    { role: 'user' as const, content: 'start', at },
    ...Array.from({ length: 10 }, (_, i) => tool(`Step${i}`, { big })),
  ];
  const seen = modelContext(contextOf(messages));
  const kept = seen.messages.map((m) => m.toolStep?.call.id);
  const size = seen.messages.reduce((n, m) => n + m.content.length, 0);
  expect(size).toBeLessThanOrEqual(TRANSCRIPT_MAX_CHARS);
  expect(seen.messages.length).toBeGreaterThan(0);
  // The newest ones, in order, up to the last step.
  expect(kept.at(-1)).toBe('tool_step_10');
  expect(seen.messages.every((m) => m.role === 'tool')).toBe(true);
  const dropped = 11 - seen.messages.length;
  expect(seen.system).toContain(
    `Earlier in this conversation, not shown here: a user message; ${Array.from({ length: dropped - 1 }, (_, i) => `Step${i} (tool lookupOrder, ok)`).join('; ')}.`,
  );
});

it('always holds the newest entry, however long', () => {
  const long = 'y'.repeat(TRANSCRIPT_MAX_CHARS * 2);
  const seen = modelContext(
    contextOf([
      { role: 'user', content: 'old', at },
      { role: 'user', content: long, at },
    ]),
  );
  expect(seen.messages).toEqual([{ role: 'user', content: long }]);
  expect(seen.system).toContain('not shown here: a user message.');
});

it('conversation leaves the tool steps out; none the whole transcript, not the instructions', () => {
  const messages: SessionMessage[] = [
    { role: 'user', content: 'hi', at },
    tool('Lookup', { ok: true }),
    { role: 'assistant', content: 'done', node: 'Answer', at },
  ];
  expect(modelContext(contextOf(messages), 'conversation').messages).toEqual([
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'done' },
  ]);
  const { onUsage, ...none } = modelContext(contextOf(messages), 'none');
  expect(none).toEqual({ system: 'Be kind.', messages: [] });
  expect(typeof onUsage).toBe('function');
});
