/**
 * A definition as a graph: a box per flow (behind its nodes), a node per node (coloured by type, its problems on
 * it), an edge per edge (solid `stepForward`, dashed `promptCondition` with its condition, `when` tests named; its
 * problems on it), and each `jumpToNode` drawn to its target, across flows. Each node sits where the definition's
 * `ui.positions` puts it; a node without a position is placed by dagre (ranked left to right, each flow a cluster),
 * which "Tidy up" applies to every node.
 */
import dagre from '@dagrejs/dagre';
import type { Edge, Node } from '@xyflow/react';
import { edgeId, type Position, positionKey, positionsOf } from './flow-edit';
import type { AgentDefinition, FlowEdgeDefinition, FlowNodeDefinition, Problem } from './flows';

export interface NodeData extends Record<string, unknown> {
  readonly definition: FlowNodeDefinition;
  readonly flow: string;
  readonly problems: readonly Problem[];
}

export interface EdgeData extends Record<string, unknown> {
  readonly kind: string;
  readonly problems: readonly Problem[];
}

/** A node type's colour: its border and the type's name, dark enough for 4.5:1 on white (axe checks it). */
export const NODE_COLORS: Record<string, string> = {
  trigger: '#1864ab',
  promptNode: '#5f3dc4',
  tool: '#0b7285',
  junction: '#495057',
  jumpToNode: '#b33d0b',
  browserTask: '#226b33',
};

export const NODE_WIDTH = 200;
export const NODE_HEIGHT = 64;
/** The node's name on the canvas; at the default view it is never shown under 12 px (MIN_READABLE_ZOOM). */
export const NODE_NAME_PX = 15;
export const MIN_READABLE_ZOOM = 12 / NODE_NAME_PX;
/** Room above a flow's nodes for its name, and around them. */
const FLOW_PADDING = { top: 36, side: 16, bottom: 16 };

export function edgeLabel(edge: FlowEdgeDefinition): string | undefined {
  if (edge.type === 'promptCondition') return edge.condition;
  if (edge.when) {
    const value = edge.when.value === undefined ? '' : ` ${JSON.stringify(edge.when.value)}`;
    return `when ${edge.when.path} ${edge.when.operator}${value}`;
  }
  return undefined;
}

