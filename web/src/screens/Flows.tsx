/**
 * An agent's definition per environment, edited on a canvas (React Flow) and as JSON, both views of one state: the
 * definition and its text. An edit in either shows in the other at once; text that is not a definition leaves the
 * canvas at the last one that was, and says so. A palette adds nodes (dragged onto the canvas, or by its buttons),
 * handles connect them, the properties panel edits the one selected (its fields drawn from the definition's own
 * schema), and undo/redo walk the states. The definition is validated as it changes (debounced): every problem is
 * shown on its node or edge, in the panel and in the editor, and never one of an earlier state. Positions are kept in
 * the definition's `ui` block; "Tidy up" lays everything out again. Unsaved changes are marked, and leaving them (an
 * environment tab, a link, closing the page) asks first.
 */
import '@xyflow/react/dist/style.css';
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Grid,
  Group,
  List,
  Paper,
  Select,
  Stack,
  Text,
  TextInput,
  Title,
  Tooltip,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  applyEdgeChanges,
  applyNodeChanges,
  Background,
  BaseEdge,
  type Connection,
  Controls,
  type Edge,
  type EdgeChange,
  EdgeLabelRenderer,
  type EdgeProps,
  getBezierPath,
  Handle,
  MiniMap,
  type Node,
  type NodeChange,
  type NodeProps,
  Position,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
} from '@xyflow/react';
import {
  type DragEvent,
  type MutableRefObject,
  type ReactNode,
  useCallback,
  useEffect,
  useMemo,
  useRef,
  useState,
} from 'react';
import { Link } from 'wouter';
import { type Api, ApiError, unwrap } from '../api';
import { EnvironmentTabs, ErrorAlert } from '../components';
import {
  addFlow,
  addNode,
  connect,
  duplicate,
  flowIndexOf,
  move,
  PALETTE,
  parseEdgeId,
  placeAll,
  positionKey,
  positionsOf,
  remove,
  renameFlow,
  updateEdge,
  updateNode,
} from '../flow-edit';
import {
  type EdgeData,
  layoutDefinition,
  NODE_COLORS,
  NODE_HEIGHT,
  NODE_NAME_PX,
  NODE_WIDTH,
  type NodeData,
  readableViewport,
  tidyPositions,
} from '../flow-layout';
import type { AgentDefinition, Problem } from '../flows';
import { JsonEditor } from '../JsonEditor';
import { type Environment, STATUS_COLOR } from '../knowledge';
import { EdgeProperties, NodeProperties } from '../PropertiesPanel';
import { FlowVersions } from './FlowVersions';

const STARTER = `{
  "flows": [
    {
      "name": "main",
      "nodes": [
        { "name": "Start", "type": "trigger", "triggerType": "webhook", "autoTrigger": false, "defaultPayload": "{}" },
        { "name": "Greet", "type": "promptNode", "displayName": "Greet", "prompt": "Greet the customer." }
      ],
      "edges": [{ "from": "Start", "to": "Greet", "type": "stepForward" }]
    }
  ]
}
`;

const CANVAS_HEIGHT = 620;
const LEAVE_QUESTION = 'You have unsaved changes to this definition. Leave and discard them?';
const PALETTE_MIME = 'application/x-flow-node-type';

const pretty = (definition: AgentDefinition) => `${JSON.stringify(definition, null, 2)}\n`;
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function parsed(text: string): AgentDefinition | null {
  try {
    const value = JSON.parse(text) as AgentDefinition;
    return value !== null &&
      typeof value === 'object' &&
      Array.isArray(value.flows) &&
      value.flows.every((flow) => flow && typeof flow.name === 'string' && Array.isArray(flow?.nodes))
      ? value
      : null;
  } catch {
    return null;
  }
}

