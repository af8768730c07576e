/**
 * The retrieval playground of one knowledge base: a query with numberOfResults, a minScore slider, label filters and
 * memory (JSON, checked before it is sent), the explain view (filters as resolved and skipped, every candidate with
 * its score and whether minScore kept it), and generate with its citations linked to the result cards.
 */
import {
  Anchor,
  Badge,
  Button,
  Card,
  Group,
  JsonInput,
  NumberInput,
  Progress,
  SegmentedControl,
  Select,
  Slider,
  Stack,
  Switch,
  Table,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link } from 'wouter';
import { type Answer, type Api, unwrap } from '../api';
import { ErrorAlert, ScrollBox } from '../components';
import { chunkViewHref, ENVIRONMENTS, type Environment } from '../knowledge';

const OPERATORS = ['equals', 'notEquals', 'greaterThan', 'lessThan'] as const;
type Operator = (typeof OPERATORS)[number];

interface FilterRow {
  key: 'label1' | 'label2';
  operator: Operator;
  value: string;
}

const KB = '/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}';

/** What Query answers (hits, and what explain says), or Generate (the same, with an answer and its citations). */
type Retrieved = Answer<`${typeof KB}/query`, 'post'> | Answer<`${typeof KB}/generate`, 'post'>;

export default function Playground({
  api,
  agentId,
  knowledgeBaseId,
}: {
  api: Api;
  agentId: string;
  knowledgeBaseId: string;
}) {
  const [environment, setEnvironment] = useState<Environment>('development');
  const [query, setQuery] = useState('');
  const [numberOfResults, setNumberOfResults] = useState<number>(5);
  const [minScore, setMinScore] = useState(0);
  const [filters, setFilters] = useState<FilterRow[]>([]);
  const [memory, setMemory] = useState('');
  const [explain, setExplain] = useState(true);
  const [memoryError, setMemoryError] = useState<string | null>(null);

  const run = useMutation({
    mutationFn: (mode: 'query' | 'generate') => {
      const body = {
        query,
        numberOfResults,
        minScore,
        explain,
        ...(filters.length ? { filters } : {}),
        ...(memory.trim() ? { memory: JSON.parse(memory) as Record<string, unknown> } : {}),
      };
      const path = { agentId, environment, knowledgeBaseId };
      return unwrap<Retrieved>(
        mode === 'query'
          ? api.POST('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/query', {
              params: { path },
              body,
            })
          : api.POST('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/generate', {
              params: { path },
              body,
            }),
      );
    },
  });

  function submit(mode: 'query' | 'generate') {
    return (event?: FormEvent) => {
      event?.preventDefault();
      if (memory.trim()) {
        try {
          const parsed: unknown = JSON.parse(memory);
          if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
        } catch {
          setMemoryError('Memory must be a JSON object');
          return;
        }
      }
      setMemoryError(null);
      run.mutate(mode);
    };
  }

  const answer = run.data;
  return (
    <Stack>
      <Title order={1}>Retrieval playground</Title>
      <Anchor component={Link} href={`/agents/${agentId}/knowledge`}>
        Knowledge bases of the agent
      </Anchor>
      <form onSubmit={submit('query')} aria-label="Query the knowledge base">
        <Stack gap="sm">
          <SegmentedControl
            aria-label="Environment"
            value={environment}
            onChange={(value) => setEnvironment(value as Environment)}
            data={[...ENVIRONMENTS]}
          />
          <Textarea label="Query" required value={query} onChange={(e) => setQuery(e.currentTarget.value)} />
          <Group align="flex-end">
            <NumberInput
              label="Number of results"
              min={1}
              max={100}
              value={numberOfResults}
              onChange={(value) => setNumberOfResults(Number(value) || 1)}
            />
            <Stack gap={4} style={{ flex: 1 }}>
              <Text size="sm" fw={500} id="min-score-label">
                Minimum score: {minScore.toFixed(2)}
              </Text>
              <Slider thumbLabel="Minimum score" min={0} max={1} step={0.05} value={minScore} onChange={setMinScore} />
            </Stack>
            <Switch label="Explain" checked={explain} onChange={(e) => setExplain(e.currentTarget.checked)} />
          </Group>
          {filters.map((filter, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: filters have no identity but their place
            <Group key={index} align="flex-end">
              <Select
                label={`Filter ${index + 1} label`}
                data={['label1', 'label2']}
                value={filter.key}
                allowDeselect={false}
                onChange={(value) =>
                  setFilters(filters.map((f, i) => (i === index ? { ...f, key: value as FilterRow['key'] } : f)))
                }
              />
              <Select
                label={`Filter ${index + 1} operator`}
                data={[...OPERATORS]}
                value={filter.operator}
                allowDeselect={false}
                onChange={(value) =>
                  setFilters(filters.map((f, i) => (i === index ? { ...f, operator: value as Operator } : f)))
                }
              />
              <TextInput
                label={`Filter ${index + 1} value`}
                description="A value, or {state.memory.path}"
                value={filter.value}
                onChange={(e) => {
                  const value = e.currentTarget.value;
                  setFilters(filters.map((f, i) => (i === index ? { ...f, value } : f)));
                }}
              />
              <Button variant="default" onClick={() => setFilters(filters.filter((_, i) => i !== index))}>
                Remove filter {index + 1}
              </Button>
            </Group>
          ))}
          <Group>
            <Button
              variant="default"
              onClick={() => setFilters([...filters, { key: 'label1', operator: 'equals', value: '' }])}
            >
              Add a label filter
            </Button>
          </Group>
          <JsonInput
            label="Memory (JSON)"
            description="What {state.memory.…} in a filter value reads"
            autosize
            minRows={2}
            value={memory}
            onChange={setMemory}
            error={memoryError}
          />
          <Group>
            <Button type="submit" loading={run.isPending && run.variables === 'query'}>
              Query
            </Button>
            <Button
              variant="light"
              onClick={() => submit('generate')()}
              loading={run.isPending && run.variables === 'generate'}
            >
              Generate
            </Button>
          </Group>
        </Stack>
      </form>
      <ErrorAlert error={run.error} />
      {answer && 'answer' in answer && (
        <Card withBorder aria-label="Answer">
          <Title order={2} size="h4">
            Answer
          </Title>
          <Text>{answer.answer}</Text>
          {answer.citations.length > 0 && (
            <Group gap="xs" mt="xs">
              {answer.citations.map((citation) => (
                <Anchor
                  key={`${citation.resultIndex}:${citation.sentence ?? citation.documentId}`}
                  href={`#result-${citation.resultIndex + 1}`}
                >
                  [{citation.resultIndex + 1}]
                </Anchor>
              ))}
            </Group>
          )}
        </Card>
      )}
      {answer && (
        <Stack component="section" aria-label="Results">
          <Title order={2} size="h4">
            {answer.results.length} result{answer.results.length === 1 ? '' : 's'}
          </Title>
          {answer.results.map((result, index) => (
            <Card
              key={result.metadata.chunkId}
              withBorder
              id={`result-${index + 1}`}
              aria-label={`Result ${index + 1}`}
            >
              <Group justify="space-between">
                <Text fw={600}>
                  [{index + 1}] {result.metadata.s3Key.split('/').pop()}
                </Text>
                <Badge color="gray">score {result.score.toFixed(3)}</Badge>
              </Group>
              <Progress value={result.score * 100} aria-label={`Score of result ${index + 1}`} mt={4} />
              <Text size="sm" mt="xs">
                {result.content}
              </Text>
              <Text size="xs" mt="xs">
                label1 {result.metadata.label1 ?? '—'} · label2 {result.metadata.label2 ?? '—'} · document{' '}
                {result.metadata.documentId}
              </Text>
              <Anchor
                component={Link}
                size="sm"
                href={chunkViewHref(
                  { agentId, environment, knowledgeBaseId },
                  result.metadata.s3Key,
                  result.metadata.chunkId,
                )}
                aria-label={`Open in the document's chunks (result ${index + 1})`}
              >
                Open in the document's chunks
              </Anchor>
            </Card>
          ))}
        </Stack>
      )}
      {answer?.explain && (
        <Stack component="section" aria-label="Explain">
          <Title order={2} size="h4">
            Explain ({answer.explain.retrieval}, minScore {answer.explain.minScore})
          </Title>
          <Text size="sm">Filters applied: {JSON.stringify(answer.explain.filters)}</Text>
          <Text size="sm">Filters skipped: {JSON.stringify(answer.explain.skippedFilters)}</Text>
          <ScrollBox label="Candidates (scrolls sideways)">
            <Table aria-label="Candidates">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Document</Table.Th>
                  <Table.Th>Chunk</Table.Th>
                  <Table.Th>Score</Table.Th>
                  <Table.Th>Kept</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {answer.explain.candidates.map((candidate) => (
                  <Table.Tr key={candidate.chunkId}>
                    <Table.Td>{candidate.documentId}</Table.Td>
                    <Table.Td>{candidate.chunkId}</Table.Td>
                    <Table.Td>{candidate.score.toFixed(3)}</Table.Td>
                    <Table.Td>{candidate.kept ? 'kept' : 'cut by minScore'}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollBox>
        </Stack>
      )}
    </Stack>
  );
}
