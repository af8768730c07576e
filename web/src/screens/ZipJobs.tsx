/** A dataset's ZIP imports, newest first, and one import's view: every file with its status, labels and error. */
import { Badge, Button, Group, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { type Answer, type Api, unwrap } from '../api';
import { ErrorAlert, ScrollBox, TruncatedName } from '../components';
import { type Dataset, pollDelay, STATUS_COLOR } from '../knowledge';

/** A ZIP import as the list answers it: its status, file count and how many of its files failed. */
type JobSummary = Answer<
  '/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/zip-jobs',
  'get'
>['data'][number];
type JobStatus = JobSummary['status'];

const finished = (status: string | undefined) => status === 'completed' || status === 'failed';

/**
 * The job's status with what it hides: a `completed` import some of whose files failed is not a green success. Its
 * badge is orange (red when no file made it), followed by a counted badge "2 of 3 failed".
 */
function JobStatusBadges({
  status,
  failedCount,
  fileCount,
}: {
  status: JobStatus;
  failedCount: number;
  fileCount: number | null;
}) {
  const allFailed = fileCount !== null && fileCount > 0 && failedCount >= fileCount;
  const color = failedCount === 0 ? STATUS_COLOR[status] : allFailed || status === 'failed' ? 'red.9' : 'orange.9';
  return (
    <Group gap={4} wrap="nowrap">
      <Badge color={color} variant="outline">
        {status}
      </Badge>
      {failedCount > 0 && (
        <Badge color={allFailed ? 'red.9' : 'orange.9'} variant="light">
          {fileCount === null ? `${failedCount} failed` : `${failedCount} of ${fileCount} failed`}
        </Badge>
      )}
    </Group>
  );
}

export function ZipJobs({
  api,
  dataset,
  open,
  onOpen,
  onProgress,
}: {
  api: Api;
  dataset: Dataset;
  open: string | null;
  onOpen: (zipJobId: string | null) => void;
  /** Called whenever an import's answer changes: its files become documents while it runs. */
  onProgress: () => void;
}) {
  const polls = useRef(0);
  const jobs = useQuery({
    queryKey: ['zip-jobs', dataset],
    queryFn: () =>
      unwrap(
        api.GET('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/zip-jobs', {
          params: { path: dataset },
        }),
      ),
    refetchInterval: (query) =>
      query.state.data?.data.some((job) => !finished(job.status)) || (open && !query.state.data?.data.length)
        ? pollDelay(polls.current++)
        : false,
  });
  if (!jobs.data?.count && !open) return <ErrorAlert error={jobs.error} />;
  return (
    <Paper withBorder p="sm">
      <Title order={2} size="h4">
        ZIP imports
      </Title>
      <ErrorAlert error={jobs.error} />
      <ScrollBox label="ZIP imports (scrolls sideways)">
        <Table aria-label="ZIP imports">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Started</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Files</Table.Th>
              <Table.Th>Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {jobs.data?.data.map((job) => (
              <Table.Tr key={job.zipJobId}>
                <Table.Td>{new Date(job.createdAt).toLocaleString()}</Table.Td>
                <Table.Td>
                  <JobStatusBadges status={job.status} failedCount={job.failedCount} fileCount={job.fileCount} />
                  {job.error && (
                    <Text size="xs" c="red.9">
                      {job.error.code}: {job.error.message}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>{job.fileCount ?? '…'}</Table.Td>
                <Table.Td>
                  <Button
                    size="xs"
                    variant="default"
                    onClick={() => onOpen(open === job.zipJobId ? null : job.zipJobId)}
                    aria-label={`${open === job.zipJobId ? 'Close' : 'Open'} the import of ${new Date(job.createdAt).toLocaleString()}`}
                  >
                    {open === job.zipJobId ? 'Close' : 'Open'}
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollBox>
      {open && <ZipJobView api={api} zipJobId={open} onProgress={onProgress} />}
    </Paper>
  );
}

function ZipJobView({ api, zipJobId, onProgress }: { api: Api; zipJobId: string; onProgress: () => void }) {
  const polls = useRef(0);
  const job = useQuery({
    queryKey: ['zip-job', zipJobId],
    queryFn: () => unwrap(api.GET('/dashboard/knowledge/zip-jobs/{zipJobId}', { params: { path: { zipJobId } } })),
    refetchInterval: (query) => (finished(query.state.data?.status) ? false : pollDelay(polls.current++)),
  });
  const seen = JSON.stringify(job.data?.files.map((file) => file.status) ?? []);
  const progress = useRef(onProgress);
  progress.current = onProgress;
  useEffect(() => {
    if (seen !== '[]') progress.current();
  }, [seen]);
  return (
    <Stack mt="sm" aria-label="ZIP import" role="region">
      <Group>
        <Title order={3} size="h5">
          Import {zipJobId}
        </Title>
        {job.data && (
          <JobStatusBadges
            status={job.data.status}
            failedCount={job.data.failedCount}
            fileCount={job.data.files.length}
          />
        )}
      </Group>
      <ErrorAlert error={job.error} />
      {job.data?.error && (
        <Text size="sm" c="red.9">
          {job.data.error.code}: {job.data.error.message}
        </Text>
      )}
      {job.data && job.data.warnings.length > 0 && (
        <Text size="sm">Warnings: {job.data.warnings.map((warning) => JSON.stringify(warning)).join('; ')}</Text>
      )}
      {job.data && job.data.files.length > 0 && (
        <ScrollBox label="Files of the import (scrolls sideways)">
          <Table aria-label="Files of the import" layout="fixed" miw={560}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>File</Table.Th>
                <Table.Th w={110}>Status</Table.Th>
                <Table.Th w="30%">Labels</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {job.data.files.map((file) => (
                <Table.Tr key={file.fileName} data-file={file.fileName}>
                  <Table.Td maw={0}>
                    <TruncatedName name={file.fileName} />
                    {file.error && (
                      <Text size="xs" c="red.9">
                        {file.error.code}: {file.error.message}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{file.status}</Table.Td>
                  <Table.Td>{[file.label1, file.label2].filter(Boolean).join(', ') || '—'}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollBox>
      )}
    </Stack>
  );
}