function DefinitionNode({ data, selected }: NodeProps<Node<NodeData>>) {
  const { definition, problems } = data;
  const color = NODE_COLORS[definition.type] ?? '#495057';
  const shown = definition.displayName ?? definition.name;
  return (
    <fieldset
      data-node={definition.name}
      aria-label={`Node ${definition.name} (${definition.type})${problems.length ? `, ${problems.length} problems` : ''}`}
      style={{
        margin: 0,
        minWidth: 0,
        minHeight: NODE_HEIGHT,
        border: `2px solid ${problems.length ? '#c92a2a' : color}`,
        outline: selected ? '3px solid #228be6' : undefined,
        outlineOffset: 2,
        borderRadius: 6,
        background: 'white',
        padding: '4px 8px',
        fontSize: 13,
        lineHeight: 1.3,
      }}
    >
      <Handle type="target" position={Position.Left} title={`Into ${definition.name}`} />
      <div style={{ color, fontWeight: 700 }}>
        {definition.type}
        {shown !== definition.name && <span style={{ color: '#495057', fontWeight: 400 }}> · {definition.name}</span>}
      </div>
      <div data-node-name style={{ fontSize: NODE_NAME_PX, fontWeight: 600, overflowWrap: 'anywhere' }}>
        {shown}
      </div>
      {problems.map((problem) => (
        <div key={`${problem.field}:${problem.rule}`} style={{ color: '#c92a2a' }}>
          {problem.rule}: {problem.message}
        </div>
      ))}
      <Handle
        type="source"
        position={Position.Right}
        title={`Out of ${definition.name}: drag to another node to connect`}
      />
    </fieldset>
  );
}

function FlowGroup({ data }: NodeProps<Node<{ label: string }>>) {
  return (
    <div
      style={{
        width: '100%',
        height: '100%',
        border: '1px dashed #868e96',
        borderRadius: 8,
        background: 'rgba(241, 243, 245, 0.6)',
      }}
    >
      <div style={{ padding: '6px 10px', fontSize: 14, fontWeight: 700, color: '#343a40' }}>flow {data.label}</div>
    </div>
  );
}

