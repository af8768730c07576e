/**
 * Where a run goes after a node: the first edge of the node whose condition holds (`stepForward`, `promptCondition`,
 * and the `when` conditions on memory and outputs).
 */

import { METRIC } from '#ports/metrics';
import type { EdgeCondition, FlowEdge } from './definition';
import { type PlaceholderScope, valueAtPath } from './placeholders';
import { type Located, metricsOf, modelContext, placeholderScope, type RunContext } from './run-context';

/** Where the run goes after a node, and why, in words a person debugging the flow reads in its trace. */
export interface EdgeTaken {
  /** The next node; null: the flow ends. */
  readonly next: string | null;
  readonly reason: string;
}

/**
 * The next node after `node`, and why: promptCondition edges first (the model picks one, or `stay` on a
 * canStayOnNode node), then stepForward edges whose `when` holds, in order, then the first stepForward without
 * `when`. None: the flow ends.
 */
export async function routeWithReason(context: RunContext, { flow, node }: Located): Promise<EdgeTaken> {
  const edges = flow.edges.filter((e) => e.from === node.name);
  const prompted = edges.filter((e) => e.type === 'promptCondition');
  if (prompted.length > 0) {
    const allowStay = node.type === 'promptNode' && node.canStayOnNode === true;
    metricsOf(context).count(METRIC.modelCalls);
    const choice = await context.deps
      .models(node.type === 'promptNode' ? node.llmConfig : undefined)
      .chooseCondition(modelContext(context), { conditions: prompted.map((e) => e.condition ?? ''), allowStay });
    if (choice === 'stay' && allowStay) return { next: node.name, reason: 'canStayOnNode: the model chose to stay' };
    if (typeof choice === 'number' && prompted[choice]) {
      return {
        next: prompted[choice].to,
        reason: `promptCondition chosen by the model: ${prompted[choice].condition}`,
      };
    }
  }
  const forward = edges.filter((e) => e.type === 'stepForward');
  const scope = placeholderScope(context, node.name);
  const conditional = forward.find((e) => e.when !== undefined && holds(e.when, scope));
  if (conditional?.when) {
    const { path, operator, value } = conditional.when;
    return {
      next: conditional.to,
      reason: `when ${path} ${operator}${value === undefined ? '' : ` ${JSON.stringify(value)}`}`,
    };
  }
  const fallback = forward.find((e: FlowEdge) => e.when === undefined);
  if (fallback) {
    return {
      next: fallback.to,
      reason: prompted.length > 0 ? 'stepForward: the model chose no condition' : 'stepForward',
    };
  }
  return { next: null, reason: 'no edge leaves this node: the flow ends' };
}

/** A stepForward edge's `when`: numbers compare as numbers, anything else as text. */
export function holds(condition: EdgeCondition, scope: PlaceholderScope): boolean {
  const found = valueAtPath(condition.path, scope);
  const actual = found?.value;
  const exists = actual !== undefined && actual !== null;
  switch (condition.operator) {
    case 'exists':
      return exists;
    case 'notExists':
      return !exists;
    default:
      break;
  }
  if (!exists || condition.value === undefined) return condition.operator === 'notEquals';
  const left = Number(actual);
  const right = Number(condition.value);
  const numeric =
    typeof actual !== 'object' && typeof actual !== 'boolean' && String(actual).trim() !== '' && !Number.isNaN(left);
  const bothNumeric = numeric && String(condition.value).trim() !== '' && !Number.isNaN(right);
  const text = typeof actual === 'object' ? JSON.stringify(actual) : String(actual);
  switch (condition.operator) {
    case 'equals':
      return bothNumeric ? left === right : text === String(condition.value);
    case 'notEquals':
      return bothNumeric ? left !== right : text !== String(condition.value);
    case 'greaterThan':
      return bothNumeric ? left > right : text > String(condition.value);
    case 'lessThan':
      return bothNumeric ? left < right : text < String(condition.value);
  }
}
