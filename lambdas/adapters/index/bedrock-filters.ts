/**
 * The tenant scope and the label filters as a Bedrock RetrievalFilter, with the embedded index's semantics
 * (notEquals also matches a missing label; greaterThan / lessThan on the labels' order keys), and the same rules
 * applied to a chunk, to check what Retrieve answered.
 */

import type { RetrievalFilter } from '@aws-sdk/client-bedrock-agent-runtime';
import type { DatasetRef } from '#core/knowledge/document';
import { FILTERABLE_KEYS, type IndexedChunk, type IndexFilter } from '#ports/processing';
import { LABEL_ORDER_CHARS_PER_PART, LABEL_ORDER_PARTS, labelOrder, labelOrderKey } from './bedrock-documents';

/** AND of conditions, nested so that every andAll has 2 to 5 members (Bedrock's bounds); one condition stays bare. */
function allOf(conditions: readonly RetrievalFilter[]): RetrievalFilter {
  if (conditions.length === 0) throw new Error('allOf needs at least one condition');
  if (conditions.length === 1) return conditions[0];
  if (conditions.length <= 5) return { andAll: [...conditions] };
  return { andAll: [...conditions.slice(0, 4), allOf(conditions.slice(4))] };
}

/**
 * label > value (or <): the lexicographic comparison of the order tuples, written out as
 * `p0 > a0 OR (p0 = a0 AND (p1 > a1 OR (p1 = a1 AND ...)))` over the parts the value reaches. A chunk without the
 * label has no order keys, so it never matches, like a NULL in the local index.
 */
function rangeFilter(label: 'label1' | 'label2', operator: 'greaterThan' | 'lessThan', value: string): RetrievalFilter {
  const target = labelOrder(value);
  const length = [...value].length;
  const parts = Math.min(LABEL_ORDER_PARTS, Math.floor(length / LABEL_ORDER_CHARS_PER_PART) + 1);
  const compare = (part: number): RetrievalFilter => {
    const attribute = { key: labelOrderKey(label, part), value: target[part] };
    const strict: RetrievalFilter = operator === 'greaterThan' ? { greaterThan: attribute } : { lessThan: attribute };
    if (part === parts - 1) return strict;
    return { orAll: [strict, { andAll: [{ equals: attribute }, compare(part + 1)] }] };
  };
  return compare(0);
}

function labelFilter(filter: IndexFilter): RetrievalFilter {
  if (!(FILTERABLE_KEYS as readonly string[]).includes(filter.key)) {
    throw new Error(`Cannot filter on "${filter.key}": only ${FILTERABLE_KEYS.join(', ')} are filterable`);
  }
  switch (filter.operator) {
    case 'equals':
      return { equals: { key: filter.key, value: filter.value } };
    case 'notEquals':
      // Bedrock's notEquals also matches a chunk without the key: the same as the local `IS NULL OR <>`.
      return { notEquals: { key: filter.key, value: filter.value } };
    case 'greaterThan':
    case 'lessThan':
      return rangeFilter(filter.key, filter.operator, filter.value);
    default:
      throw new Error(`Unknown filter operator "${String(filter.operator)}"`);
  }
}

/**
 * The RetrievalFilter a query sends: the tenant scope (agent, knowledge base and environment; the environment also
 * picks the Bedrock knowledge base) ANDed with every label filter. Exported for `explain` and for tests.
 */
export function toRetrievalFilter(scope: DatasetRef, filters: readonly IndexFilter[]): RetrievalFilter {
  return allOf([
    { equals: { key: 'agentId', value: scope.agentId } },
    { equals: { key: 'knowledgeBaseId', value: scope.knowledgeBaseId } },
    { equals: { key: 'environment', value: scope.environment } },
    ...filters.map(labelFilter),
  ]);
}

/** The same filters evaluated on a returned chunk: a second line of defence, never a substitute for the filter. */
export function matches(
  chunk: Omit<IndexedChunk, 'vector'>,
  scope: DatasetRef,
  filters: readonly IndexFilter[],
): boolean {
  if (
    chunk.agentId !== scope.agentId ||
    chunk.knowledgeBaseId !== scope.knowledgeBaseId ||
    chunk.environment !== scope.environment
  ) {
    return false;
  }
  return filters.every((filter) => {
    const value = chunk[filter.key];
    if (value === null) return filter.operator === 'notEquals';
    // Byte-wise, as the local index compares strings.
    const order = Buffer.compare(Buffer.from(value, 'utf8'), Buffer.from(filter.value, 'utf8'));
    switch (filter.operator) {
      case 'equals':
        return order === 0;
      case 'notEquals':
        return order !== 0;
      case 'greaterThan':
        return order > 0;
      case 'lessThan':
        return order < 0;
      default:
        return false;
    }
  });
}
