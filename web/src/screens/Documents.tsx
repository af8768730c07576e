/**
 * A knowledge base's documents, per environment: counts per status, filters, pages through `nextToken`, live status
 * (polling with backoff only while something is `uploaded`), each failure's code and message, retry, metadata edited
 * in place (checked by the API's own rules before it is sent), delete; uploads by drag and drop; the ZIP imports.
 * The table is virtualized: only the rows in view are in the page, so 10,000 loaded documents scroll as 50 do.
 */
import { Anchor, Badge, Button, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { type FormEvent, useRef, useState } from 'react';
import { Link } from 'wouter';
import { type Api, unwrap } from '../api';
import { Confirm, EnvironmentTabs, ErrorAlert, TruncatedName, useConfirmedAction } from '../components';
import {
  chunkViewHref,
  type Dataset,
  type DocumentStatus,
  type Environment,
  type KnowledgeDocument,
  METADATA_FIELDS,
  type MetadataField,
  metadataChanges,
  metadataProblem,
  pollDelay,
  STATUS_COLOR,
} from '../knowledge';
import { LABEL_FORMAT, Uploads } from './Uploads';
import { ZipJobs } from './ZipJobs';

/** Pages of 100 loaded beyond which the table is refreshed by hand rather than polled (a poll refetches each). */
const POLLED_PAGES = 3;

interface Filters {
  readonly status?: DocumentStatus;
  readonly label1?: string;
  readonly label2?: string;
  readonly fileNamePrefix?: string;
}

export default function Documents({
  api,
  agentId,
  knowledgeBaseId,
}: {
  api: Api;
  agentId: string;
  knowledgeBaseId: string;
}) {
  const [environment, setEnvironment] = useState<Environment>('development');
  const base = useQuery({
    queryKey: ['knowledge-base', agentId, knowledgeBaseId],
    queryFn: () =>
      unwrap(
        api.GET('/dashboard/agents/{agentId}/knowledge/bases/{knowledgeBaseId}', {
          params: { path: { agentId, knowledgeBaseId } },
        }),
      ),
  });
  const dataset: Dataset = { agentId, environment, knowledgeBaseId };
  return (
    <Stack>
      <Title order={1}>Documents of {base.data?.name ?? 'the knowledge base'}</Title>
      <Group>
        <Anchor component={Link} href={`/agents/${agentId}/knowledge`}>
          All knowledge bases
        </Anchor>
        <Anchor component={Link} href={`/agents/${agentId}/knowledge/${knowledgeBaseId}/playground`}>
          Retrieval playground
        </Anchor>
      </Group>
      <ErrorAlert error={base.error} />
      <EnvironmentTabs value={environment} onChange={setEnvironment} />
      {/* One dataset at a time; its key resets the table's state when the environment changes. */}
      <DatasetView key={environment} api={api} dataset={dataset} />
    </Stack>
  );
}

function DatasetView({ api, dataset }: { api: Api; dataset: Dataset }) {
  const queries = useQueryClient();
  const [draft, setDraft] = useState<Filters>({});
  const [filters, setFilters] = useState<Filters>({});
  const [openJob, setOpenJob] = useState<string | null>(null);
  const unchanged = useRef({ polls: 0, last: '' });
  const key = ['documents', dataset, filters];
  const pages = useInfiniteQuery({
    queryKey: key,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/documents', {
          params: {
            path: dataset,
            query: { ...filters, limit: '100', ...(pageParam ? { nextToken: pageParam } : {}) },
          },
        }),
      ),
    getNextPageParam: (last) => last.nextToken ?? undefined,
    // Poll only while something is being processed, with backoff while nothing changes (pollDelay). A poll refetches
    // every loaded page, so past POLLED_PAGES pages the table stops polling and offers Refresh instead.
    refetchInterval: (query) => {
      const first = query.state.data?.pages[0];
      if (!first || first.counts.uploaded === 0 || (query.state.data?.pages.length ?? 0) > POLLED_PAGES) {
        unchanged.current = { polls: 0, last: '' };
        return false;
      }
      const seen = JSON.stringify(first.counts);
      unchanged.current =
        seen === unchanged.current.last ? { polls: unchanged.current.polls + 1, last: seen } : { polls: 0, last: seen };
      return pollDelay(unchanged.current.polls);
    },
  });
  const refresh = () => queries.invalidateQueries({ queryKey: ['documents', dataset] });
  const documents = pages.data?.pages.flatMap((page) => page.documents) ?? [];
  const counts = pages.data?.pages[0]?.counts;

  function applyFilters(event: FormEvent) {
    event.preventDefault();
    const clean = Object.fromEntries(Object.entries(draft).filter(([, value]) => value)) as Filters;
    setFilters(clean);
  }

  return (
    <Stack>
      <Uploads
        api={api}
        dataset={dataset}
        onUploaded={refresh}
        onZipJob={(zipJobId) => {
          setOpenJob(zipJobId);
          // The new import joins the list at once, not at the next reload.
          void queries.invalidateQueries({ queryKey: ['zip-jobs', dataset] });
        }}
      />
      <ZipJobs api={api} dataset={dataset} open={openJob} onOpen={setOpenJob} onProgress={refresh} />
      <Group aria-label="Counts" role="group">
        <Text fw={600}>Documents:</Text>
        {(['uploaded', 'ready', 'failed'] as const).map((status) => (
          <Badge key={status} color={STATUS_COLOR[status]} variant="outline" size="lg">
            {status} {counts?.[status] ?? '…'}
          </Badge>
        ))}
        <Badge color="gray" variant="light" size="lg">
          total {counts?.total ?? '…'}
        </Badge>
      </Group>
      <form onSubmit={applyFilters} aria-label="Filter documents">
        <Group align="flex-end">
          <Select
            label="Status"
            placeholder="any"
            clearable
            data={['uploaded', 'ready', 'failed']}
            value={draft.status ?? null}
            onChange={(value) => setDraft({ ...draft, status: (value as DocumentStatus | null) ?? undefined })}
          />
          <TextInput
            label="label1"
            value={draft.label1 ?? ''}
            onChange={(e) => setDraft({ ...draft, label1: e.currentTarget.value })}
          />
          <TextInput
            label="label2"
            value={draft.label2 ?? ''}
            onChange={(e) => setDraft({ ...draft, label2: e.currentTarget.value })}
          />
          <TextInput
            label="File name starts with"
            value={draft.fileNamePrefix ?? ''}
            onChange={(e) => setDraft({ ...draft, fileNamePrefix: e.currentTarget.value })}
          />
          <Button type="submit" variant="default">
            Filter
          </Button>
          <Button variant="default" onClick={refresh} loading={pages.isRefetching}>
            Refresh
          </Button>
        </Group>
      </form>
      <ErrorAlert error={pages.error} />
      {pages.data && documents.length === 0 && <Text>No documents match.</Text>}
      {documents.length > 0 && <DocumentTable api={api} dataset={dataset} documents={documents} onChanged={refresh} />}
      {pages.hasNextPage && (
        <Button variant="default" onClick={() => pages.fetchNextPage()} loading={pages.isFetchingNextPage}>
          Load more documents
        </Button>
      )}
    </Stack>
  );
}

