/**
 * An agent's default retrieval per environment (what a trigger's message retrieves before the flow runs): on or off,
 * and up to 10 knowledge bases, each with its environment, numberOfResults, minScore and filters. Save stores it
 * (PUT); Preview shows what a message would inject with the settings as stored: the system message and its results,
 * and the warnings (filters skipped, knowledge bases gone).
 */
import {
  Alert,
  Anchor,
  Button,
  Card,
  Code,
  Group,
  JsonInput,
  NumberInput,
  Progress,
  Select,
  Stack,
  Switch,
  Text,
  Textarea,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { Link } from 'wouter';
import { type Api, unwrap } from '../api';
import { EnvironmentTabs, ErrorAlert } from '../components';
import { ENVIRONMENTS, type Environment } from '../knowledge';

interface Entry {
  knowledgeBaseId: string;
  environment?: Environment;
  numberOfResults?: number;
  minScore?: number;
  filters?: { key: string; operator: 'equals' | 'notEquals' | 'greaterThan' | 'lessThan'; value: string }[];
}

interface Config {
  readonly enabled: boolean;
  readonly knowledgeBases: Entry[];
}

/** An entry as the form holds it: filters as JSON text until it is sent. */
interface Row extends Omit<Entry, 'filters'> {
  /** The form's own key for the row (rows have no id of their own and may be removed from the middle). */
  key: number;
  filtersText: string;
}

let rowKeys = 0;

export default function RetrievalSettings({ api, agentId }: { api: Api; agentId: string }) {
  const [environment, setEnvironment] = useState<Environment>('development');
  return (
    <Stack>
      <Title order={1}>Default retrieval</Title>
      <Anchor component={Link} href={`/agents/${agentId}/knowledge`}>
        Knowledge bases of the agent
      </Anchor>
      <Text size="sm">
        When it is on, a trigger's message is the query of these knowledge bases, and what they return is given to the
        flow as a system message before its first node.
      </Text>
      <EnvironmentTabs value={environment} onChange={setEnvironment} />
      <Settings key={environment} api={api} agentId={agentId} environment={environment} />
    </Stack>
  );
}

function Settings({ api, agentId, environment }: { api: Api; agentId: string; environment: Environment }) {
  const queries = useQueryClient();
  const path = { agentId, environment };
  const key = ['retrieval', agentId, environment];
  const stored = useQuery({
    queryKey: key,
    queryFn: () => unwrap(api.GET('/dashboard/agents/{agentId}/retrieval/{environment}', { params: { path } })),
  });
  const bases = useQuery({
    queryKey: ['knowledge-bases', agentId],
    queryFn: () => unwrap(api.GET('/dashboard/agents/{agentId}/knowledge/bases', { params: { path: { agentId } } })),
  });
  const [enabled, setEnabled] = useState(false);
  const [rows, setRows] = useState<Row[] | null>(null);
  const [rowError, setRowError] = useState<string | null>(null);
  useEffect(() => {
    if (stored.data && rows === null) {
      setEnabled(stored.data.enabled);
      setRows(
        stored.data.knowledgeBases.map(({ filters, ...entry }) => ({
          ...entry,
          key: rowKeys++,
          filtersText: filters?.length ? JSON.stringify(filters, null, 2) : '',
        })),
      );
    }
  }, [stored.data, rows]);

  const save = useMutation({
    mutationFn: (config: Config) =>
      unwrap(api.PUT('/dashboard/agents/{agentId}/retrieval/{environment}', { params: { path }, body: config })),
    onSuccess: () => queries.invalidateQueries({ queryKey: key }),
  });

  function submit(event: FormEvent) {
    event.preventDefault();
    const knowledgeBases: Entry[] = [];
    for (const [index, { filtersText, key: _key, ...entry }] of (rows ?? []).entries()) {
      let filters: Entry['filters'];
      if (filtersText.trim()) {
        try {
          filters = JSON.parse(filtersText);
        } catch {
          setRowError(`Knowledge base ${index + 1}: the filters must be JSON (a list of { key, operator, value })`);
          return;
        }
      }
      knowledgeBases.push({ ...entry, ...(filters ? { filters } : {}) });
    }
    setRowError(null);
    save.mutate({ enabled, knowledgeBases });
  }

  const options = (bases.data?.data ?? []).map((base) => ({ value: base.knowledgeBaseId, label: base.name }));
  const update = (index: number, change: Partial<Row>) =>
    setRows((all) => (all ?? []).map((row, i) => (i === index ? { ...row, ...change } : row)));

  return (
    <Stack>
      <ErrorAlert error={stored.error ?? bases.error} />
      {rows !== null && (
        <form onSubmit={submit} aria-label="Default retrieval settings">
          <Stack>
            <Switch label="On" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
            {rows.map((row, index) => (
              <Card withBorder key={row.key} aria-label={`Knowledge base ${index + 1}`}>
                <Group align="flex-end">
                  <Select
                    label={`Knowledge base ${index + 1}`}
                    data={options}
                    value={row.knowledgeBaseId || null}
                    allowDeselect={false}
                    onChange={(value) => update(index, { knowledgeBaseId: value ?? '' })}
                  />
                  <Select
                    label="Its environment"
                    placeholder={`${environment} (this one)`}
                    clearable
                    data={[...ENVIRONMENTS]}
                    value={row.environment ?? null}
                    onChange={(value) => update(index, { environment: (value as Environment | null) ?? undefined })}
                  />
                  <NumberInput
                    label="Number of results"
                    min={1}
                    max={100}
                    value={row.numberOfResults ?? ''}
                    onChange={(value) => update(index, { numberOfResults: value === '' ? undefined : Number(value) })}
                  />
                  <NumberInput
                    label="Minimum score"
                    min={0}
                    max={1}
                    step={0.05}
                    decimalScale={3}
                    value={row.minScore ?? ''}
                    onChange={(value) => update(index, { minScore: value === '' ? undefined : Number(value) })}
                  />
                  <Button variant="default" onClick={() => setRows(rows.filter((_, i) => i !== index))}>
                    Remove knowledge base {index + 1}
                  </Button>
                </Group>
                <JsonInput
                  mt="xs"
                  label="Filters (JSON)"
                  description='For example [{ "key": "label1", "operator": "equals", "value": "{state.memory.topic}" }]'
                  autosize
                  minRows={2}
                  value={row.filtersText}
                  onChange={(value) => update(index, { filtersText: value })}
                />
              </Card>
            ))}
            <Group>
              <Button
                variant="default"
                disabled={rows.length >= 10}
                onClick={() =>
                  setRows([...rows, { key: rowKeys++, knowledgeBaseId: options[0]?.value ?? '', filtersText: '' }])
                }
              >
                Add a knowledge base
              </Button>
              <Button type="submit" loading={save.isPending}>
                Save settings
              </Button>
              {save.isSuccess && (
                <Text size="sm" role="status">
                  Saved
                </Text>
              )}
            </Group>
            {rowError && (
              <Text c="red.9" size="sm" role="alert">
                {rowError}
              </Text>
            )}
            <ErrorAlert error={save.error} />
          </Stack>
        </form>
      )}
      <PreviewPanel api={api} agentId={agentId} environment={environment} />
    </Stack>
  );
}

function PreviewPanel({ api, agentId, environment }: { api: Api; agentId: string; environment: Environment }) {
  const [query, setQuery] = useState('');
  const [memory, setMemory] = useState('');
  const [memoryError, setMemoryError] = useState<string | null>(null);
  const preview = useMutation({
    mutationFn: (body: { query: string; memory?: Record<string, unknown> }) =>
      unwrap(
        api.POST('/dashboard/agents/{agentId}/retrieval/{environment}/preview', {
          params: { path: { agentId, environment } },
          body,
        }),
      ),
  });
  function submit(event: FormEvent) {
    event.preventDefault();
    let parsed: unknown;
    if (memory.trim()) {
      try {
        parsed = JSON.parse(memory);
      } catch {
        parsed = null;
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        setMemoryError('Memory must be a JSON object');
        return;
      }
    }
    setMemoryError(null);
    preview.mutate({ query, ...(parsed ? { memory: parsed as Record<string, unknown> } : {}) });
  }
  const data = preview.data;
  return (
    <form onSubmit={submit} aria-label="Preview default retrieval">
      <Stack>
        <Title order={2} size="h4">
          Preview (the settings as saved)
        </Title>
        <Textarea
          label="A trigger's message"
          required
          value={query}
          onChange={(e) => setQuery(e.currentTarget.value)}
        />
        <JsonInput label="Memory (JSON)" value={memory} onChange={setMemory} error={memoryError} autosize minRows={2} />
        <Group>
          <Button type="submit" loading={preview.isPending}>
            Preview
          </Button>
        </Group>
        <ErrorAlert error={preview.error} />
        {data && (
          <Stack aria-label="Preview" role="region">
            {data.explain.warnings.length > 0 && (
              <Alert color="yellow" title="Warnings">
                {data.explain.warnings.map((warning) => (
                  <Text key={`${warning.code}:${warning.knowledgeBaseId}`} size="sm">
                    {warning.code}: {warning.message}
                  </Text>
                ))}
              </Alert>
            )}
            <Text fw={600}>
              {data.systemMessage === null ? 'Nothing would be injected.' : 'The system message the flow would get:'}
            </Text>
            {data.systemMessage !== null && <Code block>{data.systemMessage}</Code>}
            {data.results.map((result, index) => (
              <Card withBorder key={result.metadata.chunkId}>
                <Group justify="space-between">
                  <Text size="sm" fw={600}>
                    Result {index + 1}
                  </Text>
                  <Text size="xs">score {result.score.toFixed(3)}</Text>
                </Group>
                <Progress value={result.score * 100} aria-label={`Score of result ${index + 1}`} size="sm" my={4} />
                <Text size="sm">{result.content}</Text>
              </Card>
            ))}
          </Stack>
        )}
      </Stack>
    </form>
  );
}
