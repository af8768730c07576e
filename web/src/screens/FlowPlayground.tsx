/**
 * The flow playground (the spec's development mode): pick a webhook trigger of the environment's definition, its
 * `defaultPayload` prefilled (and run at once when `autoTrigger` is true); a chat of the user's messages and the AI
 * messages; a pause for human input answered from the chat, which resumes the session; and the run's trace, node by
 * node from the analytics events, the failing node marked.
 */
import {
  Anchor,
  Badge,
  Button,
  Group,
  Paper,
  Select,
  Stack,
  Table,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { Link } from 'wouter';
import type { EventRecord } from '../analytics';
import { type Api, ApiError, unwrap } from '../api';
import { ErrorAlert } from '../components';
import { type AgentDefinition, webhookTriggers } from '../flows';
import { ENVIRONMENTS, type Environment, pollDelay, STATUS_COLOR } from '../knowledge';

interface RunResult {
  readonly sessionId: string;
  readonly status: 'completed' | 'paused' | 'failed' | 'running';
  readonly currentNode?: string | null;
  readonly aiMessages: { node: string; content: string }[];
  readonly error?: { code: string; message: string; node?: string | null } | null;
}

interface ChatLine {
  readonly from: 'you' | 'agent' | 'system';
  readonly text: string;
  /** The node whose AI message it is. */
  readonly node?: string;
}

export default function FlowPlayground({ api, agentId }: { api: Api; agentId: string }) {
  const [environment, setEnvironment] = useState<Environment>('development');
  const stored = useQuery({
    queryKey: ['definition', agentId, environment],
    queryFn: async () => {
      try {
        return await unwrap<{ definition: AgentDefinition; version: number }>(
          api.GET('/dashboard/agents/{agentId}/definition/{environment}', {
            params: { path: { agentId, environment } },
          }),
        );
      } catch (error) {
        if (error instanceof ApiError && error.code === 'DEFINITION_NOT_FOUND') return null;
        throw error;
      }
    },
  });
  const triggers = stored.data ? webhookTriggers(stored.data.definition) : [];
  const [triggerName, setTriggerName] = useState<string | null>(null);
  const trigger = triggers.find((candidate) => candidate.node.name === triggerName);

  return (
    <Stack>
      <Title order={1}>Flow playground</Title>
      <Anchor component={Link} href={`/agents/${agentId}/flows`}>
        Flows
      </Anchor>
      <Group align="flex-end">
        <Select
          label="Environment"
          data={[...ENVIRONMENTS]}
          value={environment}
          allowDeselect={false}
          onChange={(value) => {
            setEnvironment((value as Environment) ?? 'development');
            setTriggerName(null);
          }}
        />
        <Select
          label="Trigger"
          placeholder={triggers.length ? 'Pick a webhook trigger' : 'No webhook trigger'}
          data={triggers.map(({ flow, node }) => ({ value: node.name, label: `${node.name} (flow ${flow})` }))}
          value={triggerName}
          onChange={setTriggerName}
        />
      </Group>
      <ErrorAlert error={stored.error} />
      {stored.data === null && <Text>No definition is stored in {environment}: save one on the Flows screen.</Text>}
      {trigger && (
        <Session
          key={`${environment}:${trigger.node.name}`}
          api={api}
          agentId={agentId}
          environment={environment}
          triggerName={trigger.node.name}
          defaultPayload={trigger.node.defaultPayload ?? '{}'}
          autoTrigger={trigger.node.autoTrigger === true}
        />
      )}
    </Stack>
  );
}

function Session(props: {
  api: Api;
  agentId: string;
  environment: Environment;
  triggerName: string;
  defaultPayload: string;
  autoTrigger: boolean;
}) {
  const { api, agentId, environment, triggerName } = props;
  const [payload, setPayload] = useState(props.defaultPayload);
  const [payloadError, setPayloadError] = useState<string | null>(null);
  const [lines, setLines] = useState<ChatLine[]>([]);
  const [last, setLast] = useState<RunResult | null>(null);
  const [message, setMessage] = useState('');
  const started = useRef(false);

  const run = useMutation({
    mutationFn: (body: Record<string, unknown>) =>
      unwrap<RunResult>(
        api.POST('/dashboard/agents/{agentId}/webhooks/{environment}/{triggerName}', {
          params: { path: { agentId, environment, triggerName } },
          body,
        }),
      ),
    onSuccess: (result) => show(result),
  });

  // AI messages of the session shown so far: a run that outlived its request brings the rest with the session.
  const shownAi = useRef(0);
  function show(result: RunResult) {
    setLast(result);
    shownAi.current += result.aiMessages.length;
    setLines((all) => [
      ...all,
      ...result.aiMessages.map((ai) => ({ from: 'agent' as const, text: ai.content, node: ai.node })),
      ...(result.status === 'failed' && result.error
        ? [{ from: 'system' as const, text: `failed: ${result.error.code}: ${result.error.message}` }]
        : []),
      ...(result.status === 'running' ? [{ from: 'system' as const, text: 'still running in the flow runner…' }] : []),
    ]);
  }

  // 202 `running` (docs/flows.md, "Long runs"): the session is polled until the flow runner ends or pauses it.
  const polls = useRef(0);
  const running = last?.status === 'running' ? last.sessionId : null;
  const session = useQuery({
    queryKey: ['session', agentId, environment, running],
    enabled: running !== null,
    queryFn: () =>
      unwrap<RunResult>(
        api.GET('/dashboard/agents/{agentId}/sessions/{environment}/{sessionId}', {
          params: { path: { agentId, environment, sessionId: running as string } },
        }),
      ),
    refetchInterval: (query) => (query.state.data?.status === 'running' ? pollDelay(polls.current++) : false),
  });
  useEffect(() => {
    const settled = session.data;
    if (!running || !settled || settled.status === 'running') return;
    show({ ...settled, sessionId: running, aiMessages: settled.aiMessages.slice(shownAi.current) });
  });

  function start() {
    let body: unknown;
    try {
      body = JSON.parse(payload);
    } catch {
      setPayloadError('The payload must be JSON');
      return;
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      setPayloadError('The payload must be a JSON object');
      return;
    }
    setPayloadError(null);
    setLines([]);
    setLast(null);
    shownAi.current = 0;
    run.mutate(body as Record<string, unknown>);
  }

  // autoTrigger: the trigger runs as soon as it is picked, with its default payload.
  useEffect(() => {
    if (props.autoTrigger && !started.current) {
      started.current = true;
      start();
    }
  });

  function send(event: FormEvent) {
    event.preventDefault();
    if (!last || !message) return;
    setLines((all) => [...all, { from: 'you', text: message }]);
    run.mutate({ sessionId: last.sessionId, message });
    setMessage('');
  }

  return (
    <Stack>
      <Textarea
        label="Payload (JSON)"
        autosize
        minRows={3}
        value={payload}
        onChange={(e) => setPayload(e.currentTarget.value)}
        error={payloadError}
      />
      <Group>
        <Button onClick={start} loading={run.isPending && !last}>
          Run
        </Button>
        {last && (
          <Badge size="lg" variant="outline" color={STATUS_COLOR[last.status] ?? 'blue.9'}>
            {last.status}
            {last.status === 'paused' && last.currentNode ? ` at ${last.currentNode}` : ''}
          </Badge>
        )}
      </Group>
      <ErrorAlert error={run.error} />
      <Paper withBorder p="sm" aria-label="Chat" role="log">
        {lines.length === 0 && <Text size="sm">No messages yet.</Text>}
        {lines.map((line, index) => (
          <Text
            // The chat only grows; its lines never move.
            // biome-ignore lint/suspicious/noArrayIndexKey: lines are appended, never reordered
            key={index}
            size="sm"
            c={line.from === 'system' ? 'red.9' : undefined}
            ta={line.from === 'you' ? 'right' : 'left'}
          >
            <Text span fw={700}>
              {line.from === 'you' ? 'You' : line.from === 'agent' ? `Agent (${line.node})` : 'Run'}:
            </Text>{' '}
            {line.text}
          </Text>
        ))}
      </Paper>
      {last?.status === 'paused' && (
        <form onSubmit={send} aria-label="Answer the agent">
          <Group align="flex-end">
            <TextInput
              label={`Your answer (${last.currentNode ?? 'the node'} waits for it)`}
              value={message}
              onChange={(e) => setMessage(e.currentTarget.value)}
              style={{ flex: 1 }}
            />
            <Button type="submit" loading={run.isPending}>
              Send
            </Button>
          </Group>
        </form>
      )}
      {last && (
        <Trace api={api} agentId={agentId} environment={environment} sessionId={last.sessionId} after={lines.length} />
      )}
    </Stack>
  );
}

/** The session's events, oldest first: the trigger, each node run, and the failure with its node marked. */
function Trace(props: { api: Api; agentId: string; environment: Environment; sessionId: string; after: number }) {
  const { api, agentId, environment, sessionId } = props;
  const events = useQuery({
    queryKey: ['trace', agentId, environment, sessionId, props.after],
    queryFn: () =>
      unwrap<{ data: EventRecord[] }>(
        api.POST('/dashboard/agents/{agentId}/events', {
          params: { path: { agentId } },
          body: { filters: { environment, sessionId }, limit: 1000 },
        }),
      ),
  });
  // Oldest first; a built-in event's payload is an object (nodeName, nodeType, code, message).
  const ordered = [...(events.data?.data ?? [])].reverse().map((event) => ({
    ...event,
    payload: (event.payload ?? null) as Record<string, unknown> | null,
  }));
  const failedNode = ordered.find((event) => event.eventName === 'invocation_error')?.payload?.nodeName;
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Trace
      </Title>
      <ErrorAlert error={events.error} />
      <Table aria-label="Trace">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Time</Table.Th>
            <Table.Th>Event</Table.Th>
            <Table.Th>Node</Table.Th>
            <Table.Th>Detail</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {ordered.map((event) => {
            const node = typeof event.payload?.nodeName === 'string' ? event.payload.nodeName : '';
            const failed = event.eventName === 'invocation_error' || (node !== '' && node === failedNode);
            return (
              <Table.Tr key={event.id} data-failed={failed ? 'true' : undefined} bg={failed ? 'red.0' : undefined}>
                <Table.Td>{new Date(event.created_at).toLocaleTimeString()}</Table.Td>
                <Table.Td>{event.eventName}</Table.Td>
                <Table.Td>
                  {node}
                  {failed && node && (
                    <Badge color="red.9" variant="outline" ml="xs">
                      failed here
                    </Badge>
                  )}
                </Table.Td>
                <Table.Td>
                  <Text size="xs" ff="monospace" lineClamp={2}>
                    {event.eventName === 'node_execution'
                      ? String(event.payload?.nodeType ?? '')
                      : event.eventName === 'invocation_error'
                        ? `${String(event.payload?.code)}: ${String(event.payload?.message)}`
                        : JSON.stringify(event.payload)}
                  </Text>
                </Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