const ROW_HEIGHT = 49;

/** The documents loaded so far, virtualized: the rows in view (and a few around them) are rendered, the rest are space. */
export function DocumentTable({
  api,
  dataset,
  documents,
  onChanged,
}: {
  api: Api;
  dataset: Dataset;
  documents: readonly KnowledgeDocument[];
  onChanged: () => void;
}) {
  const scroller = useRef<HTMLDivElement>(null);
  const [editing, setEditing] = useState<string | null>(null);
  /** Closes the inline editor and gives the focus back to the Edit button that opened it. */
  const closeEditor = () => {
    const opener = editing;
    setEditing(null);
    requestAnimationFrame(() => {
      const button = [...window.document.querySelectorAll<HTMLElement>('[data-edit-for]')].find(
        (element) => element.dataset.editFor === opener,
      );
      button?.focus();
    });
  };
  const virtual = useVirtualizer({
    count: documents.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 8,
    getItemKey: (index) => documents[index].s3Key,
  });
  const retry = useMutation({
    mutationFn: (document: KnowledgeDocument) =>
      unwrap(
        api.POST('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/document/retry', {
          params: { path: dataset },
          body: { s3Key: document.s3Key },
        }),
      ),
    onSuccess: onChanged,
  });
  const removal = useConfirmedAction(
    (document: KnowledgeDocument) =>
      unwrap(
        api.DELETE('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/document', {
          params: { path: dataset, query: { s3Key: document.s3Key } },
        }),
      ),
    onChanged,
  );
  const items = virtual.getVirtualItems();
  const before = items[0]?.start ?? 0;
  const after = virtual.getTotalSize() - (items.at(-1)?.end ?? 0);
  return (
    <>
      <ErrorAlert error={retry.error} />
      <div ref={scroller} style={{ maxHeight: 560, overflow: 'auto' }} data-testid="documents-scroller">
        {/* Fixed layout: the name takes what the other columns leave and is cut, never the status or the actions;
            below 810 px the table scrolls in its own box. */}
        <Table
          striped
          stickyHeader
          layout="fixed"
          miw={810}
          aria-label="Documents"
          aria-rowcount={documents.length + 1}
        >
          <Table.Thead>
            <Table.Tr>
              <Table.Th>File</Table.Th>
              <Table.Th w={110}>Status</Table.Th>
              <Table.Th w="22%">Labels</Table.Th>
              <Table.Th w={170}>Updated</Table.Th>
              <Table.Th w={270}>Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {before > 0 && (
              <tr>
                <td colSpan={5} style={{ height: before, padding: 0 }} />
              </tr>
            )}
            {items.map((item) => {
              const document = documents[item.index];
              return (
                <Table.Tr
                  key={item.key}
                  data-index={item.index}
                  ref={virtual.measureElement}
                  aria-rowindex={item.index + 2}
                  data-document={document.fileName}
                >
                  <Table.Td>
                    <TruncatedName name={document.fileName} />
                    {document.error && (
                      <Text size="xs" c="red.9">
                        {document.error.code}: {document.error.message}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Badge color={STATUS_COLOR[document.status]} variant="outline">
                      {document.status}
                    </Badge>
                  </Table.Td>
                  <Table.Td>
                    {editing === document.s3Key ? (
                      <MetadataForm
                        api={api}
                        dataset={dataset}
                        document={document}
                        onDone={() => {
                          closeEditor();
                          onChanged();
                        }}
                        onCancel={closeEditor}
                      />
                    ) : (
                      <Text size="sm">{[document.label1, document.label2].filter(Boolean).join(', ') || '—'}</Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="xs">{new Date(document.updatedAt).toLocaleString()}</Text>
                  </Table.Td>
                  <Table.Td>
                    <Group gap="xs" wrap="nowrap">
                      {/* A file its ZIP import refused has nothing stored to process again (DOCUMENT_NOT_RETRYABLE). */}
                      {document.status === 'failed' && document.fileSize !== 0 && (
                        <Button
                          size="xs"
                          variant="light"
                          loading={retry.isPending && retry.variables?.s3Key === document.s3Key}
                          onClick={() => retry.mutate(document)}
                          aria-label={`Retry ${document.fileName}`}
                        >
                          Retry
                        </Button>
                      )}
                      {document.status === 'ready' && (
                        <Button
                          size="xs"
                          variant="default"
                          component={Link}
                          href={chunkViewHref(dataset, document.s3Key)}
                          aria-label={`Chunks of ${document.fileName}`}
                        >
                          Chunks
                        </Button>
                      )}
                      <Button
                        size="xs"
                        variant="default"
                        onClick={() => setEditing(document.s3Key)}
                        aria-label={`Edit metadata of ${document.fileName}`}
                        data-edit-for={document.s3Key}
                      >
                        Edit
                      </Button>
                      <Button
                        size="xs"
                        color="red"
                        variant="light"
                        onClick={() => removal.ask(document)}
                        aria-label={`Delete ${document.fileName}`}
                      >
                        Delete
                      </Button>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              );
            })}
            {after > 0 && (
              <tr>
                <td colSpan={5} style={{ height: after, padding: 0 }} />
              </tr>
            )}
          </Table.Tbody>
        </Table>
      </div>
      <Confirm action={removal} title={`Delete ${removal.target?.fileName ?? ''}?`} confirmLabel="Delete document">
        <Text size="sm">
          This deletes {removal.target?.fileName} from {dataset.environment}: its stored file, its chunks in the index
          and its metadata. Retrieval stops finding it.
        </Text>
      </Confirm>
    </>
  );
}

function MetadataForm({
  api,
  dataset,
  document,
  onDone,
  onCancel,
}: {
  api: Api;
  dataset: Dataset;
  document: KnowledgeDocument;
  onDone: () => void;
  onCancel: () => void;
}) {
  const [values, setValues] = useState(
    Object.fromEntries(METADATA_FIELDS.map((field) => [field, document[field] ?? ''])) as Record<MetadataField, string>,
  );
  const problems = METADATA_FIELDS.map((field) => [field, metadataProblem(field, values[field])] as const);
  const save = useMutation({
    mutationFn: () =>
      unwrap(
        api.PATCH('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/document/metadata', {
          params: { path: dataset },
          body: { s3Key: document.s3Key, ...metadataChanges(document, values) },
        }),
      ),
    onSuccess: onDone,
  });
  const invalid = problems.some(([, problem]) => problem !== null);
  return (
    <form
      aria-label={`Metadata of ${document.fileName}`}
      // Escape closes the editor as Cancel does (focus goes back to the row's Edit button).
      onKeyDown={(event) => {
        if (event.key === 'Escape') {
          event.preventDefault();
          onCancel();
        }
      }}
      onSubmit={(event) => {
        event.preventDefault();
        if (!invalid) save.mutate();
      }}
    >
      <Stack gap={4}>
        {problems.map(([field, problem], index) => (
          <TextInput
            key={field}
            size="xs"
            label={field}
            // The editor sits before the row's buttons: focus moves into it when it opens.
            autoFocus={index === 0}
            value={values[field]}
            onChange={(e) => setValues({ ...values, [field]: e.currentTarget.value })}
            description={field.startsWith('label') ? LABEL_FORMAT : undefined}
            error={problem ? `It ${problem.message}.` : undefined}
          />
        ))}
        <ErrorAlert error={save.error} />
        <Group gap="xs">
          <Button type="submit" size="xs" disabled={invalid} loading={save.isPending}>
            Save metadata
          </Button>
          <Button size="xs" variant="default" onClick={onCancel}>
            Cancel
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
