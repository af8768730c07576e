/**
 * Retrieval filters: `{ key, operator, value }` entries combined with AND. A value is a plain string, or exactly
 * `{state.memory.<path>}` (dot path, nested), resolved from the caller's memory; a null or undefined memory value
 * skips its entry. Only the filterable labels may be filtered; the tenant scope is added by the caller of the index
 * and cannot be expressed here at all.
 */
import * as z from 'zod';
import { FILTERABLE_KEYS, type FilterOperator, type IndexFilter } from '#ports/processing';

export const FILTER_OPERATORS = [
  'equals',
  'notEquals',
  'greaterThan',
  'lessThan',
] as const satisfies readonly FilterOperator[];

/** `{state.memory.a.b}`: segments of letters, digits, `_`, `$` and `-` (array items by index: `{state.memory.list.0}`). */
const MEMORY_PATTERN = /^\{state\.memory\.([A-Za-z0-9_$-]+(?:\.[A-Za-z0-9_$-]+)*)\}$/;

const NOT_FILTERABLE = /^(customMeta[1-4]|svc_internal_meta[1-4])$/;

export const filterEntrySchema = z
  .strictObject({
    key: z.string().min(1).max(100),
    operator: z.enum(FILTER_OPERATORS),
    value: z.string().max(500),
  })
  .superRefine((entry, ctx) => {
    if ((FILTERABLE_KEYS as readonly string[]).includes(entry.key)) return;
    ctx.addIssue({
      code: 'custom',
      path: ['key'],
      params: { rule: NOT_FILTERABLE.test(entry.key) ? 'filter.notFilterable' : 'filter.key' },
      message: NOT_FILTERABLE.test(entry.key)
        ? `${entry.key} is custom metadata: it is returned with every result but cannot be filtered; filter on label1 or label2`
        : `must be label1 or label2 (the filterable labels), not ${entry.key}`,
    });
  });

export type FilterEntry = z.output<typeof filterEntrySchema>;

export interface SkippedFilter {
  readonly index: number;
  readonly key: string;
  readonly value: string;
  readonly reason: string;
}

export interface ResolvedFilters {
  readonly filters: IndexFilter[];
  readonly skipped: SkippedFilter[];
}

/** The memory path of a value of exactly the form `{state.memory.<path>}`, or undefined for a plain string. */
export function memoryPath(value: string): string[] | undefined {
  const match = MEMORY_PATTERN.exec(value);
  return match ? match[1].split('.') : undefined;
}

function lookup(memory: unknown, path: readonly string[]): unknown {
  let value: unknown = memory;
  for (const segment of path) {
    if (value === null || value === undefined || typeof value !== 'object') return undefined;
    value =
      Array.isArray(value) && /^\d+$/.test(segment)
        ? value[Number(segment)]
        : (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** Resolves memory placeholders. Entries whose memory value is null, undefined or not a scalar are skipped, with why. */
export function resolveFilters(entries: readonly FilterEntry[], memory: unknown): ResolvedFilters {
  const filters: IndexFilter[] = [];
  const skipped: SkippedFilter[] = [];
  entries.forEach((entry, index) => {
    const key = entry.key as IndexFilter['key'];
    const path = memoryPath(entry.value);
    if (!path) {
      filters.push({ key, operator: entry.operator, value: entry.value });
      return;
    }
    const value = lookup(memory, path);
    if (value === null || value === undefined) {
      skipped.push({
        index,
        key,
        value: entry.value,
        reason: `memory.${path.join('.')} is ${value === null ? 'null' : 'undefined'}`,
      });
    } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      filters.push({ key, operator: entry.operator, value: String(value) });
    } else {
      skipped.push({
        index,
        key,
        value: entry.value,
        reason: `memory.${path.join('.')} is an ${Array.isArray(value) ? 'array' : 'object'}, not a value to compare`,
      });
    }
  });
  return { filters, skipped };
}
