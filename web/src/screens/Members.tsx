/**
 * The organization's people and open invitations in one table. Owners invite (an offer the person accepts after signing
 * in; the answer never says whether the address has an account), remove a person (their access here ends and the tokens
 * they made are revoked; their account stays) and cancel an invitation; members read the list.
 */
import { Badge, Button, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type Answer, type Api, unwrap } from '../api';
import { Confirm, ErrorAlert, ScrollBox, useConfirmedAction } from '../components';

type Role = 'owner' | 'member';

/** What removing needs of a person of the organization (`active`) or of an open invitation (`invited`). */
type Member = Pick<Answer<'/dashboard/members', 'get'>['data'][number], 'email' | 'status'>;

const day = (value: string) => new Date(value).toLocaleDateString();
const tokens = (count: number) => (count === 1 ? '1 token' : `${count} tokens`);

export function Members({ api, canManage }: { api: Api; canManage: boolean }) {
  const queries = useQueryClient();
  const members = useQuery({
    queryKey: ['members'],
    queryFn: () => unwrap(api.GET('/dashboard/members')),
  });
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [notice, setNotice] = useState<string | null>(null);
  const refresh = () => queries.invalidateQueries({ queryKey: ['members'] });

  const invite = useMutation({
    mutationFn: () => unwrap(api.POST('/dashboard/members', { body: { email, role } })),
    onSuccess: (answer) => {
      setNotice(
        `${answer.email} is invited as ${answer.role === 'owner' ? 'an owner' : 'a member'} until ${day(answer.expiresAt)}: ` +
          'an invitation was sent, and they accept it after signing in to the console.',
      );
      setEmail('');
      return refresh();
    },
  });
  const removal = useConfirmedAction(async (member: Member) => {
    const done = await unwrap(api.DELETE('/dashboard/members/{email}', { params: { path: { email: member.email } } }));
    setNotice(
      done.status === 'invitationCancelled'
        ? `The invitation of ${done.email} is cancelled.`
        : `${done.email} is removed from the organization; ${tokens(done.tokensRevoked)} they made ${
            done.tokensRevoked === 1 ? 'was' : 'were'
          } revoked.`,
    );
  }, refresh);

  function submit(event: FormEvent) {
    event.preventDefault();
    setNotice(null);
    invite.mutate();
  }

  const target = removal.target;
  return (
    <Stack>
      <Title order={1}>Members</Title>
      {canManage && (
        <form onSubmit={submit} aria-label="Invite a person">
          <Group align="flex-end">
            <TextInput
              label="E-mail"
              type="email"
              required
              value={email}
              onChange={(e) => setEmail(e.currentTarget.value)}
            />
            <Select
              label="Role"
              data={['member', 'owner']}
              value={role}
              allowDeselect={false}
              onChange={(value) => setRole((value as Role) ?? 'member')}
            />
            <Button type="submit" loading={invite.isPending}>
              Invite
            </Button>
          </Group>
        </form>
      )}
      {notice && (
        <Text c="teal.9" role="status">
          {notice}
        </Text>
      )}
      <ErrorAlert error={invite.error ?? members.error} />
      {members.data && (
        <ScrollBox label="Members (scrolls sideways)">
          <Table striped aria-label="Members">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>E-mail</Table.Th>
                <Table.Th>Role</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Since</Table.Th>
                {canManage && <Table.Th>Actions</Table.Th>}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {members.data.data.map((member) => (
                <Table.Tr key={`${member.status}:${member.email}`} data-status={member.status}>
                  <Table.Td>{member.email}</Table.Td>
                  <Table.Td>{member.role}</Table.Td>
                  <Table.Td>
                    {member.status === 'active' ? (
                      <Badge color="teal.9">Active</Badge>
                    ) : (
                      <Group gap="xs" wrap="nowrap">
                        <Badge color="blue.9">Invited</Badge>
                        {member.expiresAt && <Text size="sm">expires {day(member.expiresAt)}</Text>}
                      </Group>
                    )}
                  </Table.Td>
                  <Table.Td>{new Date(member.createdAt).toLocaleString()}</Table.Td>
                  {canManage && (
                    <Table.Td>
                      <Button size="xs" color="red" variant="light" onClick={() => removal.ask(member)}>
                        {member.status === 'active' ? 'Remove' : 'Cancel invitation'}
                      </Button>
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollBox>
      )}
      <Confirm
        action={removal}
        title={
          target?.status === 'invited' ? `Cancel the invitation of ${target.email}?` : `Remove ${target?.email ?? ''}?`
        }
        confirmLabel={target?.status === 'invited' ? 'Cancel invitation' : 'Remove'}
      >
        {target?.status === 'invited' ? (
          <Text size="sm">
            The invitation goes: {target.email} can no longer accept it. Invite them again to offer it anew.
          </Text>
        ) : (
          <Text size="sm">
            {target?.email}&apos;s access to this organization ends (at their next request; in AWS within a minute), and
            the tokens they made here are revoked, with the tokens made from those. Their account stays: they may belong
            to other organizations.
          </Text>
        )}
      </Confirm>
    </Stack>
  );
}
