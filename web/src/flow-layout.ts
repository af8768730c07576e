/**
 * A definition as a graph: a group per flow, a node per node (coloured by type, its validation problems on it), an
 * edge per edge (solid `stepForward`, dashed `promptCondition` with its condition, `when` tests named), and each
 * `jumpToNode` drawn to its target, across flows. dagre lays it out: ranked left to right, each flow a cluster.
 */
import dagre from '@dagrejs/dagre';
import type { Edge, Node } from '@xyflow/react';
import type { AgentDefinition, FlowEdgeDefinition, FlowNodeDefinition, Problem } from './flows';

export interface NodeData extends Record<string, unknown> {
  readonly definition: FlowNodeDefinition;
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

const NODE_WIDTH = 200;
const NODE_HEIGHT = 64;
/** Room above a flow's nodes for its name, and around them. */
const FLOW_PADDING = { top: 36, side: 16 };

function edgeLabel(edge: FlowEdgeDefinition): string | undefined {
  if (edge.type === 'promptCondition') return edge.condition;
  if (edge.when) {
    const value = edge.when.value === undefined ? '' : ` ${JSON.stringify(edge.when.value)}`;
    return `when ${edge.when.path} ${edge.when.operator}${value}`;
  }
  return undefined;
}

/** The laid-out nodes and edges of a definition; problems attach to the node they name. */
export function layoutDefinition(
  definition: AgentDefinition,
  problems: readonly Problem[],
): { nodes: Node[]; edges: Edge[] } {
  const known = new Set(definition.flows.flatMap((flow) => flow.nodes.map((node) => node.name)));
  const graph = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  graph.setGraph({ rankdir: 'LR', nodesep: 60, ranksep: 70, marginx: 10, marginy: 10 });
  graph.setDefaultEdgeLabel(() => ({}));
  const edges: Edge[] = [];

  for (const flow of definition.flows) {
    const group = `flow:${flow.name}`;
    graph.setNode(group, { label: flow.name, paddingTop: FLOW_PADDING.top });
    for (const node of flow.nodes) {
      graph.setNode(node.name, { width: NODE_WIDTH, height: NODE_HEIGHT });
      graph.setParent(node.name, group);
    }
    (flow.edges ?? []).forEach((edge, index) => {
      if (!known.has(edge.from) || !known.has(edge.to)) return;
      const id = `${flow.name}:${index}`;
      graph.setEdge(edge.from, edge.to, {}, id);
      edges.push({
        id,
        source: edge.from,
        target: edge.to,
        label: edgeLabel(edge),
        data: { kind: edge.type },
        style: edge.type === 'promptCondition' ? { strokeDasharray: '6 4' } : undefined,
      });
    });
  }
  for (const node of definition.flows.flatMap((flow) => flow.nodes)) {
    const target = node.type === 'jumpToNode' ? node.targetNodeId : undefined;
    if (!target || !known.has(target)) continue;
    const id = `jump:${node.name}`;
    graph.setEdge(node.name, target, {}, id);
    edges.push({
      id,
      source: node.name,
      target,
      label: 'jump',
      animated: true,
      data: { kind: 'jumpToNode' },
      style: { stroke: NODE_COLORS.jumpToNode, strokeDasharray: '2 4' },
    });
  }
  dagre.layout(graph);

  const nodes: Node[] = [];
  for (const flow of definition.flows) {
    const group = `flow:${flow.name}`;
    const boxes = flow.nodes.map((node) => graph.node(node.name));
    if (boxes.length === 0) continue;
    // The group's box: around its nodes (dagre's cluster box can be tighter than the names need).
    const left = Math.min(...boxes.map((box) => box.x - NODE_WIDTH / 2)) - FLOW_PADDING.side;
    const top = Math.min(...boxes.map((box) => box.y - NODE_HEIGHT / 2)) - FLOW_PADDING.top;
    const right = Math.max(...boxes.map((box) => box.x + NODE_WIDTH / 2)) + FLOW_PADDING.side;
    const bottom = Math.max(...boxes.map((box) => box.y + NODE_HEIGHT / 2)) + FLOW_PADDING.side;
    nodes.push({
      id: group,
      type: 'group',
      position: { x: left, y: top },
      data: { label: flow.name },
      style: { width: right - left, height: bottom - top },
      ariaLabel: `Flow ${flow.name}`,
    });
    flow.nodes.forEach((node, index) => {
      const box = boxes[index];
      nodes.push({
        id: node.name,
        type: 'definition',
        parentId: group,
        extent: 'parent',
        position: { x: box.x - NODE_WIDTH / 2 - left, y: box.y - NODE_HEIGHT / 2 - top },
        data: {
          definition: node,
          problems: problems.filter((problem) => problem.node === node.name),
        } satisfies NodeData,
        style: { width: NODE_WIDTH },
      });
    });
  }
  return { nodes, edges };
}
