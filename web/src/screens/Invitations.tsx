/**
 * A person's own side of the console (docs/console.md, "Organizations"): the open invitations to their address, each
 * accepted (a membership: the console switches to that organization) or declined; founding an organization where
 * sign-up is open; and the screen of a person who belongs to no organization yet. A chunk of its own: most people
 * sign in to an organization and never load it.
 */
import { Button, Group, Modal, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type Api, unwrap } from '../api';
import { Confirm, ErrorAlert, organizationLabel, ScrollBox, useConfirmedAction } from '../components';
import type { Me, MyInvitation } from '../organizations';

/** What the person's own screens do with the API and the console around them. */
export interface PersonalActions {
  /** A client that names no organization (the person's own routes). */
  readonly personal: Api;
  /** After an invitation accepted or an organization created: a fresh token, their organizations again, switched to it. */
  readonly onJoined: (organizationId: string) => Promise<void>;
  /** Their invitations and organizations read again. */
  readonly onChanged: () => Promise<unknown>;
}

const day = (value: string) => new Date(value).toLocaleDateString();
const invitationName = (invitation: MyInvitation) =>
  organizationLabel({ organizationId: invitation.organizationId, name: invitation.organizationName });

/** The open invitations: organization, role, who invited, when it expires; Accept, and Decline (asked first). */
export function InvitationList(props: PersonalActions & { invitations: readonly MyInvitation[]; onDone?: () => void }) {
  const { personal } = props;
  const accept = useMutation({
    mutationFn: (organizationId: string) =>
      unwrap(personal.POST('/dashboard/me/invitations/{organizationId}', { params: { path: { organizationId } } })),
    onSuccess: async (joined) => {
      await props.onJoined(joined.organizationId);
      props.onDone?.();
    },
  });
  const decline = useConfirmedAction(
    ({ organizationId }: MyInvitation) =>
      unwrap(personal.DELETE('/dashboard/me/invitations/{organizationId}', { params: { path: { organizationId } } })),
    props.onChanged,
  );

  return (
    <Stack gap="xs">
      <ErrorAlert error={accept.error} />
      <ScrollBox label="Invitations (scrolls sideways)">
        <Table striped aria-label="Invitations">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Organization</Table.Th>
              <Table.Th>Role</Table.Th>
              <Table.Th>Invited by</Table.Th>
              <Table.Th>Expires</Table.Th>
              <Table.Th>Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {props.invitations.map((invitation) => (
              <Table.Tr key={invitation.organizationId}>
                <Table.Td>{invitationName(invitation)}</Table.Td>
                <Table.Td>{invitation.role}</Table.Td>
                <Table.Td>{invitation.invitedBy ?? '—'}</Table.Td>
                <Table.Td>{day(invitation.expiresAt)}</Table.Td>
                <Table.Td>
                  <Group gap="xs" wrap="nowrap">
                    <Button
                      size="xs"
                      loading={accept.isPending && accept.variables === invitation.organizationId}
                      disabled={accept.isPending}
                      onClick={() => accept.mutate(invitation.organizationId)}
                    >
                      Accept
                    </Button>
                    <Button size="xs" color="red" variant="light" onClick={() => decline.ask(invitation)}>
                      Decline
                    </Button>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollBox>
      <Confirm
        action={decline}
        title={`Decline the invitation to ${decline.target ? invitationName(decline.target) : ''}?`}
        confirmLabel="Decline invitation"
      >
        <Text size="sm">The invitation goes. To join later, ask an owner of the organization to invite you again.</Text>
      </Confirm>
    </Stack>
  );
}

/** A new organization the person owns (where sign-up is open); the console switches to it. */
export function CreateOrganizationForm(props: PersonalActions & { onDone?: () => void }) {
  const [name, setName] = useState('');
  const create = useMutation({
    mutationFn: () => unwrap(props.personal.POST('/dashboard/me/organizations', { body: { name } })),
    onSuccess: async (made) => {
      setName('');
      await props.onJoined(made.organizationId);
      props.onDone?.();
    },
  });
  function submit(event: FormEvent) {
    event.preventDefault();
    create.mutate();
  }
  return (
    <form onSubmit={submit} aria-label="Create an organization">
      <Stack gap="xs">
        <TextInput
          label="Organization name"
          description="You are its owner: you invite its people"
          required
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
        />
        <ErrorAlert error={create.error} />
        <Group>
          <Button type="submit" loading={create.isPending}>
            Create organization
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** The screen of a person who belongs to no organization: their invitations, and founding one where that is open. */
export function NoOrganization(props: PersonalActions & { me: Me; canCreate: boolean; checking: boolean }) {
  const { me } = props;
  return (
    <Stack maw={900}>
      <Title order={1}>You belong to no organization yet</Title>
      {me.invitations.length > 0 ? (
        <>
          <Text>
            {me.invitations.length === 1
              ? 'An organization invites you. Accept to join it:'
              : `${me.invitations.length} organizations invite you. Accept one to join it:`}
          </Text>
          <InvitationList {...props} invitations={me.invitations} />
        </>
      ) : (
        <Text>
          No open invitation for {me.email}. When an owner of an organization invites this address, the invitation shows
          here.
        </Text>
      )}
      <Group>
        <Button variant="default" loading={props.checking} onClick={() => void props.onChanged()}>
          Check for invitations
        </Button>
      </Group>
      {props.canCreate && (
        <Stack gap="xs">
          <Title order={2} size="h3">
            Or create an organization
          </Title>
          <CreateOrganizationForm {...props} />
        </Stack>
      )}
    </Stack>
  );
}

/** The shell's list of invitations, for a person who has organizations already. */
export function InvitationsDialog(
  props: PersonalActions & { invitations: readonly MyInvitation[]; opened: boolean; onClose: () => void },
) {
  return (
    <Modal
      opened={props.opened}
      onClose={props.onClose}
      title="Invitations"
      size="xl"
      centered
      closeButtonProps={{ 'aria-label': 'Close' }}
    >
      {props.invitations.length > 0 ? (
        <InvitationList {...props} onDone={props.onClose} />
      ) : (
        <Text>No open invitations.</Text>
      )}
    </Modal>
  );
}

/** The switcher's "Create organization". */
export function CreateOrganizationDialog(props: PersonalActions & { opened: boolean; onClose: () => void }) {
  return (
    <Modal
      opened={props.opened}
      onClose={props.onClose}
      title="Create an organization"
      centered
      closeButtonProps={{ 'aria-label': 'Close' }}
    >
      <CreateOrganizationForm {...props} onDone={props.onClose} />
    </Modal>
  );
}