/** Every node's place by dagre, as `<flow>/<node>` → top-left corner (ranks far enough apart for edge labels). */
export function tidyPositions(definition: AgentDefinition): Record<string, Position> {
  const known = new Set(definition.flows.flatMap((flow) => flow.nodes.map((node) => node.name)));
  const graph = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  graph.setGraph({ rankdir: 'LR', nodesep: 50, ranksep: 150, marginx: 10, marginy: 10 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const flow of definition.flows) {
    const group = `flow:${flow.name}`;
    graph.setNode(group, { label: flow.name, paddingTop: FLOW_PADDING.top });
    for (const node of flow.nodes) {
      graph.setNode(node.name, { width: NODE_WIDTH, height: NODE_HEIGHT });
      graph.setParent(node.name, group);
    }
    (flow.edges ?? []).forEach((edge, index) => {
      if (known.has(edge.from) && known.has(edge.to)) graph.setEdge(edge.from, edge.to, {}, `${flow.name}:${index}`);
    });
  }
  for (const node of definition.flows.flatMap((flow) => flow.nodes)) {
    if (node.type === 'jumpToNode' && node.targetNodeId && known.has(node.targetNodeId)) {
      graph.setEdge(node.name, node.targetNodeId, {}, `jump:${node.name}`);
    }
  }
  dagre.layout(graph);
  const positions: Record<string, Position> = {};
  for (const flow of definition.flows) {
    for (const node of flow.nodes) {
      const box = graph.node(node.name);
      if (box) positions[positionKey(flow.name, node.name)] = { x: box.x - NODE_WIDTH / 2, y: box.y - NODE_HEIGHT / 2 };
    }
  }
  return positions;
}

/** The problems of one node: those at a field inside it, or naming it outside any edge. */
function problemsOfNode(problems: readonly Problem[], flowIndex: number, nodeIndex: number, name: string): Problem[] {
  return problems.filter((problem) => {
    const at = /^flows\.(\d+)\.(nodes|edges)\.(\d+)/.exec(problem.field);
    if (at) return at[2] === 'nodes' && Number(at[1]) === flowIndex && Number(at[3]) === nodeIndex;
    return problem.node === name;
  });
}

function problemsOfEdge(problems: readonly Problem[], flowIndex: number, edgeIndex: number): Problem[] {
  const prefix = `flows.${flowIndex}.edges.${edgeIndex}`;
  return problems.filter((problem) => problem.field === prefix || problem.field.startsWith(`${prefix}.`));
}

/** The nodes (flow boxes first, behind) and edges of a definition; `placed` overrides positions while dragging. */
export function layoutDefinition(
  definition: AgentDefinition,
  problems: readonly Problem[],
): { nodes: Node[]; edges: Edge[] } {
  const stored = positionsOf(definition);
  const missing = definition.flows.some((flow) => flow.nodes.some((n) => !stored[positionKey(flow.name, n.name)]));
  const tidy = missing ? tidyPositions(definition) : {};
  const known = new Set(definition.flows.flatMap((flow) => flow.nodes.map((node) => node.name)));
  const groups: Node[] = [];
  const nodes: Node[] = [];
  const edges: Edge[] = [];

  definition.flows.forEach((flow, flowIndex) => {
    const places = flow.nodes.map((node) => {
      const key = positionKey(flow.name, node.name);
      return stored[key] ?? tidy[key] ?? { x: 0, y: 0 };
    });
    if (places.length === 0) return;
    const left = Math.min(...places.map((p) => p.x)) - FLOW_PADDING.side;
    const top = Math.min(...places.map((p) => p.y)) - FLOW_PADDING.top;
    const right = Math.max(...places.map((p) => p.x + NODE_WIDTH)) + FLOW_PADDING.side;
    const bottom = Math.max(...places.map((p) => p.y + NODE_HEIGHT)) + FLOW_PADDING.bottom;
    groups.push({
      id: `flow:${flow.name}:${flowIndex}`,
      type: 'flowGroup',
      position: { x: left, y: top },
      data: { label: flow.name },
      style: { width: right - left, height: bottom - top },
      selectable: false,
      draggable: false,
      focusable: false,
      zIndex: -1,
      ariaLabel: `Flow ${flow.name}`,
    });
    flow.nodes.forEach((node, index) => {
      nodes.push({
        id: node.name,
        type: 'definition',
        position: places[index],
        data: {
          definition: node,
          flow: flow.name,
          problems: problemsOfNode(problems, flowIndex, index, node.name),
        } satisfies NodeData,
        style: { width: NODE_WIDTH },
      });
    });
    (flow.edges ?? []).forEach((edge, index) => {
      if (!known.has(edge.from) || !known.has(edge.to)) return;
      edges.push({
        id: edgeId(flowIndex, index),
        type: 'definition',
        source: edge.from,
        target: edge.to,
        label: edgeLabel(edge),
        data: { kind: edge.type, problems: problemsOfEdge(problems, flowIndex, index) } satisfies EdgeData,
        style: edge.type === 'promptCondition' ? { strokeDasharray: '6 4' } : undefined,
      });
    });
  });
  for (const node of definition.flows.flatMap((flow) => flow.nodes)) {
    const target = node.type === 'jumpToNode' ? node.targetNodeId : undefined;
    if (!target || !known.has(target)) continue;
    edges.push({
      id: `jump:${node.name}`,
      type: 'definition',
      source: node.name,
      target,
      label: 'jump',
      animated: true,
      selectable: false,
      deletable: false,
      data: { kind: 'jumpToNode', problems: [] } satisfies EdgeData,
      style: { stroke: NODE_COLORS.jumpToNode, strokeDasharray: '2 4' },
    });
  }
  return { nodes: [...groups, ...nodes], edges };
}

/**
 * The view a graph opens at: all of it when that keeps names readable (zoom at most 1), else as much as fits the
 * width at MIN_READABLE_ZOOM from its top-left corner, the rest reached by scrolling (the wheel pans).
 */
export function readableViewport(
  nodes: readonly Node[],
  width: number,
  height: number,
): { x: number; y: number; zoom: number } {
  const boxes = nodes.map((node) => ({
    x: node.position.x,
    y: node.position.y,
    w: Number(node.style?.width ?? NODE_WIDTH),
    h: Number(node.style?.height ?? NODE_HEIGHT),
  }));
  if (boxes.length === 0) return { x: 0, y: 0, zoom: 1 };
  const pad = 24;
  const left = Math.min(...boxes.map((b) => b.x));
  const top = Math.min(...boxes.map((b) => b.y));
  const right = Math.max(...boxes.map((b) => b.x + b.w));
  const bottom = Math.max(...boxes.map((b) => b.y + b.h));
  const fit = Math.min(1, (width - 2 * pad) / (right - left), (height - 2 * pad) / (bottom - top));
  if (fit >= MIN_READABLE_ZOOM) {
    return {
      x: (width - (right - left) * fit) / 2 - left * fit,
      y: (height - (bottom - top) * fit) / 2 - top * fit,
      zoom: fit,
    };
  }
  const zoom = Math.max(MIN_READABLE_ZOOM, Math.min(1, (width - 2 * pad) / (right - left)));
  return { x: pad - left * zoom, y: pad - top * zoom, zoom };
}
