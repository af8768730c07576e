/**
 * The versions of an agent's definition in one environment (newest first: who saved it and when), a diff of any two,
 * and a restore: the chosen version stored again as the next one (`POST …/versions/:version/restore`), never a
 * rewrite of history. The diff is of the two definitions as pretty JSON, line by line (jsdiff), computed here: the
 * API serves each version whole.
 */
import { Badge, Button, Checkbox, Group, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { useQueries, useQuery } from '@tanstack/react-query';
import { diffLines } from 'diff';
import { useState } from 'react';
import { type Answer, type Api, unwrap } from '../api';
import { Confirm, ErrorAlert, ScrollBox, useConfirmedAction } from '../components';
import type { AgentDefinition } from '../flows';
import type { Environment } from '../knowledge';

/** Who saved a version: a person (their e-mail) or a token (its id), or null when no one was recorded. */
type SavedBy = Answer<
  '/dashboard/agents/{agentId}/definition/{environment}/versions',
  'get'
>['data'][number]['updatedBy'];

/** What a restore answers: the definition as stored now, under its new version. */
export type StoredVersion = Answer<
  '/dashboard/agents/{agentId}/definition/{environment}/versions/{version}/restore',
  'post'
>;

function who(by: SavedBy): string {
  if (!by) return 'unknown (saved before versions kept it)';
  return by.kind === 'person' ? by.email : `token ${by.tokenId}`;
}

const pretty = (definition: AgentDefinition) => `${JSON.stringify(definition, null, 2)}\n`;

export function FlowVersions({
  api,
  agentId,
  environment,
  current,
  unsaved,
  onRestored,
}: {
  api: Api;
  agentId: string;
  environment: Environment;
  /** The version stored now (the list is read again when it changes). */
  current: number;
  /** The editor holds changes not saved: a restore replaces them, and says so first. */
  unsaved: boolean;
  onRestored: (record: StoredVersion) => void;
}) {
  const path = { agentId, environment };
  const versions = useQuery({
    queryKey: ['definition-versions', agentId, environment, current],
    queryFn: () =>
      unwrap(
        api.GET('/dashboard/agents/{agentId}/definition/{environment}/versions', {
          params: { path, query: { limit: '50' } },
        }),
      ),
  });
  const [compared, setCompared] = useState<number[]>([]);
  const toggle = (version: number) =>
    setCompared((chosen) =>
      chosen.includes(version) ? chosen.filter((v) => v !== version) : [...chosen, version].slice(-2),
    );
  const restore = useConfirmedAction(
    async (version: number) => {
      const record = await unwrap(
        api.POST('/dashboard/agents/{agentId}/definition/{environment}/versions/{version}/restore', {
          params: { path: { ...path, version: String(version) } },
          body: { expectedVersion: current },
        }),
      );
      onRestored(record);
    },
    () => undefined,
  );
  return (
    <Paper withBorder p="sm" component="section" aria-label="Versions">
      <Stack gap="xs">
        <Title order={2} size="h4">
          Versions
        </Title>
        <ErrorAlert error={versions.error} />
        <Text size="sm">
          Choose two to compare them. Restoring stores the chosen version again as version {current + 1}; nothing is
          lost.
        </Text>
        <ScrollBox label="Versions (scrolls sideways)">
          <Table aria-label="Versions of the definition" striped miw={560}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th w={60}>Compare</Table.Th>
                <Table.Th>Version</Table.Th>
                <Table.Th>Saved</Table.Th>
                <Table.Th>By</Table.Th>
                <Table.Th>Nodes</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {versions.data?.data.map((entry) => (
                <Table.Tr key={entry.version} data-version={entry.version}>
                  <Table.Td>
                    <Checkbox
                      aria-label={`Compare version ${entry.version}`}
                      checked={compared.includes(entry.version)}
                      onChange={() => toggle(entry.version)}
                    />
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} wrap="nowrap">
                      <Text size="sm">{entry.version}</Text>
                      {entry.current && (
                        <Badge size="sm" variant="light">
                          current
                        </Badge>
                      )}
                    </Group>
                    {entry.restoredFrom !== null && (
                      <Text size="xs" c="dimmed">
                        restored from {entry.restoredFrom}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="xs">{new Date(entry.updatedAt).toLocaleString()}</Text>
                  </Table.Td>
                  <Table.Td>
                    <Text size="xs" style={{ overflowWrap: 'anywhere' }}>
                      {who(entry.updatedBy)}
                    </Text>
                  </Table.Td>
                  <Table.Td>{entry.nodeCount}</Table.Td>
                  <Table.Td>
                    {!entry.current && (
                      <Button
                        size="xs"
                        variant="default"
                        onClick={() => restore.ask(entry.version)}
                        aria-label={`Restore version ${entry.version}`}
                      >
                        Restore
                      </Button>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollBox>
        {compared.length === 2 && (
          <VersionDiff api={api} agentId={agentId} environment={environment} versions={compared} />
        )}
      </Stack>
      <Confirm
        action={restore}
        title={`Restore version ${restore.target ?? ''}?`}
        confirmLabel={`Store it as version ${current + 1}`}
      >
        <Text size="sm">
          Version {restore.target} becomes the current definition of {environment} as version {current + 1}; version{' '}
          {current} stays in the list.
          {unsaved ? ' The changes in the editor that are not saved are replaced.' : ''}
        </Text>
      </Confirm>
    </Paper>
  );
}

/** The two versions, older first, as a line diff of their pretty JSON: removed lines red, added green. */
function VersionDiff({
  api,
  agentId,
  environment,
  versions,
}: {
  api: Api;
  agentId: string;
  environment: Environment;
  versions: number[];
}) {
  const [older, newer] = [...versions].sort((a, b) => a - b);
  const records = useQueries({
    queries: [older, newer].map((version) => ({
      queryKey: ['definition-version', agentId, environment, version],
      queryFn: () =>
        unwrap(
          api.GET('/dashboard/agents/{agentId}/definition/{environment}/versions/{version}', {
            params: { path: { agentId, environment, version: String(version) } },
          }),
        ),
      staleTime: Number.POSITIVE_INFINITY,
    })),
  });
  const error = records.find((record) => record.error)?.error;
  const [from, to] = records.map((record) => record.data);
  if (error) return <ErrorAlert error={error} />;
  if (!from || !to)
    return (
      <Text size="sm">
        Loading versions {older} and {newer}…
      </Text>
    );
  const parts = diffLines(pretty(from.definition), pretty(to.definition));
  const count = (kind: 'added' | 'removed') =>
    parts.filter((part) => part[kind]).reduce((sum, part) => sum + (part.count ?? 0), 0);
  return (
    <Stack gap={4} role="region" aria-label={`Changes from version ${older} to ${newer}`}>
      <Text size="sm" fw={600}>
        From version {older} to {newer}: {count('added')} lines added, {count('removed')} removed
        {count('added') + count('removed') === 0 ? ' (the same definition)' : ''}
      </Text>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: the diff scrolls, and a region that scrolls must take focus */}
      <pre className="version-diff" tabIndex={0}>
        {parts.map((part, index) => {
          const mark = part.added ? '+' : part.removed ? '-' : ' ';
          const lines = unchangedContext(part.value.replace(/\n$/, '').split('\n'), part, index, parts.length);
          return (
            <span
              // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one diff, never reordered
              key={index}
              className={part.added ? 'diff-added' : part.removed ? 'diff-removed' : undefined}
            >
              {lines.map((line) => (line === null ? '  …\n' : `${mark} ${line}\n`)).join('')}
            </span>
          );
        })}
      </pre>
    </Stack>
  );
}

/** Lines of context kept around a change; longer unchanged stretches are cut to a `…`. */
const CONTEXT_LINES = 3;

/**
 * The lines of one part of the diff as shown: a change whole; an unchanged stretch cut to CONTEXT_LINES after the
 * change before it and before the change after it (null: the lines left out).
 */
function unchangedContext(
  lines: string[],
  part: { added?: boolean; removed?: boolean },
  index: number,
  count: number,
): (string | null)[] {
  if (part.added || part.removed) return lines;
  const head = index > 0 ? CONTEXT_LINES : 0;
  const tail = index < count - 1 ? CONTEXT_LINES : 0;
  if (lines.length <= head + tail + 1) return lines;
  return [...lines.slice(0, head), null, ...(tail > 0 ? lines.slice(-tail) : [])];
}
