/**
 * The flow playground (the spec's development mode): pick a webhook trigger of the environment's definition, its
 * `defaultPayload` prefilled (and run at once when `autoTrigger` is true); a chat of the user's messages and the AI
 * messages; a pause for human input answered from the chat, which resumes the session; and the session's trace, step
 * by step (each node run's input, output, time and edge on demand), the one step that failed marked.
 */
import {
  Alert,
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
import { type Answer, type Api, ApiError, unwrap } from '../api';
import { ErrorAlert, ScrollBox } from '../components';
import { webhookTriggers } from '../flows';
import { ENVIRONMENTS, type Environment, pollDelay, STATUS_COLOR } from '../knowledge';

/** A run's result: the webhook's answer (its 200, or its 202 while the flow runner has it). */
type RunResult = Answer<'/dashboard/agents/{agentId}/webhooks/{environment}/{triggerName}', 'post'>;

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
        return await unwrap(
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
      unwrap(
        api.POST('/dashboard/agents/{agentId}/webhooks/{environment}/{triggerName}', {
          params: { path: { agentId, environment, triggerName } },
          body,
        }),
      ),
    onSuccess: (result) => show(result),
  });

  // AI messages of the session shown so far: a run that outlived its request brings the rest with the session.
  const shownAi = useRef(0);
  // Whether the offline model answered any of them: it is not a language model, and a person must know.
  const [offline, setOffline] = useState(false);
  function show(result: RunResult) {
    setLast(result);
    if (result.aiMessages.some((ai) => ai.model === 'offline')) setOffline(true);
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
      unwrap(
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
    setOffline(false);
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
      {offline && (
        <Alert color="dark" variant="outline" title="Answered by the offline model" role="note">
          <Text size="sm">
            The offline model is not a language model: a prompt node answers with its own prompt and conditions are
            chosen by shared words. Give this deployment a model (<code>-c models=…</code> in AWS,{' '}
            <code>MODEL_BASE_URL</code> locally) to get real answers.
          </Text>
        </Alert>
      )}
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

/** One step of a session's trace (GET …/sessions/…/trace: docs/flows.md, "The trace"). */
type TraceStep = Answer<'/dashboard/agents/{agentId}/sessions/{environment}/{sessionId}/trace', 'get'>['steps'][number];

const STEP_COLOR: Record<TraceStep['status'], string> = {
  succeeded: 'green.9',
  paused: 'yellow.9',
  failed: 'red.9',
  running: 'blue.9',
};

/** The session's steps, oldest first: each node run with its input and output on demand, the failing step marked. */
function Trace(props: { api: Api; agentId: string; environment: Environment; sessionId: string; after: number }) {
  const { api, agentId, environment, sessionId } = props;
  const [open, setOpen] = useState<number | null>(null);
  const trace = useQuery({
    queryKey: ['trace', agentId, environment, sessionId, props.after],
    queryFn: () =>
      unwrap(
        api.GET('/dashboard/agents/{agentId}/sessions/{environment}/{sessionId}/trace', {
          params: { path: { agentId, environment, sessionId } },
        }),
      ),
  });
  const steps = trace.data?.steps ?? [];
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Trace
      </Title>
      <ErrorAlert error={trace.error} />
      {trace.data?.truncated && <Text size="sm">The oldest steps of this long session are not shown.</Text>}
      <ScrollBox label="Trace (scrolls sideways)">
        <Table aria-label="Trace">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>#</Table.Th>
              <Table.Th>Node</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Time</Table.Th>
              <Table.Th>Next</Table.Th>
              <Table.Th>Details</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {steps.flatMap((step) => {
              const failed = step.status === 'failed';
              const rows = [
                <Table.Tr key={step.index} data-failed={failed ? 'true' : undefined} bg={failed ? 'red.0' : undefined}>
                  <Table.Td>{step.index}</Table.Td>
                  <Table.Td>
                    {step.node ?? '(no node)'}
                    <Text span size="xs" c="dimmed" ml={4}>
                      {step.kind === 'invocation' ? 'run' : step.kind === 'agentCode' ? 'agent code' : step.nodeType}
                    </Text>
                    {failed && (
                      <Badge color="red.9" variant="outline" ml="xs">
                        failed here
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Badge color={STEP_COLOR[step.status]} variant="light">
                      {step.status}
                    </Badge>
                    {step.error && (
                      <Text size="xs" ff="monospace">
                        {step.error.code}: {step.error.message}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    {step.durationMs === null ? '' : `${step.durationMs} ms`}
                    {step.tokens && (
                      <Text size="xs" c="dimmed" aria-label={`Step ${step.index} tokens`}>
                        {step.tokens.input} in / {step.tokens.output} out tokens
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    {step.edge && (
                      <Text size="xs">
                        {step.edge.to ?? 'end'}
                        <Text span c="dimmed">
                          {' '}
                          ({step.edge.reason})
                        </Text>
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    {step.kind === 'node' && (
                      <Button
                        size="compact-xs"
                        variant="default"
                        aria-expanded={open === step.index}
                        onClick={() => setOpen(open === step.index ? null : step.index)}
                      >
                        Details
                      </Button>
                    )}
                  </Table.Td>
                </Table.Tr>,
              ];
              if (open === step.index) {
                rows.push(
                  <Table.Tr key={`${step.index}-details`}>
                    <Table.Td colSpan={6}>
                      <StepDetails step={step} />
                    </Table.Td>
                  </Table.Tr>,
                );
              }
              return rows;
            })}
          </Table.Tbody>
        </Table>
      </ScrollBox>
    </Stack>
  );
}

function StepDetails({ step }: { step: TraceStep }) {
  const parts: [string, unknown][] = [
    ['Input', step.input],
    ['Output', step.output],
    ...(step.toolCalls.length > 0 ? ([['Tool calls', step.toolCalls]] as [string, unknown][]) : []),
    ...(step.browserSteps.length > 0 ? ([['Browser steps', step.browserSteps]] as [string, unknown][]) : []),
  ];
  return (
    <Stack gap={4} aria-label={`Step ${step.index} details`}>
      <Text size="xs" c="dimmed">
        started {new Date(step.startedAt).toLocaleTimeString()}
        {step.model && ` · model ${step.model}`}
        {step.tokens && ` · ${step.tokens.input} input and ${step.tokens.output} output tokens`}
      </Text>
      {parts.map(([label, value]) => (
        <div key={label}>
          <Text size="xs" fw={700}>
            {label}
          </Text>
          <Text component="pre" size="xs" ff="monospace" style={{ whiteSpace: 'pre-wrap', margin: 0 }}>
            {JSON.stringify(value, null, 2)}
          </Text>
        </div>
      ))}
    </Stack>
  );
}
