/**
 * One document's chunks, as the index holds them (Dify's segment view): each chunk's position, text and the metadata a
 * retrieval hit of it carries; a search within the document (`q`, ignoring case); pages of 50 ("Load more"). Opened
 * from a ready document's row (Documents) or from a retrieval hit (Playground), which names the chunk (`?chunk=`):
 * the view then loads pages until it holds that chunk, scrolls to it and marks it.
 */
import { Anchor, Badge, Button, Card, Group, Highlight, Stack, Text, TextInput, Title } from '@mantine/core';
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { Link, useSearch } from 'wouter';
import { type Answer, type Api, unwrap } from '../api';
import { ErrorAlert } from '../components';
import { type Dataset, ENVIRONMENTS, type Environment } from '../knowledge';

type Chunk = Answer<
  '/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/document/chunks',
  'get'
>['chunks'][number];

const CUSTOM_META = ['svc_internal_meta1', 'svc_internal_meta2', 'svc_internal_meta3', 'svc_internal_meta4'] as const;

export default function Chunks({
  api,
  agentId,
  knowledgeBaseId,
}: {
  api: Api;
  agentId: string;
  knowledgeBaseId: string;
}) {
  const params = new URLSearchParams(useSearch());
  const requested = params.get('environment') as Environment | null;
  const environment: Environment = requested && ENVIRONMENTS.includes(requested) ? requested : 'development';
  const s3Key = params.get('s3Key') ?? '';
  const target = params.get('chunk');
  const dataset: Dataset = { agentId, environment, knowledgeBaseId };
  const document = useQuery({
    queryKey: ['document', dataset, s3Key],
    queryFn: () =>
      unwrap(
        api.GET('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/document', {
          params: { path: dataset, query: { s3Key } },
        }),
      ),
    enabled: s3Key !== '',
  });
  const name = document.data?.fileName ?? s3Key.split('/').pop() ?? 'the document';
  return (
    <Stack>
      <Title order={1}>Chunks of {name}</Title>
      <Group>
        <Anchor component={Link} href={`/agents/${agentId}/knowledge/${knowledgeBaseId}`}>
          Documents of the knowledge base
        </Anchor>
        <Anchor component={Link} href={`/agents/${agentId}/knowledge/${knowledgeBaseId}/playground`}>
          Retrieval playground
        </Anchor>
        <Badge variant="light" color="gray">
          {environment}
        </Badge>
      </Group>
      <ErrorAlert error={document.error} />
      {s3Key === '' ? (
        <Text>No document named: open a document's chunks from its row in Documents.</Text>
      ) : (
        <ChunkList key={`${environment}:${s3Key}`} api={api} dataset={dataset} s3Key={s3Key} target={target} />
      )}
    </Stack>
  );
}

