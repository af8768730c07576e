/** The nesting limit of JSON bodies (lambdas/shared/json-depth.ts): counted over the text, brackets in strings ignored. */
import { MAX_JSON_DEPTH, nestingDepthOver } from '#shared/json-depth';

it.each([
  ['{}', 1, false],
  ['{}', 0, true],
  ['{"a":[1,{"b":2}]}', 3, false],
  ['{"a":[1,{"b":2}]}', 2, true],
  ['{"a":"[[[[{{{{"}', 1, false],
  ['{"a":"\\"[[[["}', 1, false],
  ['{"a":"\\\\","b":[[]]}', 2, true],
  ['[[],[],[]]', 2, false],
  ['"[[["', 0, false],
])('%s deeper than %i: %s', (text, limit, over) => {
  expect(nestingDepthOver(text, limit)).toBe(over);
});

it('reads 100,000 levels without recursion', () => {
  const text = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  expect(nestingDepthOver(text, MAX_JSON_DEPTH)).toBe(true);
  expect(nestingDepthOver(text, 100_000)).toBe(false);
});
