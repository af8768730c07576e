/**
 * Pieces every screen uses: an error as the API gave it (code and each field with its rule), a confirmation, an inline
 * rename, the environment tabs.
 */
import { Alert, Button, Group, List, Modal, Stack, Tabs, Text, TextInput } from '@mantine/core';
import type { ReactNode } from 'react';
import { ApiError } from './api';
import { ENVIRONMENTS, type Environment } from './knowledge';

export function ErrorAlert({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof ApiError) {
    return (
      <Alert color="red" title={`${error.code} (${error.status})`} role="alert">
        <Text size="sm">{error.message}</Text>
        {error.details.length > 0 && (
          <List size="sm" mt="xs">
            {error.details.map((detail) => (
              <List.Item key={`${detail.field}:${detail.rule}`}>
                <Text span fw={600}>
                  {detail.field || '(request)'}
                </Text>{' '}
                {detail.rule}
                {detail.message ? `: ${detail.message}` : ''}
              </List.Item>
            ))}
          </List>
        )}
      </Alert>
    );
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return (
    <Alert color="red" title="Error" role="alert">
      {message}
    </Alert>
  );
}

export function Confirm(props: {
  opened: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <Modal
      opened={props.opened}
      onClose={props.onCancel}
      title={props.title}
      centered
      closeButtonProps={{ 'aria-label': 'Close' }}
    >
      <Stack>
        {props.children}
        <Group justify="flex-end">
          <Button variant="default" onClick={props.onCancel}>
            Cancel
          </Button>
          <Button color="red" loading={props.busy} onClick={props.onConfirm}>
            {props.confirmLabel}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** A row's name as an inline form (the tables' Rename): the new name and Save. */
export function RenameForm(props: {
  current: string;
  value: string;
  busy: boolean;
  onChange: (value: string) => void;
  onSubmit: () => void;
}) {
  return (
    <form
      aria-label={`Rename ${props.current}`}
      onSubmit={(event) => {
        event.preventDefault();
        props.onSubmit();
      }}
    >
      <Group gap="xs">
        <TextInput aria-label="New name" value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)} />
        <Button type="submit" size="xs" loading={props.busy}>
          Save
        </Button>
      </Group>
    </form>
  );
}

/** One tab per environment (the screens that show one dataset, definition or setting at a time). */
export function EnvironmentTabs(props: { value: Environment; onChange: (environment: Environment) => void }) {
  return (
    <Tabs value={props.value} onChange={(value) => value && props.onChange(value as Environment)}>
      <Tabs.List aria-label="Environment">
        {ENVIRONMENTS.map((name) => (
          <Tabs.Tab key={name} value={name}>
            {name}
          </Tabs.Tab>
        ))}
      </Tabs.List>
    </Tabs>
  );
}
