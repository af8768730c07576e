import { labelViolations } from '#core/knowledge/labels';

const rules = (label: string) => labelViolations(label).map((v) => v.rule);

describe('label rules', () => {
  it.each([
    'topic:billing',
    'team:customer-success',
    'region:eu_west',
    'v:1',
    'year:2024',
    'quarter:2024-q1',
    `topic:${'a'.repeat(44)}`, // exactly 50 characters
  ])('accepts %s', (label) => {
    expect(label.length).toBeLessThanOrEqual(50);
    expect(rules(label)).toEqual([]);
  });

  it.each([
    ['billing', 'label.format'],
    [':billing', 'label.format'],
    ['topic:', 'label.format'],
    ['a:b:c', 'label.format'],
    ['', 'label.format'],
    ['Topic:billing', 'label.characters'],
    ['topic:Billing', 'label.characters'],
    ['topic:bill ing', 'label.characters'],
    ['topic:bill.ing', 'label.characters'],
    ['topic:réunion', 'label.characters'],
    [`topic:${'a'.repeat(45)}`, 'label.maxLength'], // 51 characters
    ['doc:123e4567-e89b-12d3-a456-426614174000', 'label.noUuid'],
    ['doc:123e4567e89b12d3a456426614174000', 'label.noUuid'],
    ['ts:1700000000', 'label.noTimestamp'],
    ['ts:1700000000123', 'label.noTimestamp'],
    ['day:2024-01-31', 'label.noIsoDate'],
    ['day:2024_01_31', 'label.noIsoDate'],
    ['day:20240131', 'label.noIsoDate'],
    ['release:v2024-12-01-final', 'label.noIsoDate'],
  ])('rejects %s with %s', (label, rule) => {
    expect(rules(label)).toContain(rule);
  });

  it('reports every rule a label breaks, not only the first', () => {
    expect(rules('Day 2024-01-31')).toEqual(['label.format', 'label.characters', 'label.noIsoDate']);
  });

  it('does not take an 8-digit number that is no calendar date for a date', () => {
    expect(rules('batch:20241399')).toEqual([]);
  });

  it('explains uppercase letters in the message', () => {
    expect(labelViolations('Topic:billing')[0].message).toMatch(/uppercase/);
  });
});
