/**
 * The organization's agents: list, create, rename, delete (the confirmation names what goes with it); owners rotate
 * an agent's callback secret, shown once with a copy button as a new token is (docs/flows.md, "Signed callbacks").
 */
import { Button, Code, CopyButton, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link } from 'wouter';
import { type Answer, type Api, unwrap } from '../api';
import { Confirm, ErrorAlert, RenameForm, ScrollBox, useConfirmedAction } from '../components';

type Agent = Answer<'/dashboard/agents', 'get'>['data'][number];

/** A callback secret just made (by a creation or a rotation): shown once, never listed. */
interface NewSecret {
  readonly displayName: string;
  readonly secret: string;
  readonly previousSecretValidUntil: string | null;
}

/** `canManage`: the person is an owner, who may see and rotate callback secrets (a member gets 403). */
export function Agents({ api, canManage = false }: { api: Api; canManage?: boolean }) {
  const queries = useQueryClient();
  const agents = useQuery({
    queryKey: ['agents'],
    queryFn: () => unwrap(api.GET('/dashboard/agents')),
  });
  const [name, setName] = useState('');
  const [renaming, setRenaming] = useState<{ agentId: string; displayName: string } | null>(null);
  const [secret, setSecret] = useState<NewSecret | null>(null);
  const refresh = () => queries.invalidateQueries({ queryKey: ['agents'] });

  const create = useMutation({
    mutationFn: (displayName: string) => unwrap(api.POST('/dashboard/agents', { body: { displayName } })),
    onSuccess: (made) => {
      setName('');
      // Null to a member: only owners see callback secrets.
      setSecret(
        made.callbackSecret
          ? { displayName: made.displayName, secret: made.callbackSecret, previousSecretValidUntil: null }
          : null,
      );
      return refresh();
    },
  });
  const rename = useMutation({
    mutationFn: (agent: { agentId: string; displayName: string }) =>
      unwrap(
        api.PATCH('/dashboard/agents/{agentId}', {
          params: { path: { agentId: agent.agentId } },
          body: { displayName: agent.displayName },
        }),
      ),
    onSuccess: () => {
      setRenaming(null);
      return refresh();
    },
  });
  const removal = useConfirmedAction(
    ({ agentId }: Agent) => unwrap(api.DELETE('/dashboard/agents/{agentId}', { params: { path: { agentId } } })),
    refresh,
  );
  const rotation = useConfirmedAction(async ({ agentId, displayName }: Agent) => {
    const made = await unwrap(
      api.POST('/dashboard/agents/{agentId}/callback-secret', { params: { path: { agentId } } }),
    );
    setSecret({ displayName, secret: made.secret, previousSecretValidUntil: made.previousSecretValidUntil });
  }, refresh);

  function submit(event: FormEvent) {
    event.preventDefault();
    create.mutate(name);
  }

  return (
    <Stack>
      <Title order={1}>Agents</Title>
      <form onSubmit={submit} aria-label="Create an agent">
        <Group align="flex-end">
          <TextInput label="New agent's name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
          <Button type="submit" loading={create.isPending}>
            Create agent
          </Button>
        </Group>
      </form>
      <ErrorAlert error={create.error ?? agents.error ?? rename.error} />
      {secret && (
        <Stack gap="xs" role="status" aria-label="New callback secret">
          <Text>
            The callback secret of {secret.displayName}, shown only now. Copy it to the receiver of its callbacks before
            you leave this page:
          </Text>
          <Group>
            <Code data-testid="new-callback-secret">{secret.secret}</Code>
            <CopyButton value={secret.secret}>
              {({ copied, copy }) => (
                <Button size="xs" variant="light" onClick={copy}>
                  {copied ? 'Copied' : 'Copy'}
                </Button>
              )}
            </CopyButton>
          </Group>
          {secret.previousSecretValidUntil && (
            <Text size="sm">
              The previous secret signs its callbacks too until{' '}
              {new Date(secret.previousSecretValidUntil).toLocaleString()}.
            </Text>
          )}
        </Stack>
      )}
      {agents.data && agents.data.count === 0 && <Text c="dimmed">No agents yet.</Text>}
      {agents.data && agents.data.count > 0 && (
        <ScrollBox label="Agents (scrolls sideways)">
          <Table striped aria-label="Agents">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Agent id</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {agents.data.data.map((agent) => (
                <Table.Tr key={agent.agentId}>
                  <Table.Td>
                    {renaming?.agentId === agent.agentId ? (
                      <RenameForm
                        current={agent.displayName}
                        value={renaming.displayName}
                        busy={rename.isPending}
                        onChange={(displayName) => setRenaming({ ...renaming, displayName })}
                        onSubmit={() => rename.mutate(renaming)}
                      />
                    ) : (
                      agent.displayName
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="xs" ff="monospace">
                      {agent.agentId}
                    </Text>
                  </Table.Td>
                  <Table.Td>{new Date(agent.createdAt).toLocaleString()}</Table.Td>
                  <Table.Td>
                    <Group gap="xs">
                      <Button size="xs" variant="light" component={Link} href={`/agents/${agent.agentId}/knowledge`}>
                        Knowledge
                      </Button>
                      <Button size="xs" variant="light" component={Link} href={`/agents/${agent.agentId}/retrieval`}>
                        Default retrieval
                      </Button>
                      <Button size="xs" variant="light" component={Link} href={`/agents/${agent.agentId}/flows`}>
                        Flows
                      </Button>
                      <Button size="xs" variant="light" component={Link} href={`/agents/${agent.agentId}/analytics`}>
                        Analytics
                      </Button>
                      <Button
                        size="xs"
                        variant="default"
                        onClick={() => setRenaming({ agentId: agent.agentId, displayName: agent.displayName })}
                      >
                        Rename
                      </Button>
                      {canManage && (
                        <Button size="xs" variant="default" onClick={() => rotation.ask(agent)}>
                          Rotate callback secret
                        </Button>
                      )}
                      <Button size="xs" color="red" variant="light" onClick={() => removal.ask(agent)}>
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
      <Confirm action={removal} title={`Delete ${removal.target?.displayName ?? ''}?`} confirmLabel="Delete agent">
        <Text size="sm">
          This deletes the agent {removal.target?.displayName} with its knowledge bases (their documents and chunks in
          every environment), its flow definitions, sessions and default retrieval settings. Its analytics events stay
          until their retention ends.
        </Text>
      </Confirm>
      <Confirm
        action={rotation}
        title={`Rotate the callback secret of ${rotation.target?.displayName ?? ''}?`}
        confirmLabel="Rotate secret"
      >
        <Text size="sm">
          A new secret signs the AI-message callbacks of {rotation.target?.displayName} from now on; it is shown once.
          The current secret keeps working for 24 hours: until then each callback carries both signatures, so the
          receiver can switch to the new one without losing a message.
        </Text>
      </Confirm>
    </Stack>
  );
}
