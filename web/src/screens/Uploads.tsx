/**
 * Drop files and ZIPs: each goes through upload-link → PUT → upload-complete with a progress bar, then shows its
 * processing status (a document) or opens its import's view (a ZIP). Labels typed above the drop zone go with every
 * file dropped (a ZIP's apply to the files its CSV gives none).
 */
import { Badge, Button, Group, Paper, Progress, Stack, Text, TextInput } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { useDropzone } from 'react-dropzone';
import { type Api, unwrap } from '../api';
import { ErrorAlert } from '../components';
import { type Dataset, type Metadata, metadataProblem, pollDelay, STATUS_COLOR } from '../knowledge';
import { type UploadResult, type UploadStep, uploadFile } from '../upload';

interface Upload {
  readonly id: number;
  readonly file: File;
  step: UploadStep | 'done';
  fraction: number;
  result?: UploadResult;
  error?: unknown;
}

const STEP_LABEL: Record<UploadStep | 'done', string> = {
  link: 'asking for an upload link',
  put: 'sending',
  complete: 'completing',
  done: 'sent',
};

/** The label format, said where labels are typed (the service's rules: core/knowledge/labels.ts). */
export const LABEL_FORMAT =
  'namespace:value in lower case: letters, digits, - and _, at most 50 characters, no date, timestamp or id.';

export function Uploads({
  api,
  dataset,
  onUploaded,
  onZipJob,
}: {
  api: Api;
  dataset: Dataset;
  onUploaded: () => void;
  onZipJob: (zipJobId: string) => void;
}) {
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [labels, setLabels] = useState({ label1: '', label2: '' });
  const next = useRef(0);
  const labelProblem = metadataProblem('label1', labels.label1) ?? metadataProblem('label2', labels.label2);

  const update = (id: number, change: Partial<Upload>) =>
    setUploads((all) => all.map((upload) => (upload.id === id ? { ...upload, ...change } : upload)));

  function drop(files: File[]) {
    const given: Partial<Metadata> = {
      ...(labels.label1 ? { label1: labels.label1 } : {}),
      ...(labels.label2 ? { label2: labels.label2 } : {}),
    };
    const added = files.map((file) => ({ id: next.current++, file, step: 'link' as const, fraction: 0 }));
    setUploads((all) => [...added, ...all]);
    // Up to three at a time: a drop of a hundred files does not open a hundred connections.
    const queue = [...added];
    const worker = async () => {
      for (let upload = queue.shift(); upload; upload = queue.shift()) {
        const { id, file } = upload;
        try {
          const result = await uploadFile(api, dataset, file, given, (step, fraction) =>
            update(id, { step, fraction }),
          );
          update(id, { step: 'done', fraction: 1, result });
          if (result.zipJobId) onZipJob(result.zipJobId);
          onUploaded();
        } catch (error) {
          update(id, { error });
        }
      }
    };
    void Promise.all([worker(), worker(), worker()]);
  }
  // The zone takes drops; the button opens the file chooser (a zone that is itself a button would nest the input).
  const zone = useDropzone({
    onDrop: drop,
    multiple: true,
    noClick: true,
    noKeyboard: true,
    disabled: labelProblem !== null,
  });

  return (
    <Stack gap="xs">
      <Group align="flex-end">
        {(['label1', 'label2'] as const).map((field) => {
          const problem = metadataProblem(field, labels[field]);
          return (
            <TextInput
              key={field}
              label={`${field} for the files dropped`}
              description={LABEL_FORMAT}
              placeholder="topic:billing"
              value={labels[field]}
              onChange={(e) => setLabels({ ...labels, [field]: e.currentTarget.value })}
              error={problem ? `It ${problem.message}.` : undefined}
            />
          );
        })}
      </Group>
      <Paper
        withBorder
        p="lg"
        {...zone.getRootProps()}
        style={{ borderStyle: 'dashed', background: zone.isDragActive ? 'var(--mantine-color-blue-0)' : undefined }}
      >
        <input {...zone.getInputProps()} data-testid="upload-input" />
        <Group justify="center">
          <Text>Drop files or ZIPs here, or</Text>
          <Button variant="default" onClick={zone.open} disabled={labelProblem !== null}>
            Choose files
          </Button>
        </Group>
      </Paper>
      {uploads.length > 0 && (
        <Stack gap={4} aria-label="Uploads" role="list">
          {uploads.map((upload) => (
            <UploadRow key={upload.id} api={api} dataset={dataset} upload={upload} />
          ))}
        </Stack>
      )}
    </Stack>
  );
}

function UploadRow({ api, dataset, upload }: { api: Api; dataset: Dataset; upload: Upload }) {
  const s3Key = upload.result?.documentId ? upload.result.s3Key : undefined;
  const polls = useRef(0);
  // A document's processing status, polled with backoff until it is ready or failed.
  const document = useQuery({
    queryKey: ['upload-status', s3Key],
    enabled: s3Key !== undefined,
    queryFn: () =>
      unwrap(
        api.GET('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/document', {
          params: { path: dataset, query: { s3Key: s3Key as string } },
        }),
      ),
    refetchInterval: (query) => (query.state.data?.status === 'uploaded' ? pollDelay(polls.current++) : false),
  });
  const status = document.data?.status;
  return (
    <Paper withBorder p="xs" role="listitem" aria-label={upload.file.name}>
      <Group justify="space-between">
        <Text size="sm" fw={600}>
          {upload.file.name}
        </Text>
        <Group gap="xs">
          {upload.result?.zipJobId && <Badge variant="light">ZIP import</Badge>}
          <Text size="xs">{upload.error ? 'not uploaded' : STEP_LABEL[upload.step]}</Text>
          {status && (
            <Badge color={STATUS_COLOR[status]} variant="outline">
              {status}
            </Badge>
          )}
        </Group>
      </Group>
      <Progress
        value={Math.round((upload.step === 'done' ? 1 : upload.fraction) * 100)}
        aria-label={`Upload of ${upload.file.name}`}
        size="sm"
        mt={4}
      />
      {document.data?.error && (
        <Text size="xs" c="red.9">
          {document.data.error.code}: {document.data.error.message}
        </Text>
      )}
      <ErrorAlert error={upload.error ?? document.error} />
    </Paper>
  );
}