/** An edge whose label sits above the nodes (a div layer over them), white behind it; red with its problems. */
function DefinitionEdge(props: EdgeProps<Edge<EdgeData>>) {
  const { id, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, label, data, selected, style } =
    props;
  const [path, labelX, labelY] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
  const problems = data?.problems ?? [];
  const stroke = problems.length ? '#c92a2a' : selected ? '#1971c2' : (style?.stroke as string | undefined);
  const text = [label, problems.length ? `${problems.length} problems` : ''].filter(Boolean).join(' · ');
  return (
    <>
      <BaseEdge
        id={id}
        path={path}
        markerEnd={props.markerEnd}
        style={{ ...style, stroke, strokeWidth: selected || problems.length ? 3 : 2 }}
        interactionWidth={24}
      />
      {text && (
        <EdgeLabelRenderer>
          <div
            data-edge-label={id}
            className="nodrag nopan"
            title={problems.map((p) => `${p.field}: ${p.message ?? p.rule}`).join('\n') || undefined}
            style={{
              position: 'absolute',
              transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)`,
              // Above every node (React Flow gives a selected node 1000): a label is never hidden under a node.
              zIndex: 1001,
              maxWidth: 150,
              padding: '2px 6px',
              background: 'white',
              border: `1px solid ${problems.length ? '#c92a2a' : '#ced4da'}`,
              borderRadius: 4,
              fontSize: 12,
              color: problems.length ? '#c92a2a' : '#212529',
              pointerEvents: 'none',
              textAlign: 'center',
            }}
          >
            {text}
          </div>
        </EdgeLabelRenderer>
      )}
    </>
  );
}

const NODE_TYPES = { definition: DefinitionNode, flowGroup: FlowGroup };
const EDGE_TYPES = { definition: DefinitionEdge };

/** Asks before a page with unsaved changes is closed, reloaded, or left by a link of the console. */
function useLeaveGuard(dirty: boolean) {
  useEffect(() => {
    if (!dirty) return;
    const unload = (event: BeforeUnloadEvent) => {
      event.preventDefault();
      event.returnValue = LEAVE_QUESTION;
    };
    // wouter has no navigation blocker: a click on a link to another path is stopped before the router sees it.
    const click = (event: MouseEvent) => {
      const link = (event.target as Element | null)?.closest?.('a[href]');
      if (!link || event.defaultPrevented) return;
      const href = new URL((link as HTMLAnchorElement).href, window.location.href);
      if (href.origin !== window.location.origin || href.pathname === window.location.pathname) return;
      if (!window.confirm(LEAVE_QUESTION)) {
        event.preventDefault();
        event.stopImmediatePropagation();
      }
    };
    window.addEventListener('beforeunload', unload);
    document.addEventListener('click', click, true);
    return () => {
      window.removeEventListener('beforeunload', unload);
      document.removeEventListener('click', click, true);
    };
  }, [dirty]);
}

export default function Flows({ api, agentId }: { api: Api; agentId: string }) {
  const [environment, setEnvironment] = useState<Environment>('development');
  const [dirty, setDirty] = useState(false);
  useLeaveGuard(dirty);
  return (
    <Stack>
      <Title order={1}>Flows</Title>
      <Group>
        <Anchor component={Link} href="/agents">
          All agents
        </Anchor>
        <Anchor component={Link} href={`/agents/${agentId}/flows/playground`}>
          Flow playground
        </Anchor>
      </Group>
      <EnvironmentTabs
        value={environment}
        onChange={(next) => {
          if (next === environment || (dirty && !window.confirm(LEAVE_QUESTION))) return;
          setDirty(false);
          setEnvironment(next);
        }}
      />
      <DefinitionEditor
        key={environment}
        api={api}
        agentId={agentId}
        environment={environment}
        onDirtyChange={setDirty}
      />
    </Stack>
  );
}

interface Snapshot {
  /** The last text that was a definition (the canvas shows it). */
  readonly definition: AgentDefinition;
  readonly text: string;
  /** The text is not a definition (the canvas shows `definition`, an earlier state). */
  readonly broken: boolean;
}

interface History {
  readonly past: readonly Snapshot[];
  readonly present: Snapshot;
  readonly future: readonly Snapshot[];
  /** When the last typing in the JSON editor was recorded: keystrokes within a second are one step. */
  readonly typedAt: number;
}

const HISTORY_LIMIT = 200;

function useDefinitionHistory() {
  const [history, setHistory] = useState<History | null>(null);
  const load = useCallback((text: string) => {
    const definition = parsed(text) ?? { flows: [] };
    setHistory({ past: [], present: { definition, text, broken: parsed(text) === null }, future: [], typedAt: 0 });
  }, []);
  const edit = useCallback((change: (definition: AgentDefinition) => AgentDefinition) => {
    setHistory((current) => {
      if (!current) return current;
      const definition = change(current.present.definition);
      if (definition === current.present.definition) return current;
      return {
        past: [...current.past, current.present].slice(-HISTORY_LIMIT),
        present: { definition, text: pretty(definition), broken: false },
        future: [],
        typedAt: 0,
      };
    });
  }, []);
  const type = useCallback((text: string) => {
    setHistory((current) => {
      if (!current || text === current.present.text) return current;
      const definition = parsed(text);
      const present = { definition: definition ?? current.present.definition, text, broken: definition === null };
      const now = Date.now();
      const coalesce = now - current.typedAt < 1000;
      return {
        past: coalesce ? current.past : [...current.past, current.present].slice(-HISTORY_LIMIT),
        present,
        future: [],
        typedAt: now,
      };
    });
  }, []);
  const undo = useCallback(() => {
    setHistory((current) =>
      current?.past.length
        ? {
            past: current.past.slice(0, -1),
            present: current.past[current.past.length - 1],
            future: [current.present, ...current.future],
            typedAt: 0,
          }
        : current,
    );
  }, []);
  const redo = useCallback(() => {
    setHistory((current) =>
      current?.future.length
        ? {
            past: [...current.past, current.present],
            present: current.future[0],
            future: current.future.slice(1),
            typedAt: 0,
          }
        : current,
    );
  }, []);
  return { history, load, edit, type, undo, redo };
}

function DefinitionEditor({
  api,
  agentId,
  environment,
  onDirtyChange,
}: {
  api: Api;
  agentId: string;
  environment: Environment;
  onDirtyChange: (dirty: boolean) => void;
}) {
  const queries = useQueryClient();
  const path = { agentId, environment };
  const stored = useQuery({
    queryKey: ['definition', agentId, environment],
    queryFn: async () => {
      try {
        return await unwrap(api.GET('/dashboard/agents/{agentId}/definition/{environment}', { params: { path } }));
      } catch (error) {
        if (error instanceof ApiError && error.code === 'DEFINITION_NOT_FOUND') return null;
        throw error;
      }
    },
  });
  const models = useQuery({
    queryKey: ['models'],
    queryFn: () => unwrap(api.GET('/dashboard/models', {})),
    staleTime: 5 * 60_000,
  });
  const { history, load, edit, type, undo, redo } = useDefinitionHistory();
  const [baseline, setBaseline] = useState<AgentDefinition | null>(null);
  useEffect(() => {
    if (stored.data !== undefined && history === null) {
      const text = stored.data ? pretty(stored.data.definition) : STARTER;
      load(text);
      setBaseline(parsed(text));
    }
  }, [stored.data, history, load]);

  const present = history?.present;
  const definition = present?.definition ?? null;
  // Unsaved: the editor differs from what is stored (or, with nothing stored, from the starter it opened with).
  const changed = present !== undefined && (present.broken || !same(present.definition, baseline));
  const unsaved = changed || (stored.data === null && present !== undefined);
  useEffect(() => onDirtyChange(changed), [changed, onDirtyChange]);

  // Problems belong to the definition they were found in: shown only while it is the one edited.
  const [validated, setValidated] = useState<{ of: string; valid: boolean; problems: Problem[] } | null>(null);
  const currentKey = definition ? JSON.stringify(definition) : '';
  const fresh = validated !== null && validated.of === currentKey && !present?.broken;
  const problems = useMemo(() => (fresh ? (validated?.problems ?? []) : []), [fresh, validated]);

  const validate = useCallback(
    async (of: AgentDefinition): Promise<boolean> => {
      const result = await unwrap(
        api.POST('/dashboard/agents/{agentId}/definition/{environment}/validate', {
          params: { path: { agentId, environment } },
          body: of as never,
        }),
      );
      setValidated({ of: JSON.stringify(of), valid: result.valid, problems: result.problems });
      return result.valid;
    },
    [api, agentId, environment],
  );
  const check = useMutation({ mutationFn: () => validate(definition as AgentDefinition) });
  // Validated again after each change, once the changes pause.
  useEffect(() => {
    if (!definition || present?.broken) return;
    const timer = setTimeout(() => {
      validate(definition).catch(() => undefined);
    }, 600);
    return () => clearTimeout(timer);
  }, [definition, present?.broken, validate]);

  const save = useMutation({
    mutationFn: async () => {
      const body = definition as AgentDefinition;
      if (!(await validate(body))) return null;
      // Saved over the version this editor opened on: another person's save since is a 409 VERSION_CONFLICT,
      // said in words, instead of being overwritten without a trace.
      const expectedVersion = stored.data?.version ?? 0;
      return unwrap(
        api.PUT('/dashboard/agents/{agentId}/definition/{environment}', {
          params: { path },
          body: { ...body, expectedVersion } as never,
        }),
      );
    },
    onSuccess: (saved) => {
      if (!saved) return;
      queries.setQueryData(['definition', agentId, environment], saved);
      // What is stored now, defaults filled in, is what the editor holds: nothing unsaved.
      setBaseline(saved.definition);
      edit(() => saved.definition);
    },
  });

  const [showVersions, setShowVersions] = useState(false);
  const [selected, setSelected] = useState<{ nodes: string[]; edges: string[] }>({ nodes: [], edges: [] });
  const selectNext = useRef<string[] | null>(null);

  if (!history || !definition || !present) {
    return (
      <Stack>
        <ErrorAlert error={stored.error} />
        <Text>Loading…</Text>
      </Stack>
    );
  }
  const selectedNode = selected.nodes.length === 1 && selected.edges.length === 0 ? selected.nodes[0] : null;
  const selectedEdge = selected.edges.length === 1 && selected.nodes.length === 0 ? selected.edges[0] : null;
  const nodeFlow = selectedNode ? flowIndexOf(definition, selectedNode) : -1;
  const nodeIndex = nodeFlow >= 0 ? definition.flows[nodeFlow].nodes.findIndex((n) => n.name === selectedNode) : -1;
  const edgeAt = selectedEdge ? parseEdgeId(selectedEdge) : null;
  const edge = edgeAt ? definition.flows[edgeAt.flowIndex]?.edges?.[edgeAt.edgeIndex] : undefined;
  const reveal = selectedNode
    ? `flows.${nodeFlow}.nodes.${nodeIndex}`
    : edgeAt
      ? `flows.${edgeAt.flowIndex}.edges.${edgeAt.edgeIndex}`
      : undefined;

  return (
    <Stack>
      <Group>
        {stored.data ? (
          <Badge variant="light" size="lg">
            version {stored.data.version}, saved {new Date(stored.data.updatedAt).toLocaleString()}
          </Badge>
        ) : (
          stored.data === null && <Text size="sm">No definition stored in {environment} yet: a starter is loaded.</Text>
        )}
        {unsaved && (
          <Badge color="orange" variant="filled" size="lg" role="status">
            Unsaved changes
          </Badge>
        )}
        <Button variant="default" onClick={() => check.mutate()} loading={check.isPending} disabled={present.broken}>
          Validate
        </Button>
        <Button
          onClick={() => save.mutate()}
          loading={save.isPending}
          disabled={present.broken || (stored.data !== null && !changed)}
        >
          Save a new version
        </Button>
        {fresh && validated?.valid && (
          <Text size="sm" c={STATUS_COLOR.ready}>
            Valid
          </Text>
        )}
        {stored.data && (
          <Button variant="subtle" onClick={() => setShowVersions((open) => !open)} aria-expanded={showVersions}>
            {showVersions ? 'Hide versions' : 'Versions'}
          </Button>
        )}
      </Group>
      {stored.data && showVersions && (
        <FlowVersions
          api={api}
          agentId={agentId}
          environment={environment}
          current={stored.data.version}
          unsaved={changed}
          onRestored={(record) => {
            queries.setQueryData(['definition', agentId, environment], record);
            // The restored definition is what is stored now, and what the editor holds (Undo goes back to the edits).
            setBaseline(record.definition);
            edit(() => record.definition);
          }}
        />
      )}
      <ErrorAlert error={stored.error ?? check.error ?? save.error} />
      {problems.length > 0 && (
        <Alert color="red" title={`${problems.length} problems`} role="alert">
          <List size="sm">
            {problems.map((problem) => (
              <List.Item key={`${problem.field}:${problem.rule}`}>
                <Text span fw={600}>
                  {problem.field}
                </Text>{' '}
                {problem.rule}: {problem.message}
                {problem.node ? ` (node ${problem.node})` : ''}
              </List.Item>
            ))}
          </List>
        </Alert>
      )}
      {present.broken && (
        <Alert color="yellow" role="status">
          The JSON is not a definition yet (JSON with flows, each with a name and nodes): the canvas shows the last text
          that was.
        </Alert>
      )}
      <ReactFlowProvider>
        <Canvas
          definition={definition}
          problems={problems}
          onEdit={edit}
          onSelect={setSelected}
          onUndo={undo}
          onRedo={redo}
          canUndo={history.past.length > 0}
          canRedo={history.future.length > 0}
          onStartEmpty={() => edit(() => ({ flows: [{ name: 'main', nodes: [], edges: [] }] }))}
          selectNext={selectNext}
          side={
            <Paper
              withBorder
              p="sm"
              aria-label="Properties"
              role="region"
              mah={CANVAS_HEIGHT + 60}
              style={{ overflowY: 'auto' }}
            >
              {selectedNode && nodeIndex >= 0 ? (
                <NodeProperties
                  key={selectedNode}
                  node={definition.flows[nodeFlow].nodes[nodeIndex]}
                  path={`flows.${nodeFlow}.nodes.${nodeIndex}`}
                  problems={problems}
                  models={models.data?.data ?? []}
                  taken={(name) => definition.flows.some((flow) => flow.nodes.some((n) => n.name === name))}
                  onChange={(fields) => {
                    if (typeof fields.name === 'string') selectNext.current = [fields.name];
                    edit((d) => updateNode(d, selectedNode, fields));
                  }}
                />
              ) : selectedEdge && edge ? (
                <EdgeProperties
                  key={selectedEdge}
                  edge={edge}
                  path={`flows.${edgeAt?.flowIndex}.edges.${edgeAt?.edgeIndex}`}
                  problems={problems}
                  onChange={(fields) => edit((d) => updateEdge(d, selectedEdge, fields))}
                  onDelete={() => edit((d) => remove(d, [], [selectedEdge]))}
                />
              ) : (
                <Text size="sm">
                  Select a node or an edge to edit its properties. Shift-click or shift-drag selects several.
                </Text>
              )}
            </Paper>
          }
        />
      </ReactFlowProvider>
      <JsonEditor label="Definition (JSON)" value={present.text} problems={problems} reveal={reveal} onChange={type} />
    </Stack>
  );
}

function Canvas({
  definition,
  problems,
  onEdit,
  onSelect,
  onUndo,
  onRedo,
  canUndo,
  canRedo,
  onStartEmpty,
  selectNext,
  side,
}: {
  definition: AgentDefinition;
  problems: readonly Problem[];
  onEdit: (change: (definition: AgentDefinition) => AgentDefinition) => void;
  onSelect: (selection: { nodes: string[]; edges: string[] }) => void;
  onUndo: () => void;
  onRedo: () => void;
  canUndo: boolean;
  canRedo: boolean;
  onStartEmpty: () => void;
  /** What to select once the next edit shows (a node just added, duplicated or renamed). */
  selectNext: MutableRefObject<string[] | null>;
  side: ReactNode;
}) {
  const flow = useReactFlow();
  const host = useRef<HTMLDivElement>(null);
  const layout = useMemo(() => layoutDefinition(definition, problems), [definition, problems]);
  const [nodes, setNodes] = useState<Node[]>(layout.nodes);
  const [edges, setEdges] = useState<Edge[]>(layout.edges);
  const [notice, setNotice] = useState<string | null>(null);
  const [target, setTarget] = useState(0);
  const flowIndex = Math.min(target, Math.max(0, definition.flows.length - 1));

  // The layout follows the definition; what is selected stays selected, or what an edit asked to select is.
  useEffect(() => {
    const next = selectNext.current;
    selectNext.current = null;
    setNodes((current) => {
      const chosen = next ? new Set(next) : new Set(current.filter((n) => n.selected).map((n) => n.id));
      return layout.nodes.map((n) => (chosen.has(n.id) ? { ...n, selected: true } : n));
    });
    setEdges((current) => {
      const chosen = next ? new Set<string>() : new Set(current.filter((e) => e.selected).map((e) => e.id));
      return layout.edges.map((e) => (chosen.has(e.id) ? { ...e, selected: true } : e));
    });
  }, [layout, selectNext]);

  const selection = useMemo(
    () => ({
      nodes: nodes.filter((n) => n.selected && n.type === 'definition').map((n) => n.id),
      edges: edges.filter((e) => e.selected && parseEdgeId(e.id)).map((e) => e.id),
    }),
    [nodes, edges],
  );
  const selectionKey = JSON.stringify(selection);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the key stands for the selection
  useEffect(() => onSelect(selection), [selectionKey, onSelect]);

  const showDefaultView = useCallback(() => {
    const box = host.current?.getBoundingClientRect();
    if (!box) return;
    flow.setViewport(readableViewport(layout.nodes, box.width, box.height));
  }, [flow, layout.nodes]);
  const opened = useRef(false);
  useEffect(() => {
    if (opened.current || layout.nodes.length === 0) return;
    opened.current = true;
    // After React Flow has measured its pane.
    requestAnimationFrame(showDefaultView);
  }, [layout.nodes.length, showDefaultView]);

  const add = (type: string, at?: { x: number; y: number }) => {
    let index = flowIndex;
    let position = at;
    if (at) {
      const inside = layout.nodes.find(
        (n) =>
          n.type === 'flowGroup' &&
          at.x >= n.position.x &&
          at.x <= n.position.x + Number(n.style?.width) &&
          at.y >= n.position.y &&
          at.y <= n.position.y + Number(n.style?.height),
      );
      if (inside) index = Number(inside.id.split(':').pop());
    } else {
      // Beside the flow's last node (a new flow: below everything).
      const flowNodes = layout.nodes.filter(
        (n) => n.type === 'definition' && (n.data as NodeData).flow === definition.flows[index]?.name,
      );
      const last = flowNodes[flowNodes.length - 1];
      const lowest = Math.max(0, ...layout.nodes.map((n) => n.position.y + Number(n.style?.height ?? NODE_HEIGHT)));
      position = last ? { x: last.position.x + NODE_WIDTH + 150, y: last.position.y } : { x: 0, y: lowest + 60 };
    }
    const base = definition.flows.length
      ? definition
      : { ...definition, flows: [{ name: 'main', nodes: [], edges: [] }] };
    const result = addNode(base, Math.min(index, base.flows.length - 1), type, position ?? { x: 0, y: 0 });
    selectNext.current = [result.name];
    onEdit(() => result.definition);
    setNotice(null);
    // In view, at the zoom the person chose.
    requestAnimationFrame(() => {
      if (!at && position) {
        flow.setCenter(position.x + NODE_WIDTH / 2, position.y + NODE_HEIGHT / 2, {
          zoom: flow.getZoom(),
          duration: 0,
        });
      }
    });
  };

  const removeSelected = () => onEdit((d) => remove(d, selection.nodes, selection.edges));
  const duplicateSelected = () => {
    const result = duplicate(definition, selection.nodes);
    selectNext.current = result.names;
    onEdit(() => result.definition);
  };
  const tidy = () => {
    onEdit((d) => placeAll(d, tidyPositions(d)));
    opened.current = false;
  };

  const onKeyDown = (event: globalThis.KeyboardEvent) => {
    const element = event.target as HTMLElement | null;
    // The JSON editor and the form fields have their own undo.
    if (element?.closest?.('input, textarea, select, [contenteditable="true"], [role="dialog"]')) return;
    const key = event.key.toLowerCase();
    if ((event.ctrlKey || event.metaKey) && key === 'z') {
      event.preventDefault();
      if (event.shiftKey) onRedo();
      else onUndo();
    } else if ((event.ctrlKey || event.metaKey) && key === 'y') {
      event.preventDefault();
      onRedo();
    } else if ((event.ctrlKey || event.metaKey) && key === 'd' && selection.nodes.length) {
      event.preventDefault();
      duplicateSelected();
    }
  };

  // On the whole page while the canvas is shown: the focus is often nowhere (a node just deleted had it).
  const keys = useRef(onKeyDown);
  keys.current = onKeyDown;
  useEffect(() => {
    const listener = (event: globalThis.KeyboardEvent) => keys.current(event);
    document.addEventListener('keydown', listener);
    return () => document.removeEventListener('keydown', listener);
  }, []);

  const onDrop = (event: DragEvent<HTMLDivElement>) => {
    const type = event.dataTransfer.getData(PALETTE_MIME);
    if (!type) return;
    event.preventDefault();
    const at = flow.screenToFlowPosition({ x: event.clientX, y: event.clientY });
    add(type, { x: at.x - NODE_WIDTH / 2, y: at.y - NODE_HEIGHT / 2 });
  };

  const flowName = definition.flows[flowIndex]?.name ?? '';

  return (
    <div>
      <Stack gap="xs">
        <Group gap="xs" role="toolbar" aria-label="Palette">
          <Text size="sm" fw={600}>
            Add node:
          </Text>
          {PALETTE.map((item) => (
            <Tooltip key={item.type} label={`Drag onto the canvas, or click to add to flow ${flowName}`}>
              <Button
                size="xs"
                variant="light"
                draggable
                aria-label={`Add ${item.label}`}
                style={{ borderLeft: `4px solid ${NODE_COLORS[item.type]}`, cursor: 'grab' }}
                onDragStart={(event) => {
                  event.dataTransfer.setData(PALETTE_MIME, item.type);
                  event.dataTransfer.effectAllowed = 'copy';
                }}
                onClick={() => add(item.type)}
              >
                {item.label}
              </Button>
            </Tooltip>
          ))}
        </Group>
        <Group gap="xs" role="toolbar" aria-label="Edit">
          <Button size="xs" variant="default" onClick={onUndo} disabled={!canUndo} aria-keyshortcuts="Control+Z">
            Undo
          </Button>
          <Button size="xs" variant="default" onClick={onRedo} disabled={!canRedo} aria-keyshortcuts="Control+Shift+Z">
            Redo
          </Button>
          <Button
            size="xs"
            variant="default"
            onClick={duplicateSelected}
            disabled={selection.nodes.length === 0}
            aria-keyshortcuts="Control+D"
          >
            Duplicate
          </Button>
          <Button
            size="xs"
            variant="default"
            color="red"
            onClick={removeSelected}
            disabled={selection.nodes.length + selection.edges.length === 0}
            aria-keyshortcuts="Delete"
          >
            Delete
          </Button>
          <Button size="xs" variant="default" onClick={tidy}>
            Tidy up
          </Button>
          <Button size="xs" variant="default" onClick={onStartEmpty}>
            Start from empty
          </Button>
          <Select
            size="xs"
            w={160}
            aria-label="Flow for new nodes"
            data={definition.flows.map((f, i) => ({ value: String(i), label: `flow ${f.name}` }))}
            value={String(flowIndex)}
            onChange={(value) => value !== null && setTarget(Number(value))}
            allowDeselect={false}
          />
          <FlowNameField
            key={`${flowIndex}:${flowName}`}
            value={flowName}
            taken={(name) => definition.flows.some((f, i) => i !== flowIndex && f.name === name)}
            onRename={(name) => onEdit((d) => renameFlow(d, flowIndex, name))}
          />
          <Button
            size="xs"
            variant="default"
            onClick={() => {
              const lowest = Math.max(
                0,
                ...layout.nodes.map((n) => n.position.y + Number(n.style?.height ?? NODE_HEIGHT)),
              );
              onEdit((d) => addFlow(d, { x: 0, y: lowest + 80 }));
              setTarget(definition.flows.length);
            }}
          >
            Add flow
          </Button>
        </Group>
        {notice && (
          <Alert color="yellow" withCloseButton onClose={() => setNotice(null)} role="status">
            {notice}
          </Alert>
        )}
        <Grid>
          <Grid.Col span={{ base: 12, lg: 9 }}>
            <Paper
              withBorder
              h={CANVAS_HEIGHT}
              aria-label="Flow graph"
              role="figure"
              ref={host}
              onDragOver={(event) => {
                if (event.dataTransfer.types.includes(PALETTE_MIME)) {
                  event.preventDefault();
                  event.dataTransfer.dropEffect = 'copy';
                }
              }}
              onDrop={onDrop}
            >
              <ReactFlow
                nodes={nodes}
                edges={edges}
                nodeTypes={NODE_TYPES}
                edgeTypes={EDGE_TYPES}
                onNodesChange={(changes: NodeChange[]) =>
                  setNodes((current) =>
                    applyNodeChanges(
                      changes.filter((c) => c.type !== 'remove'),
                      current,
                    ),
                  )
                }
                onEdgesChange={(changes: EdgeChange[]) =>
                  setEdges((current) =>
                    applyEdgeChanges(
                      changes.filter((c) => c.type !== 'remove'),
                      current,
                    ),
                  )
                }
                onNodeDragStop={(_, __, dragged) => {
                  const moved = Object.fromEntries(
                    dragged.filter((n) => n.type === 'definition').map((n) => [n.id, n.position]),
                  );
                  const before = positionsOf(definition);
                  const changed = Object.entries(moved).some(([name, p]) => {
                    const flowOf = definition.flows[flowIndexOf(definition, name)];
                    const old = flowOf ? before[positionKey(flowOf.name, name)] : undefined;
                    return !old || Math.round(old.x) !== Math.round(p.x) || Math.round(old.y) !== Math.round(p.y);
                  });
                  if (changed) onEdit((d) => move(d, moved));
                }}
                onConnect={(connection: Connection) => {
                  const result = connect(definition, connection.source, connection.target);
                  if ('refused' in result) setNotice(`Not connected: ${result.refused}.`);
                  else {
                    setNotice(null);
                    onEdit(() => result.definition);
                  }
                }}
                onDelete={({ nodes: gone, edges: goneEdges }) => {
                  const names = gone.filter((n) => n.type === 'definition').map((n) => n.id);
                  const ids = goneEdges.filter((e) => parseEdgeId(e.id)).map((e) => e.id);
                  if (names.length || ids.length) onEdit((d) => remove(d, names, ids));
                }}
                deleteKeyCode={['Delete', 'Backspace']}
                multiSelectionKeyCode="Shift"
                minZoom={0.2}
                maxZoom={2}
                panOnScroll
                zoomActivationKeyCode="Control"
                fitViewOptions={{ padding: 0.05, minZoom: 12 / NODE_NAME_PX, maxZoom: 1 }}
                proOptions={{ hideAttribution: true }}
              >
                <Background />
                <Controls showInteractive={false} />
                <MiniMap
                  pannable
                  zoomable
                  ariaLabel="Minimap"
                  nodeColor={(n) => NODE_COLORS[(n.data as NodeData)?.definition?.type] ?? '#dee2e6'}
                />
              </ReactFlow>
            </Paper>
          </Grid.Col>
          <Grid.Col span={{ base: 12, lg: 3 }}>{side}</Grid.Col>
        </Grid>
      </Stack>
    </div>
  );
}

function FlowNameField({
  value,
  taken,
  onRename,
}: {
  value: string;
  taken: (name: string) => boolean;
  onRename: (name: string) => void;
}) {
  const [text, setText] = useState(value);
  const invalid = !/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(text);
  const error = text === value ? undefined : invalid ? 'Not a name' : taken(text) ? 'Taken' : undefined;
  const commit = () => {
    if (text !== value && !error) onRename(text);
  };
  return (
    <TextInput
      size="xs"
      w={150}
      aria-label="Flow name"
      value={text}
      error={error}
      disabled={value === ''}
      onChange={(event) => setText(event.currentTarget.value)}
      onBlur={commit}
      onKeyDown={(event) => {
        if (event.key === 'Enter') commit();
      }}
    />
  );
}
