/**
 * The SQL of the local index's `where` clauses: string literals, the scope of a dataset, a document, the label filters
 * (docs/retrieval.md, "Filters").
 */

import type { DatasetRef } from '#core/knowledge/document';
import { type DocumentRef, FILTERABLE_KEYS, type IndexFilter } from '#ports/processing';

/** A SQL string literal: quotes doubled, so no value can end the literal (backslashes are not escapes in Lance SQL). */
export function sqlString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

export function scopeClause(scope: DatasetRef): string {
  return [
    `agentId = ${sqlString(scope.agentId)}`,
    `environment = ${sqlString(scope.environment)}`,
    `knowledgeBaseId = ${sqlString(scope.knowledgeBaseId)}`,
  ].join(' AND ');
}

/** A document's rows within its dataset's table. */
export function documentClause(ref: DocumentRef): string {
  return `documentId = ${sqlString(ref.documentId)}`;
}

/**
 * One filter as SQL. `notEquals` also matches chunks without the label (NULL), as Bedrock's notEquals matches
 * records without the key; `greaterThan` / `lessThan` compare strings byte-wise and never match a missing label.
 */
export function filterClause(filter: IndexFilter): string {
  if (!(FILTERABLE_KEYS as readonly string[]).includes(filter.key)) {
    throw new Error(`Cannot filter on "${filter.key}": only ${FILTERABLE_KEYS.join(', ')} are filterable`);
  }
  const column = filter.key;
  const value = sqlString(filter.value);
  switch (filter.operator) {
    case 'equals':
      return `${column} = ${value}`;
    case 'notEquals':
      return `(${column} IS NULL OR ${column} <> ${value})`;
    case 'greaterThan':
      return `${column} > ${value}`;
    case 'lessThan':
      return `${column} < ${value}`;
    default:
      throw new Error(`Unknown filter operator "${String(filter.operator)}"`);
  }
}

/**
 * The `where` clause a query runs with inside its dataset's table: every filter, ANDed; null without filters.
 * Exported so that `explain` can show the backend filter exactly as sent.
 */
export function buildWhereClause(filters: readonly IndexFilter[]): string | null {
  return filters.length > 0 ? filters.map(filterClause).join(' AND ') : null;
}

// ---------------------------------------------------------------------------------------------------------------
// Scores: fixed functions of one chunk and the query, never of the other results.
