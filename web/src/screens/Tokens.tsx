/**
 * The organization's tokens (owners): create with scopes (none chosen for you, each explained), optionally restricted
 * to some agents and with an expiry; the secret shown once with a copy button; list (who made each, which agents);
 * revoke (with the tokens made from it).
 */
import {
  Badge,
  Button,
  Checkbox,
  Code,
  CopyButton,
  Group,
  MultiSelect,
  NumberInput,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type Answer, type Api, unwrap } from '../api';
import { Confirm, ErrorAlert, ScrollBox, useConfirmedAction } from '../components';

const SCOPES = ['knowledge-management', 'analytics', 'dashboard', 'webhook'] as const;
type Scope = (typeof SCOPES)[number];

/** What each scope lets the token do (README, "Authentication"). */
const SCOPE_HELP: Record<Scope, string> = {
  'knowledge-management': 'Upload, update, read and delete documents and ZIP imports, through the knowledge API.',
  analytics: "List the organization's agents and query their analytics events; record custom events.",
  dashboard:
    'Everything this console does: agents, knowledge bases, retrieval, flows, sessions and tokens (never more than its own).',
  webhook: "Start the agents' flows: webhooks and app events.",
};

/** Most days a token may live (the API's bound). */
const MAX_EXPIRY_DAYS = 3650;

/** A token as the list shows it (never its secret): who made it, its scopes, agents and lifetime. */
type TokenView = Answer<'/dashboard/tokens', 'get'>['data'][number];

const madeBy = (createdBy: TokenView['createdBy']) =>
  createdBy === null ? '—' : createdBy.kind === 'person' ? createdBy.email : `token ${createdBy.tokenId.slice(0, 8)}`;

const when = (value: string | null) => (value ? new Date(value).toLocaleString() : '—');

