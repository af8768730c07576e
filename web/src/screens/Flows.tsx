/**
 * An agent's definition per environment: the graph (React Flow, laid out by ELK) beside the JSON editor. Validate
 * shows every problem on its node and in the editor at its field; Save stores a new version (it validates first, so
 * nothing invalid is sent). The graph follows the editor as you type, whenever the text is JSON with flows.
 */
import '@xyflow/react/dist/style.css';
import { Alert, Anchor, Badge, Button, Grid, Group, List, Paper, Stack, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  Background,
  Controls,
  Handle,
  type Node,
  type NodeProps,
  Position,
  ReactFlow,
  ReactFlowProvider,
} from '@xyflow/react';
import { useEffect, useMemo, useState } from 'react';
import { Link } from 'wouter';
import { type Api, ApiError, unwrap } from '../api';
import { EnvironmentTabs, ErrorAlert } from '../components';
import { layoutDefinition, NODE_COLORS, type NodeData } from '../flow-layout';
import type { AgentDefinition, Problem } from '../flows';
import { JsonEditor } from '../JsonEditor';
import { type Environment, STATUS_COLOR } from '../knowledge';

interface StoredDefinition {
  readonly definition: AgentDefinition;
  readonly version: number;
  readonly updatedAt: string;
}

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

function DefinitionNode({ data }: NodeProps<Node<NodeData>>) {
  const { definition, problems } = data;
  const color = NODE_COLORS[definition.type] ?? '#495057';
  return (
    <fieldset
      data-node={definition.name}
      aria-label={`Node ${definition.name} (${definition.type})${problems.length ? `, ${problems.length} problems` : ''}`}
      style={{
        margin: 0,
        minWidth: 0,
        border: `2px solid ${problems.length ? '#c92a2a' : color}`,
        borderRadius: 6,
        background: 'white',
        padding: '4px 8px',
        fontSize: 12,
      }}
    >
      <Handle type="target" position={Position.Left} />
      <div style={{ color, fontWeight: 700 }}>{definition.type}</div>
      <div>{definition.displayName ?? definition.name}</div>
      {problems.map((problem) => (
        <div key={`${problem.field}:${problem.rule}`} style={{ color: '#c92a2a' }}>
          {problem.rule}: {problem.message}
        </div>
      ))}
      <Handle type="source" position={Position.Right} />
    </fieldset>
  );
}

const NODE_TYPES = { definition: DefinitionNode };

function parsed(text: string): AgentDefinition | null {
  try {
    const value = JSON.parse(text) as AgentDefinition;
    return Array.isArray(value?.flows) && value.flows.every((flow) => Array.isArray(flow?.nodes)) ? value : null;
  } catch {
    return null;
  }
}

export function DefinitionGraph({ definition, problems }: { definition: AgentDefinition; problems: Problem[] }) {
  const graph = useMemo(() => layoutDefinition(definition, problems), [definition, problems]);
  return (
    <Paper withBorder h={560} aria-label="Flow graph" role="figure">
      <ReactFlowProvider>
        <ReactFlow
          // A graph of other nodes is a new view, fitted again (fitView applies when the view is made); a wide
          // definition may need to be shown smaller than React Flow's default minimum zoom (0.5) to fit.
          key={graph.nodes.map((node) => node.id).join(' ')}
          nodes={graph.nodes}
          edges={graph.edges}
          nodeTypes={NODE_TYPES}
          fitView
          fitViewOptions={{ padding: 0.05 }}
          minZoom={0.1}
          nodesConnectable={false}
          nodesDraggable={false}
          proOptions={{ hideAttribution: true }}
        >
          <Background />
          <Controls showInteractive={false} />
        </ReactFlow>
      </ReactFlowProvider>
    </Paper>
  );
}

export default function Flows({ api, agentId }: { api: Api; agentId: string }) {
  const [environment, setEnvironment] = useState<Environment>('development');
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
      <EnvironmentTabs value={environment} onChange={setEnvironment} />
      <DefinitionEditor key={environment} api={api} agentId={agentId} environment={environment} />
    </Stack>
  );
}

function DefinitionEditor({ api, agentId, environment }: { api: Api; agentId: string; environment: Environment }) {
  const queries = useQueryClient();
  const path = { agentId, environment };
  const stored = useQuery({
    queryKey: ['definition', agentId, environment],
    queryFn: async () => {
      try {
        return await unwrap<StoredDefinition>(
          api.GET('/dashboard/agents/{agentId}/definition/{environment}', { params: { path } }),
        );
      } catch (error) {
        if (error instanceof ApiError && error.code === 'DEFINITION_NOT_FOUND') return null;
        throw error;
      }
    },
  });
  const [text, setText] = useState<string | null>(null);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [checked, setChecked] = useState<'valid' | 'invalid' | null>(null);
  useEffect(() => {
    if (stored.data !== undefined && text === null) {
      setText(stored.data ? `${JSON.stringify(stored.data.definition, null, 2)}\n` : STARTER);
    }
  }, [stored.data, text]);
  const current = text ?? '';
  const definition = useMemo(() => parsed(current), [current]);

  const validate = async (): Promise<boolean> => {
    const result = await unwrap<{ valid: boolean; problems: Problem[] }>(
      api.POST('/dashboard/agents/{agentId}/definition/{environment}/validate', {
        params: { path },
        body: JSON.parse(current),
      }),
    );
    setProblems(result.problems);
    setChecked(result.valid ? 'valid' : 'invalid');
    return result.valid;
  };
  const check = useMutation({ mutationFn: validate });
  const save = useMutation({
    mutationFn: async () => {
      if (!(await validate())) return null;
      return unwrap<StoredDefinition>(
        api.PUT('/dashboard/agents/{agentId}/definition/{environment}', {
          params: { path },
          body: JSON.parse(current),
        }),
      );
    },
    onSuccess: (saved) => saved && queries.setQueryData(['definition', agentId, environment], saved),
  });
  const syntaxError = definition === null && current.trim() !== '';

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
        <Button variant="default" onClick={() => check.mutate()} loading={check.isPending} disabled={syntaxError}>
          Validate
        </Button>
        <Button onClick={() => save.mutate()} loading={save.isPending} disabled={syntaxError}>
          Save a new version
        </Button>
        {checked === 'valid' && problems.length === 0 && (
          <Text size="sm" c={STATUS_COLOR.ready}>
            Valid
          </Text>
        )}
      </Group>
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
      <Grid>
        <Grid.Col span={{ base: 12, lg: 7 }}>
          {definition ? (
            <DefinitionGraph definition={definition} problems={problems} />
          ) : (
            <Paper withBorder p="md" h={560}>
              <Text>{syntaxError ? 'The text is not a definition yet (JSON with flows).' : 'Loading…'}</Text>
            </Paper>
          )}
        </Grid.Col>
        <Grid.Col span={{ base: 12, lg: 5 }}>
          {text !== null && (
            <JsonEditor
              label="Definition (JSON)"
              value={text}
              problems={problems}
              onChange={(value) => {
                setText(value);
                setChecked(null);
              }}
            />
          )}
        </Grid.Col>
      </Grid>
    </Stack>
  );
}
