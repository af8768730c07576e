/**
 * Turns zod issues into the error details of the API: one `{ field, rule, message }` per problem, all of them at once.
 */
import type * as z from 'zod';
import { type ErrorDetail, ValidationError } from './errors';

/** Parses `input` with `schema`, or throws a ValidationError that names every field and the rule it broke. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ValidationError(issuesToDetails(result.error.issues, input));
}

export function issuesToDetails(issues: readonly z.core.$ZodIssue[], input: unknown): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const issue of issues) {
    const field = issue.path.map(String).join('.');
    const name = field || 'request body';
    const missing = issue.path.length > 0 && valueAt(input, issue.path) === undefined;
    if (missing && (issue.code === 'invalid_type' || issue.code === 'invalid_value')) {
      details.push({ field, rule: 'required', message: `${name} is required` });
      continue;
    }
    switch (issue.code) {
      case 'invalid_type':
        details.push({ field, rule: 'type', message: `${name} must be ${article(issue.expected)}` });
        break;
      case 'too_big':
        details.push({ field, rule: bound('max', issue.origin), message: `${name} ${limitText('at most', issue)}` });
        break;
      case 'too_small':
        details.push({ field, rule: bound('min', issue.origin), message: `${name} ${limitText('at least', issue)}` });
        break;
      case 'invalid_value':
        details.push({
          field,
          rule: 'enum',
          message: `${name} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`,
        });
        break;
      case 'invalid_format':
        details.push({ field, rule: `format.${issue.format}`, message: `${name} ${issue.message}` });
        break;
      case 'unrecognized_keys':
        for (const key of issue.keys) {
          const keyField = field ? `${field}.${key}` : key;
          details.push({ field: keyField, rule: 'unknownField', message: `${keyField} is not a known field` });
        }
        break;
      case 'custom': {
        const rule = typeof issue.params?.rule === 'string' ? issue.params.rule : 'custom';
        details.push({ field, rule, message: `${name} ${issue.message}` });
        break;
      }
      default:
        details.push({ field, rule: issue.code, message: `${name}: ${issue.message}` });
    }
  }
  return details;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value: unknown = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function article(expected: string): string {
  if (expected === 'object' || expected === 'array' || expected === 'integer') return `an ${expected}`;
  return `a ${expected}`;
}

function bound(prefix: 'min' | 'max', origin: string): string {
  if (origin === 'string') return `${prefix}Length`;
  if (origin === 'array' || origin === 'set') return `${prefix}Items`;
  return prefix;
}

/** "must be at least 8 characters"; "must not be empty" for a minimum of one character or item; singulars for one. */
function limitText(words: string, issue: { origin: string; maximum?: unknown; minimum?: unknown }): string {
  const limit = String(issue.maximum ?? issue.minimum);
  const countable = issue.origin === 'string' || issue.origin === 'array';
  if (countable && words === 'at least' && limit === '1') return 'must not be empty';
  const unit = (one: string) => (limit === '1' ? one : `${one}s`);
  if (issue.origin === 'string') return `must be ${words} ${limit} ${unit('character')}`;
  if (issue.origin === 'array') return `must have ${words} ${limit} ${unit('item')}`;
  return `must be ${words} ${limit}`;
}

/** A zod check that reports a named rule: `z.string().check(rule('label.format', 'must be …', (v) => …))`. */
export function withRules<T>(
  schema: z.ZodType<T>,
  violations: (value: T) => ReadonlyArray<{ rule: string; message: string }>,
): z.ZodType<T> {
  return schema.superRefine((value, ctx) => {
    for (const violation of violations(value)) {
      ctx.addIssue({ code: 'custom', message: violation.message, params: { rule: violation.rule } });
    }
  });
}