export function Tokens({ api }: { api: Api }) {
  const queries = useQueryClient();
  const tokens = useQuery({
    queryKey: ['tokens'],
    queryFn: () => unwrap(api.GET('/dashboard/tokens')),
  });
  const [name, setName] = useState('');
  const agents = useQuery({
    queryKey: ['agents'],
    queryFn: () => unwrap(api.GET('/dashboard/agents')),
  });
  const [scopes, setScopes] = useState<Scope[]>([]);
  const [agentIds, setAgentIds] = useState<string[]>([]);
  const [expiresInDays, setExpiresInDays] = useState<number | ''>('');
  const agentName = (agentId: string) =>
    agents.data?.data.find((agent) => agent.agentId === agentId)?.displayName ?? agentId.slice(0, 8);
  const [secret, setSecret] = useState<{ name: string | null; token: string } | null>(null);
  const [revoked, setRevoked] = useState<string | null>(null);
  const refresh = () => queries.invalidateQueries({ queryKey: ['tokens'] });

  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/dashboard/tokens', {
          body: {
            name,
            scopes,
            ...(agentIds.length > 0 ? { agentIds } : {}),
            ...(expiresInDays === '' ? {} : { expiresInDays }),
          },
        }),
      ),
    onSuccess: (made) => {
      setSecret({ name: made.name, token: made.token });
      setName('');
      setScopes([]);
      setAgentIds([]);
      setExpiresInDays('');
      return refresh();
    },
  });
  const revocation = useConfirmedAction(async ({ tokenId, name }: TokenView) => {
    const done = await unwrap(api.DELETE('/dashboard/tokens/{tokenId}', { params: { path: { tokenId } } }));
    const count = done.descendantsRevoked;
    setRevoked(
      `${name ?? 'The token'} is revoked` +
        (count > 0 ? `, and so ${count === 1 ? 'is the 1 token' : `are the ${count} tokens`} made from it.` : '.'),
    );
  }, refresh);

  function submit(event: FormEvent) {
    event.preventDefault();
    setRevoked(null);
    create.mutate();
  }

  return (
    <Stack>
      <Title order={1}>Tokens</Title>
      <form onSubmit={submit} aria-label="Create a token">
        <Stack gap="xs">
          <TextInput label="Token name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
          <Checkbox.Group
            label="Scopes"
            description="What the token may do; choose only what it needs."
            value={scopes}
            onChange={(value) => setScopes(value as Scope[])}
          >
            <Stack mt="xs" gap="xs">
              {SCOPES.map((scope) => (
                <Checkbox key={scope} value={scope} label={scope} description={SCOPE_HELP[scope]} />
              ))}
            </Stack>
          </Checkbox.Group>
          <MultiSelect
            label="Agents"
            description="Restrict the token to these agents: any other agent is unknown to it. None chosen: every agent."
            placeholder={agentIds.length === 0 ? 'Every agent' : undefined}
            data={(agents.data?.data ?? []).map((agent) => ({ value: agent.agentId, label: agent.displayName }))}
            value={agentIds}
            onChange={setAgentIds}
            searchable
            clearable
          />
          <NumberInput
            label="Expires after (days)"
            description={`Refused from this many days on (1 to ${MAX_EXPIRY_DAYS}). Empty: it does not expire.`}
            min={1}
            max={MAX_EXPIRY_DAYS}
            allowDecimal={false}
            value={expiresInDays}
            onChange={(value) => setExpiresInDays(typeof value === 'number' ? value : '')}
          />
          <Text size="sm" c="dimmed">
            The tokens you make here are revoked when you are removed from the organization. A token that a token makes
            (through the API) never outlives it: its end is no later, and it is revoked with it.
          </Text>
          <Group>
            <Button type="submit" loading={create.isPending} disabled={scopes.length === 0}>
              Create token
            </Button>
            {scopes.length === 0 && (
              <Text size="sm" c="dimmed">
                Choose at least one scope.
              </Text>
            )}
          </Group>
        </Stack>
      </form>
      <ErrorAlert error={create.error ?? tokens.error} />
      {revoked && (
        <Text c="teal.9" role="status">
          {revoked}
        </Text>
      )}
      {secret && (
        <Stack gap="xs" role="status" aria-label="New token">
          <Text>The token {secret.name}, shown only now. Copy it before you leave this page:</Text>
          <Group>
            <Code data-testid="new-token">{secret.token}</Code>
            <CopyButton value={secret.token}>
              {({ copied, copy }) => (
                <Button size="xs" variant="light" onClick={copy}>
                  {copied ? 'Copied' : 'Copy'}
                </Button>
              )}
            </CopyButton>
          </Group>
        </Stack>
      )}
      {tokens.data && (
        <ScrollBox label="Tokens (scrolls sideways)">
          <Table striped aria-label="Tokens">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Starts with</Table.Th>
                <Table.Th>Scopes</Table.Th>
                <Table.Th>Agents</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>Created by</Table.Th>
                <Table.Th>Expires</Table.Th>
                <Table.Th>Last used</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {tokens.data.data.map((token) => (
                <Table.Tr key={token.tokenId}>
                  <Table.Td>{token.name ?? '(no name)'}</Table.Td>
                  <Table.Td>
                    <Code>{token.prefix ?? '—'}</Code>
                  </Table.Td>
                  <Table.Td>{token.scopes.join(', ')}</Table.Td>
                  <Table.Td>{token.agentIds ? token.agentIds.map(agentName).join(', ') : 'every agent'}</Table.Td>
                  <Table.Td>{when(token.createdAt)}</Table.Td>
                  <Table.Td>{madeBy(token.createdBy)}</Table.Td>
                  <Table.Td>{token.expiresAt ? when(token.expiresAt) : 'never'}</Table.Td>
                  <Table.Td>{when(token.lastUsedAt)}</Table.Td>
                  <Table.Td>
                    <Badge color={token.status === 'active' ? 'teal.9' : 'gray'} miw="max-content">
                      {token.status}
                    </Badge>
                  </Table.Td>
                  <Table.Td>
                    <Button size="xs" color="red" variant="light" onClick={() => revocation.ask(token)}>
                      Revoke
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollBox>
      )}
      <Confirm
        action={revocation}
        title={`Revoke ${revocation.target?.name ?? 'this token'}?`}
        confirmLabel="Revoke token"
      >
        <Text size="sm">
          Every request with it, or with a token made from it, is refused from now on (in AWS within a minute).
        </Text>
      </Confirm>
    </Stack>
  );
}
