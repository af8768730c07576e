/** The `when` test of stepForward edges (junction routing), as a table. */
import { holds } from '#core/flows/route';

const scope = {
  memory: { tier: 'gold', count: 7, zero: 0, flag: false, none: null, tags: ['a'], nested: { n: '12' } },
  tools: { Lookup: { status: 'shipped', total: 19.5 } },
  env: {},
  system: { environment: 'production' },
};

test.each<[string, string, string, string | number | boolean | undefined, boolean]>([
  ['equal text', 'memory.tier', 'equals', 'gold', true],
  ['other text', 'memory.tier', 'equals', 'silver', false],
  ['numbers as numbers', 'memory.count', 'equals', '7.0', true],
  ['a numeric string against a number', 'memory.nested.n', 'greaterThan', 9, true],
  ['numbers, not text order', 'memory.count', 'lessThan', 10, true],
  ['text order when not numeric', 'memory.tier', 'lessThan', 'h', true],
  ['a tool output', 'tools.Lookup.status', 'equals', 'shipped', true],
  ['a decimal tool output', 'tools.Lookup.total', 'greaterThan', 19, true],
  ['a system value', 'system.environment', 'notEquals', 'staging', true],
  ['false equals "false"', 'memory.flag', 'equals', 'false', true],
  ['zero exists', 'memory.zero', 'exists', undefined, true],
  ['null does not exist', 'memory.none', 'exists', undefined, false],
  ['a missing path does not exist', 'memory.absent', 'notExists', undefined, true],
  ['a missing node does not exist', 'tools.Other.status', 'exists', undefined, false],
  ['a missing value is not equal', 'memory.absent', 'equals', 'gold', false],
  ['a missing value is notEquals anything', 'memory.absent', 'notEquals', 'gold', true],
  ['a missing value is not greater', 'memory.absent', 'greaterThan', 0, false],
  ['an array compares as JSON', 'memory.tags', 'equals', '["a"]', true],
])('%s', (_name, path, operator, value, expected) => {
  expect(holds({ path, operator: operator as 'equals', value }, scope)).toBe(expected);
});
