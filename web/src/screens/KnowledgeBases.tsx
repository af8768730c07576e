/** An agent's knowledge bases: list, create, rename, delete (the confirmation names what goes), open the playground. */
import { Anchor, Button, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link } from 'wouter';
import { type Answer, type Api, unwrap } from '../api';
import { Confirm, ErrorAlert, RenameForm, ScrollBox, useConfirmedAction } from '../components';

type KnowledgeBase = Answer<'/dashboard/agents/{agentId}/knowledge/bases', 'get'>['data'][number];

export default function KnowledgeBases({ api, agentId }: { api: Api; agentId: string }) {
  const queries = useQueryClient();
  const key = ['knowledge-bases', agentId];
  const agent = useQuery({
    queryKey: ['agent', agentId],
    queryFn: () => unwrap(api.GET('/dashboard/agents/{agentId}', { params: { path: { agentId } } })),
  });
  const bases = useQuery({
    queryKey: key,
    queryFn: () => unwrap(api.GET('/dashboard/agents/{agentId}/knowledge/bases', { params: { path: { agentId } } })),
  });
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [renaming, setRenaming] = useState<{ knowledgeBaseId: string; name: string } | null>(null);
  const refresh = () => queries.invalidateQueries({ queryKey: key });

  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/dashboard/agents/{agentId}/knowledge/bases', {
          params: { path: { agentId } },
          body: { name, ...(description ? { description } : {}) },
        }),
      ),
    onSuccess: () => {
      setName('');
      setDescription('');
      return refresh();
    },
  });
  const rename = useMutation({
    mutationFn: (base: { knowledgeBaseId: string; name: string }) =>
      unwrap(
        api.PATCH('/dashboard/agents/{agentId}/knowledge/bases/{knowledgeBaseId}', {
          params: { path: { agentId, knowledgeBaseId: base.knowledgeBaseId } },
          body: { name: base.name },
        }),
      ),
    onSuccess: () => {
      setRenaming(null);
      return refresh();
    },
  });
  const removal = useConfirmedAction(
    ({ knowledgeBaseId }: KnowledgeBase) =>
      unwrap(
        api.DELETE('/dashboard/agents/{agentId}/knowledge/bases/{knowledgeBaseId}', {
          params: { path: { agentId, knowledgeBaseId } },
        }),
      ),
    refresh,
  );

  function submit(event: FormEvent) {
    event.preventDefault();
    create.mutate();
  }

  return (
    <Stack>
      <Title order={1}>Knowledge of {agent.data?.displayName ?? 'the agent'}</Title>
      <Group>
        <Anchor component={Link} href="/agents">
          All agents
        </Anchor>
        <Anchor component={Link} href={`/agents/${agentId}/retrieval`}>
          Default retrieval
        </Anchor>
      </Group>
      <form onSubmit={submit} aria-label="Create a knowledge base">
        <Group align="flex-end">
          <TextInput label="Knowledge base name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
          <TextInput label="Description" value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
          <Button type="submit" loading={create.isPending}>
            Create knowledge base
          </Button>
        </Group>
      </form>
      <ErrorAlert error={create.error ?? bases.error ?? agent.error ?? rename.error} />
      {bases.data && bases.data.count === 0 && <Text>No knowledge bases yet.</Text>}
      {bases.data && bases.data.count > 0 && (
        <ScrollBox label="Knowledge bases (scrolls sideways)">
          <Table striped aria-label="Knowledge bases">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Description</Table.Th>
                <Table.Th>Knowledge base id</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {bases.data.data.map((base) => (
                <Table.Tr key={base.knowledgeBaseId}>
                  <Table.Td>
                    {renaming?.knowledgeBaseId === base.knowledgeBaseId ? (
                      <RenameForm
                        current={base.name}
                        value={renaming.name}
                        busy={rename.isPending}
                        onChange={(name) => setRenaming({ ...renaming, name })}
                        onSubmit={() => rename.mutate(renaming)}
                      />
                    ) : (
                      base.name
                    )}
                  </Table.Td>
                  <Table.Td>{base.description ?? ''}</Table.Td>
                  <Table.Td>
                    <Text size="xs" ff="monospace">
                      {base.knowledgeBaseId}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Group gap="xs">
                      <Button
                        size="xs"
                        variant="light"
                        component={Link}
                        href={`/agents/${agentId}/knowledge/${base.knowledgeBaseId}`}
                        aria-label={`Documents of ${base.name}`}
                      >
                        Documents
                      </Button>
                      <Button
                        size="xs"
                        variant="light"
                        component={Link}
                        href={`/agents/${agentId}/knowledge/${base.knowledgeBaseId}/playground`}
                      >
                        Playground
                      </Button>
                      <Button
                        size="xs"
                        variant="default"
                        onClick={() => setRenaming({ knowledgeBaseId: base.knowledgeBaseId, name: base.name })}
                      >
                        Rename
                      </Button>
                      <Button size="xs" color="red" variant="light" onClick={() => removal.ask(base)}>
                        Delete
                      </Button>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollBox>
      )}
      <Confirm action={removal} title={`Delete ${removal.target?.name ?? ''}?`} confirmLabel="Delete knowledge base">
        <Text size="sm">
          This deletes the knowledge base {removal.target?.name} with its documents, their files and chunks and its ZIP
          imports in all three environments (development, staging, production), and removes it from the agent&apos;s
          default retrieval settings.
        </Text>
      </Confirm>
    </Stack>
  );
}
