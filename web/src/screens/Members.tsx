/** The organization's people: owners invite (the invitation goes by e-mail) and remove; members read the list. */
import { Button, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type Api, unwrap } from '../api';
import { Confirm, ErrorAlert, useConfirmedAction } from '../components';

interface Member {
  readonly email: string;
  readonly role: 'owner' | 'member';
  readonly createdAt: string;
}

export function Members({ api, canManage }: { api: Api; canManage: boolean }) {
  const queries = useQueryClient();
  const members = useQuery({
    queryKey: ['members'],
    queryFn: () => unwrap<{ data: Member[] }>(api.GET('/dashboard/members')),
  });
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<'owner' | 'member'>('member');
  const [invited, setInvited] = useState<string | null>(null);
  const refresh = () => queries.invalidateQueries({ queryKey: ['members'] });

  const invite = useMutation({
    mutationFn: () =>
      unwrap<{ email: string; invitation: string }>(api.POST('/dashboard/members', { body: { email, role } })),
    onSuccess: (answer) => {
      setInvited(
        answer.invitation === 'sent'
          ? `${answer.email} is invited: a temporary password is on its way.`
          : `${answer.email} already had an account: they sign in with their own password.`,
      );
      setEmail('');
      return refresh();
    },
  });
  const removal = useConfirmedAction(
    ({ email }: Member) => unwrap<unknown>(api.DELETE('/dashboard/members/{email}', { params: { path: { email } } })),
    refresh,
  );

  function submit(event: FormEvent) {
    event.preventDefault();
    setInvited(null);
    invite.mutate();
  }

  return (
    <Stack>
      <Title order={1}>Members</Title>
      {canManage && (
        <form onSubmit={submit} aria-label="Invite a person">
          <Group align="flex-end">
            <TextInput label="E-mail" type="email" value={email} onChange={(e) => setEmail(e.currentTarget.value)} />
            <Select
              label="Role"
              data={['member', 'owner']}
              value={role}
              allowDeselect={false}
              onChange={(value) => setRole((value as 'owner' | 'member') ?? 'member')}
            />
            <Button type="submit" loading={invite.isPending}>
              Invite
            </Button>
          </Group>
        </form>
      )}
      {invited && (
        <Text c="teal.9" role="status">
          {invited}
        </Text>
      )}
      <ErrorAlert error={invite.error ?? members.error} />
      {members.data && (
        <Table striped aria-label="Members">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>E-mail</Table.Th>
              <Table.Th>Role</Table.Th>
              <Table.Th>Since</Table.Th>
              {canManage && <Table.Th>Actions</Table.Th>}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {members.data.data.map((member) => (
              <Table.Tr key={member.email}>
                <Table.Td>{member.email}</Table.Td>
                <Table.Td>{member.role}</Table.Td>
                <Table.Td>{new Date(member.createdAt).toLocaleString()}</Table.Td>
                {canManage && (
                  <Table.Td>
                    <Button size="xs" color="red" variant="light" onClick={() => removal.ask(member)}>
                      Remove
                    </Button>
                  </Table.Td>
                )}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <Confirm action={removal} title={`Remove ${removal.target?.email ?? ''}?`} confirmLabel="Remove">
        <Text size="sm">{removal.target?.email} loses access at their next request, and their account is deleted.</Text>
      </Confirm>
    </Stack>
  );
}
