/**
 * The canvas's edits of a definition, each a pure function from one definition to the next (the editor keeps the
 * states for undo and redo): add, connect, delete, duplicate, rename, set a field, move. Node names are unique across
 * all flows (docs/flows.md), so a node is known by its name alone; an edge by its flow and index. Positions live in
 * the definition's `ui` block under `<flow>/<node>`, which runs ignore.
 */
import type { AgentDefinition, FlowDefinition, FlowEdgeDefinition, FlowNodeDefinition } from './flows';
import { FLOW_SCHEMA } from './generated/flow-schema';
import type { JsonSchema } from './json-schema';

export interface Position {
  readonly x: number;
  readonly y: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type AnyNode = Mutable<FlowNodeDefinition> & Record<string, unknown>;
type AnyEdge = Mutable<FlowEdgeDefinition> & Record<string, unknown>;

export const PALETTE: readonly { type: string; label: string; prefix: string }[] = [
  { type: 'trigger', label: 'Trigger', prefix: 'Trigger' },
  { type: 'promptNode', label: 'Prompt', prefix: 'Prompt' },
  { type: 'tool', label: 'Tool', prefix: 'Tool' },
  { type: 'junction', label: 'Junction', prefix: 'Junction' },
  { type: 'jumpToNode', label: 'Jump', prefix: 'Jump' },
  { type: 'browserTask', label: 'Browser task', prefix: 'Browse' },
];

/** An empty definition: one flow whose one node is a webhook trigger (a flow needs at least one node). */
export function emptyDefinition(): AgentDefinition {
  return { flows: [{ name: 'main', nodes: [{ name: 'Start', type: 'trigger', triggerType: 'webhook' }], edges: [] }] };
}

export const positionKey = (flow: string, node: string) => `${flow}/${node}`;

export function positionsOf(definition: AgentDefinition): Record<string, Position> {
  const ui = definition.ui as { positions?: Record<string, Position> } | undefined;
  return ui?.positions ?? {};
}

function withPositions(definition: AgentDefinition, positions: Record<string, Position>): AgentDefinition {
  const ui = (definition.ui as Record<string, unknown> | undefined) ?? {};
  return { ...definition, ui: { ...ui, positions } };
}

/** Every node name of the definition. */
export function nodeNames(definition: AgentDefinition): Set<string> {
  return new Set(definition.flows.flatMap((flow) => flow.nodes.map((node) => node.name)));
}

/** `<prefix><n>`, the first n from 1 no node has. */
export function uniqueName(definition: AgentDefinition, prefix: string): string {
  const names = nodeNames(definition);
  for (let n = 1; ; n++) if (!names.has(`${prefix}${n}`)) return `${prefix}${n}`;
}

/** Words that read as a start for the required texts a new node must have (its schema says which are required). */
const STARTING_TEXTS: Record<string, string> = {
  prompt: 'Say what this step should do.',
  toolName: 'setMemory',
};

/** What the schema requires of a node of this type, filled: an enum's first value, false, the minimum, a text. */
export function newNode(definition: AgentDefinition, type: string, name: string): AnyNode {
  const schema = FLOW_SCHEMA.nodes[type];
  const node: AnyNode = { name, type };
  for (const field of schema?.required ?? []) {
    if (field === 'name' || field === 'type') continue;
    node[field] = startingValue(definition, field, schema.properties?.[field] ?? {}, name);
  }
  return node;
}

function startingValue(definition: AgentDefinition, field: string, schema: JsonSchema, name: string): unknown {
  if (schema.default !== undefined) return schema.default;
  if (schema.enum) return schema.enum[0];
  if (field === 'displayName') return name;
  if (field === 'targetNodeId') return [...nodeNames(definition)].find((other) => other !== name) ?? name;
  if (STARTING_TEXTS[field]) return STARTING_TEXTS[field];
  if (schema.type === 'boolean') return false;
  if (schema.type === 'number' || schema.type === 'integer') return schema.minimum ?? 0;
  return '';
}

function mapFlow(
  definition: AgentDefinition,
  flowIndex: number,
  change: (flow: FlowDefinition) => FlowDefinition,
): AgentDefinition {
  return { ...definition, flows: definition.flows.map((flow, i) => (i === flowIndex ? change(flow) : flow)) };
}

export function addNode(
  definition: AgentDefinition,
  flowIndex: number,
  type: string,
  position: Position,
): { definition: AgentDefinition; name: string } {
  const prefix = PALETTE.find((item) => item.type === type)?.prefix ?? 'Node';
  const name = uniqueName(definition, prefix);
  const flow = definition.flows[flowIndex];
  const next = mapFlow(definition, flowIndex, (f) => ({ ...f, nodes: [...f.nodes, newNode(definition, type, name)] }));
  return {
    definition: withPositions(next, { ...positionsOf(definition), [positionKey(flow.name, name)]: position }),
    name,
  };
}

/** A new flow holding one webhook trigger, named `flow<n>`. */
export function addFlow(definition: AgentDefinition, position: Position): AgentDefinition {
  const flows = new Set(definition.flows.map((flow) => flow.name));
  let n = definition.flows.length + 1;
  while (flows.has(`flow${n}`)) n++;
  const name = `flow${n}`;
  const trigger = uniqueName(definition, 'Trigger');
  const next = {
    ...definition,
    flows: [
      ...definition.flows,
      { name, nodes: [{ name: trigger, type: 'trigger', triggerType: 'webhook' }], edges: [] },
    ],
  };
  return withPositions(next, { ...positionsOf(definition), [positionKey(name, trigger)]: position });
}

export function flowIndexOf(definition: AgentDefinition, node: string): number {
  return definition.flows.findIndex((flow) => flow.nodes.some((n) => n.name === node));
}

/** An edge from one node to another of the same flow (a stepForward; crossing flows is what jumpToNode is for). */
export function connect(
  definition: AgentDefinition,
  from: string,
  to: string,
): { definition: AgentDefinition } | { refused: string } {
  const flowIndex = flowIndexOf(definition, from);
  if (flowIndex < 0) return { refused: `${from} is not a node` };
  if (flowIndexOf(definition, to) !== flowIndex) {
    return { refused: `${to} is in another flow: edges stay within a flow (a jumpToNode crosses flows)` };
  }
  if (from === to) return { refused: 'an edge leads to another node' };
  const edges = definition.flows[flowIndex].edges ?? [];
  if (edges.some((edge) => edge.from === from && edge.to === to)) return { refused: `${from} → ${to} is there` };
  const edge: FlowEdgeDefinition = { from, to, type: 'stepForward' };
  return { definition: mapFlow(definition, flowIndex, (flow) => ({ ...flow, edges: [...edges, edge] })) };
}

/** An edge's id on the canvas: `<flow index>:<edge index>`. */
export const edgeId = (flowIndex: number, edgeIndex: number) => `${flowIndex}:${edgeIndex}`;

export function parseEdgeId(id: string): { flowIndex: number; edgeIndex: number } | null {
  const match = /^(\d+):(\d+)$/.exec(id);
  return match ? { flowIndex: Number(match[1]), edgeIndex: Number(match[2]) } : null;
}

/** Without these nodes (and their edges and positions) and these edges; a flow left without nodes goes too. */
export function remove(
  definition: AgentDefinition,
  nodes: readonly string[],
  edges: readonly string[],
): AgentDefinition {
  const goneNodes = new Set(nodes);
  const goneEdges = new Set(edges);
  const positions = { ...positionsOf(definition) };
  const flows = definition.flows
    .map((flow, flowIndex) => {
      for (const node of flow.nodes) if (goneNodes.has(node.name)) delete positions[positionKey(flow.name, node.name)];
      return {
        ...flow,
        nodes: flow.nodes.filter((node) => !goneNodes.has(node.name)),
        edges: (flow.edges ?? []).filter(
          (edge, edgeIndex) =>
            !goneEdges.has(edgeId(flowIndex, edgeIndex)) && !goneNodes.has(edge.from) && !goneNodes.has(edge.to),
        ),
      };
    })
    .filter((flow) => flow.nodes.length > 0);
  return withPositions({ ...definition, flows }, positions);
}

/** Copies of these nodes (new names, 40 px down and right) and of the edges between them. */
export function duplicate(
  definition: AgentDefinition,
  nodes: readonly string[],
): { definition: AgentDefinition; names: string[] } {
  let next = definition;
  const renamed = new Map<string, string>();
  const positions = { ...positionsOf(definition) };
  for (const name of nodes) {
    const flowIndex = flowIndexOf(next, name);
    if (flowIndex < 0) continue;
    const flow = next.flows[flowIndex];
    const original = flow.nodes.find((node) => node.name === name) as AnyNode;
    const prefix = name.replace(/\d+$/, '') || 'Node';
    const copyName = uniqueName(next, /^[A-Za-z]/.test(prefix) ? prefix : 'Node');
    renamed.set(name, copyName);
    const copy: AnyNode = { ...structuredClone(original), name: copyName };
    next = mapFlow(next, flowIndex, (f) => ({ ...f, nodes: [...f.nodes, copy] }));
    const at = positions[positionKey(flow.name, name)];
    if (at) positions[positionKey(flow.name, copyName)] = { x: at.x + 40, y: at.y + 40 };
  }
  next = {
    ...next,
    flows: next.flows.map((flow) => {
      const copies = (flow.edges ?? [])
        .filter((edge) => renamed.has(edge.from) && renamed.has(edge.to))
        .map((edge) => ({ ...edge, from: renamed.get(edge.from) as string, to: renamed.get(edge.to) as string }));
      return copies.length ? { ...flow, edges: [...(flow.edges ?? []), ...copies] } : flow;
    }),
  };
  return { definition: withPositions(next, positions), names: [...renamed.values()] };
}

/** A node's fields replaced by `fields` (undefined removes a field); a new name follows into edges, jumps, positions. */
export function updateNode(
  definition: AgentDefinition,
  name: string,
  fields: Record<string, unknown>,
): AgentDefinition {
  const flowIndex = flowIndexOf(definition, name);
  if (flowIndex < 0) return definition;
  const flowName = definition.flows[flowIndex].name;
  const newName = typeof fields.name === 'string' && fields.name !== name ? fields.name : undefined;
  const apply = (node: FlowNodeDefinition): FlowNodeDefinition => {
    const next: AnyNode = { ...(node as AnyNode) };
    for (const [key, value] of Object.entries(fields)) {
      if (value === undefined) delete next[key];
      else next[key] = value;
    }
    return next;
  };
  let next = mapFlow(definition, flowIndex, (flow) => ({
    ...flow,
    nodes: flow.nodes.map((node) => (node.name === name ? apply(node) : node)),
  }));
  if (newName === undefined) return next;
  next = {
    ...next,
    flows: next.flows.map((flow) => ({
      ...flow,
      nodes: flow.nodes.map((node) =>
        node.type === 'jumpToNode' && node.targetNodeId === name ? { ...node, targetNodeId: newName } : node,
      ),
      edges: (flow.edges ?? []).map((edge) => ({
        ...edge,
        from: edge.from === name ? newName : edge.from,
        to: edge.to === name ? newName : edge.to,
      })),
    })),
  };
  const positions = { ...positionsOf(next) };
  const at = positions[positionKey(flowName, name)];
  delete positions[positionKey(flowName, name)];
  if (at) positions[positionKey(flowName, newName)] = at;
  return withPositions(next, positions);
}

export function updateEdge(definition: AgentDefinition, id: string, fields: Record<string, unknown>): AgentDefinition {
  const at = parseEdgeId(id);
  if (!at) return definition;
  return mapFlow(definition, at.flowIndex, (flow) => ({
    ...flow,
    edges: (flow.edges ?? []).map((edge, index) => {
      if (index !== at.edgeIndex) return edge;
      const next: AnyEdge = { ...(edge as AnyEdge) };
      for (const [key, value] of Object.entries(fields)) {
        if (value === undefined) delete next[key];
        else next[key] = value;
      }
      return next;
    }),
  }));
}

/** These nodes' positions set (rounded: a definition is read by people too). */
export function move(definition: AgentDefinition, moved: Readonly<Record<string, Position>>): AgentDefinition {
  const positions = { ...positionsOf(definition) };
  for (const [name, position] of Object.entries(moved)) {
    const flowIndex = flowIndexOf(definition, name);
    if (flowIndex < 0) continue;
    positions[positionKey(definition.flows[flowIndex].name, name)] = {
      x: Math.round(position.x),
      y: Math.round(position.y),
    };
  }
  return withPositions(definition, positions);
}

/** The positions of every node replaced (a tidy-up). */
export function placeAll(definition: AgentDefinition, positions: Readonly<Record<string, Position>>): AgentDefinition {
  const rounded = Object.fromEntries(
    Object.entries(positions).map(([key, p]) => [key, { x: Math.round(p.x), y: Math.round(p.y) }]),
  );
  return withPositions(definition, rounded);
}

/** A flow's new name; its nodes' positions follow. */
export function renameFlow(definition: AgentDefinition, flowIndex: number, name: string): AgentDefinition {
  const old = definition.flows[flowIndex]?.name;
  if (old === undefined || old === name) return definition;
  const positions: Record<string, Position> = {};
  for (const [key, position] of Object.entries(positionsOf(definition))) {
    positions[key.startsWith(`${old}/`) ? `${name}/${key.slice(old.length + 1)}` : key] = position;
  }
  return withPositions(
    mapFlow(definition, flowIndex, (flow) => ({ ...flow, name })),
    positions,
  );
}
