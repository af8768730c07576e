import type { ValidationError } from '#core/errors';
import { filterEntrySchema, memoryPath, resolveFilters } from '#core/retrieval/filters';
import { parseInput } from '#core/validation';

const entry = (key: string, value: string, operator: 'equals' | 'notEquals' | 'greaterThan' | 'lessThan' = 'equals') =>
  ({ key, operator, value }) as const;

describe('memory placeholders in filter values', () => {
  it.each([
    ['{state.memory.team}', ['team']],
    ['{state.memory.user.profile.team}', ['user', 'profile', 'team']],
    ['{state.memory.teams.0}', ['teams', '0']],
    ['{state.memory.a-b_c$}', ['a-b_c$']],
  ])('reads %s as a memory path', (value, path) => {
    expect(memoryPath(value)).toEqual(path);
  });

  it.each([
    'team:billing',
    '{memory.team}',
    '{state.memory.}',
    ' {state.memory.team}',
    '{state.memory.team} ',
    'x{state.memory.team}',
  ])('takes %j as a plain string', (value) => {
    expect(memoryPath(value)).toBeUndefined();
  });

  it('resolves strings, numbers and booleans, nested and in arrays', () => {
    const memory = { user: { team: 'team:billing', tier: 3, vip: true }, teams: ['team:a', 'team:b'] };
    const { filters, skipped } = resolveFilters(
      [
        entry('label1', '{state.memory.user.team}'),
        entry('label2', '{state.memory.user.tier}', 'greaterThan'),
        entry('label2', '{state.memory.user.vip}', 'notEquals'),
        entry('label1', '{state.memory.teams.1}'),
        entry('label1', 'plain:value'),
      ],
      memory,
    );
    expect(skipped).toEqual([]);
    expect(filters).toEqual([
      { key: 'label1', operator: 'equals', value: 'team:billing' },
      { key: 'label2', operator: 'greaterThan', value: '3' },
      { key: 'label2', operator: 'notEquals', value: 'true' },
      { key: 'label1', operator: 'equals', value: 'team:b' },
      { key: 'label1', operator: 'equals', value: 'plain:value' },
    ]);
  });

  it('skips an entry whose memory value is null, undefined, or not a scalar, and says why', () => {
    const { filters, skipped } = resolveFilters(
      [
        entry('label1', '{state.memory.missing}'),
        entry('label1', '{state.memory.empty}'),
        entry('label2', '{state.memory.deep.missing.path}'),
        entry('label2', '{state.memory.obj}'),
        entry('label1', 'kept:one'),
      ],
      { empty: null, obj: { a: 1 } },
    );
    expect(filters).toEqual([{ key: 'label1', operator: 'equals', value: 'kept:one' }]);
    expect(skipped.map((s) => [s.index, s.reason])).toEqual([
      [0, 'memory.missing is undefined'],
      [1, 'memory.empty is null'],
      [2, 'memory.deep.missing.path is undefined'],
      [3, 'memory.obj is an object, not a value to compare'],
    ]);
  });
});

describe('filter entries', () => {
  function rules(input: unknown) {
    try {
      parseInput(filterEntrySchema, input);
      return [];
    } catch (error) {
      return (error as ValidationError).details.map((d) => [d.field, d.rule]);
    }
  }

  it('accepts label1 and label2 with the four operators', () => {
    for (const operator of ['equals', 'notEquals', 'greaterThan', 'lessThan']) {
      expect(rules({ key: 'label2', operator, value: 'a:b' })).toEqual([]);
    }
  });

  it.each(['customMeta1', 'svc_internal_meta4'])(
    'refuses custom metadata key %s, saying it is not filterable',
    (key) => {
      expect(rules({ key, operator: 'equals', value: 'x' })).toEqual([['key', 'filter.notFilterable']]);
    },
  );

  it('refuses other keys and operators', () => {
    expect(rules({ key: 'agentId', operator: 'equals', value: 'x' })).toEqual([['key', 'filter.key']]);
    expect(rules({ key: 'label1', operator: 'in', value: 'x' })).toEqual([['operator', 'enum']]);
  });
});
