/** The trace of a session (docs/flows.md, "The trace"): its analytics events as one ordered list of steps. */
import type { AnalyticsEventRecord } from '#core/analytics/event';
import { traceSteps } from '#core/flows/trace';

let id = 0;
const event = (eventName: string, payload: Record<string, unknown>): AnalyticsEventRecord => {
  id += 1;
  return {
    id,
    agentId: 'a',
    sessionId: 's',
    environment: 'production',
    eventName,
    payload,
    created_at: new Date(Date.UTC(2026, 10, 28, 10, 0, id)).toISOString(),
  };
};
const start = () => event('invocation_start', { triggerName: 'Start' });
const ran = (node: string, nodeType = 'tool', parameters: unknown = {}) =>
  event('node_execution', { nodeName: node, nodeType, displayName: null, parameters });
const ended = (node: string, status: string, more: Record<string, unknown> = {}) =>
  event('node_result', { nodeName: node, status, durationMs: 12, ...more });

it('one step per node run, with its input, output, calls, time and edge; only the step that failed is marked', () => {
  const steps = traceSteps([
    start(),
    ran('Start', 'trigger'),
    ended('Start', 'succeeded', { edge: { to: 'Loop', reason: 'stepForward' } }),
    // The same node three times round a loop: the third run fails, the first two did not.
    ...[1, 2].flatMap((n) => [
      ran('Loop', 'promptNode', { prompt: `try ${n}` }),
      event('tool_call', { nodeName: 'Loop', callIndex: 0, tool: 'lookup', status: 'succeeded' }),
      ended('Loop', 'succeeded', {
        output: { response: `r${n}` },
        edge: { to: 'Loop', reason: 'when memory.n lessThan 3' },
      }),
    ]),
    ran('Loop', 'promptNode', { prompt: 'try 3' }),
    ended('Loop', 'failed', { error: { code: 'MODEL_TIMEOUT', message: 'slow' } }),
    event('invocation_error', { code: 'MODEL_TIMEOUT', message: 'slow', nodeName: 'Loop' }),
  ]);
  expect(steps.map((s) => [s.index, s.node, s.status])).toEqual([
    [1, 'Start', 'succeeded'],
    [2, 'Loop', 'succeeded'],
    [3, 'Loop', 'succeeded'],
    [4, 'Loop', 'failed'],
  ]);
  expect(steps[1]).toMatchObject({
    input: { prompt: 'try 1' },
    output: { response: 'r1' },
    toolCalls: [{ tool: 'lookup', status: 'succeeded' }],
    durationMs: 12,
    edge: { to: 'Loop', reason: 'when memory.n lessThan 3' },
    error: null,
  });
  expect(steps[3]).toMatchObject({ error: { code: 'MODEL_TIMEOUT', message: 'slow' }, output: null });
  expect(steps.filter((s) => s.status === 'failed')).toHaveLength(1);
});

it('a failure outside any node run is a step of its own; a node its run stopped in stays running', () => {
  const steps = traceSteps([
    start(),
    ran('Spin'),
    ended('Spin', 'succeeded', { edge: { to: 'Spin', reason: 'stepForward' } }),
    event('invocation_error', {
      code: 'STEP_LIMIT_EXCEEDED',
      message: 'The invocation ran 50 nodes',
      nodeName: 'Spin',
    }),
    start(),
    ran('Slow'),
    // The runner died in Slow; the next invocation started over.
    start(),
    ran('Slow'),
    ended('Slow', 'succeeded', { edge: { to: null, reason: 'no edge leaves this node: the flow ends' } }),
  ]);
  expect(steps.map((s) => [s.kind, s.node, s.status, s.error?.code ?? null])).toEqual([
    ['node', 'Spin', 'succeeded', null],
    ['invocation', 'Spin', 'failed', 'STEP_LIMIT_EXCEEDED'],
    ['node', 'Slow', 'running', null],
    ['node', 'Slow', 'succeeded', null],
  ]);
});