function ChunkList({
  api,
  dataset,
  s3Key,
  target,
}: {
  api: Api;
  dataset: Dataset;
  s3Key: string;
  target: string | null;
}) {
  const [draft, setDraft] = useState('');
  const [q, setQ] = useState('');
  const pages = useInfiniteQuery({
    queryKey: ['chunks', dataset, s3Key, q],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/document/chunks', {
          params: {
            path: dataset,
            query: { s3Key, limit: '50', ...(q ? { q } : {}), ...(pageParam ? { nextToken: pageParam } : {}) },
          },
        }),
      ),
    getNextPageParam: (last) => last.nextToken ?? undefined,
  });
  const chunks = pages.data?.pages.flatMap((page) => page.chunks) ?? [];
  const total = pages.data?.pages[0]?.total;
  const seeking = target !== null && q === '';
  const found = seeking && chunks.some((chunk) => chunk.chunkId === target);

  // A chunk named by a retrieval hit: pages are loaded until it is among them.
  useEffect(() => {
    if (seeking && !found && pages.hasNextPage && !pages.isFetchingNextPage) void pages.fetchNextPage();
  }, [seeking, found, pages]);
  const scrolled = useRef(false);
  useEffect(() => {
    if (!found || scrolled.current) return;
    scrolled.current = true;
    const card = window.document.getElementById(`chunk-${target}`);
    card?.scrollIntoView({ block: 'center' });
    card?.focus({ preventScroll: true });
  }, [found, target]);

  function search(event: FormEvent) {
    event.preventDefault();
    setQ(draft.trim());
  }

  return (
    <Stack>
      <form onSubmit={search} aria-label="Search in the document">
        <Group align="flex-end">
          <TextInput
            label="Search in the document"
            description="Chunks whose text contains these characters, ignoring case"
            value={draft}
            maxLength={200}
            onChange={(e) => setDraft(e.currentTarget.value)}
            style={{ flex: 1, minWidth: 200 }}
          />
          <Button type="submit" variant="default">
            Search
          </Button>
          {q && (
            <Button
              variant="default"
              onClick={() => {
                setDraft('');
                setQ('');
              }}
            >
              Show all chunks
            </Button>
          )}
        </Group>
      </form>
      <ErrorAlert error={pages.error} />
      {pages.data && (
        <Text size="sm" aria-live="polite">
          {q
            ? `${chunks.length} chunk${chunks.length === 1 ? '' : 's'} containing “${q}”${pages.hasNextPage ? ' so far' : ''}, of ${total} in the document`
            : `${total} chunk${total === 1 ? '' : 's'}`}
        </Text>
      )}
      {pages.data?.pages[0]?.status === 'uploaded' && (
        <Text size="sm">
          The document is being processed: these are the chunks retrieval finds until it is ready (none before its first
          processing ends).
        </Text>
      )}
      {target !== null && q === '' && pages.data && !found && !pages.hasNextPage && (
        <Text size="sm">
          The chunk of that retrieval result is no longer in this document (it was processed again).
        </Text>
      )}
      {chunks.map((chunk) => (
        <ChunkCard key={chunk.chunkId} chunk={chunk} q={q} current={chunk.chunkId === target} />
      ))}
      {pages.hasNextPage && (
        <Button variant="default" onClick={() => pages.fetchNextPage()} loading={pages.isFetchingNextPage}>
          Load more chunks
        </Button>
      )}
    </Stack>
  );
}

function ChunkCard({ chunk, q, current }: { chunk: Chunk; q: string; current: boolean }) {
  const { metadata } = chunk;
  const custom = CUSTOM_META.filter((key) => metadata[key] !== null && metadata[key] !== undefined);
  return (
    <Card
      withBorder
      id={`chunk-${chunk.chunkId}`}
      data-chunk-id={chunk.chunkId}
      aria-current={current ? 'true' : undefined}
      tabIndex={current ? -1 : undefined}
      style={current ? { borderColor: 'var(--mantine-color-blue-8)', borderWidth: 3 } : undefined}
      component="article"
      aria-labelledby={`chunk-title-${chunk.position}`}
    >
      <Group justify="space-between" wrap="nowrap">
        <Title order={2} size="h5" id={`chunk-title-${chunk.position}`}>
          Chunk {chunk.position + 1}
          {current ? ' (the retrieval result)' : ''}
        </Title>
        <Text size="xs" c="dimmed" style={{ overflowWrap: 'anywhere' }}>
          {chunk.chunkId}
        </Text>
      </Group>
      <Highlight size="sm" mt="xs" highlight={q} style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
        {chunk.text}
      </Highlight>
      <Group gap="xs" mt="xs">
        <Text size="xs">{chunk.text.length} characters</Text>
        <Text size="xs">· label1 {metadata.label1 ?? '—'}</Text>
        <Text size="xs">· label2 {metadata.label2 ?? '—'}</Text>
        {custom.map((key) => (
          <Text size="xs" key={key}>
            · {key} {metadata[key]}
          </Text>
        ))}
      </Group>
    </Card>
  );
}
