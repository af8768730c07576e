/**
 * Pieces every screen uses: an error as the API gave it (code and each field with its rule), a confirmation, an inline
 * rename, the environment tabs, an organization's name, a long name cut to its cell.
 */
import { Alert, Button, Group, List, Modal, Stack, Tabs, Text, TextInput, Tooltip } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { ApiError } from './api';
import { detailText, fieldLabel, otherErrorText, refusalTitle } from './errors';
import { ENVIRONMENTS, type Environment } from './knowledge';

export function ErrorAlert({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof ApiError) {
    return (
      <Alert color="red" title={refusalTitle(error.status, error.code)} role="alert">
        {/* A validation error's message repeats its first detail, which the list says in words. */}
        {(error.code !== 'VALIDATION_ERROR' || error.details.length === 0) && <Text size="sm">{error.message}</Text>}
        {error.details.length > 0 && (
          <List size="sm" mt="xs">
            {error.details.map((detail) => (
              <List.Item key={`${detail.field}:${detail.rule}`}>
                <Text span fw={600}>
                  {fieldLabel(detail.field)}:
                </Text>{' '}
                {detail.message ? detailText(detail.field, detail.message) : 'is not accepted.'}
              </List.Item>
            ))}
          </List>
        )}
        <Text size="xs" c="dimmed" mt="xs">
          Code {error.code} ({error.status})
        </Text>
      </Alert>
    );
  }
  return (
    <Alert color="red" title="Something went wrong" role="alert">
      {otherErrorText(error)}
    </Alert>
  );
}

/**
 * A destructive action on one item, asked first: `ask(item)` opens the confirmation; confirming runs `run(item)`;
 * success closes it and calls `onDone` (a refresh); cancelling closes it and forgets a failed attempt's error.
 */
export function useConfirmedAction<T>(run: (item: T) => Promise<unknown>, onDone: () => unknown) {
  const [target, setTarget] = useState<T | null>(null);
  const mutation = useMutation({
    mutationFn: run,
    onSuccess: () => {
      setTarget(null);
      return onDone();
    },
  });
  return {
    /** The item awaiting confirmation, or null. */
    target,
    ask: (item: T) => setTarget(item),
    confirm: () => target !== null && mutation.mutate(target),
    cancel: () => {
      setTarget(null);
      mutation.reset();
    },
    busy: mutation.isPending,
    error: mutation.error,
  };
}

export type ConfirmedAction<T> = ReturnType<typeof useConfirmedAction<T>>;

/** The confirmation of a ConfirmedAction: what goes (children), the API's error of a failed attempt, Cancel, confirm. */
export function Confirm<T>(props: {
  action: ConfirmedAction<T>;
  title: string;
  children: ReactNode;
  confirmLabel: string;
}) {
  const { action } = props;
  return (
    <Modal
      opened={action.target !== null}
      onClose={action.cancel}
      title={props.title}
      centered
      closeButtonProps={{ 'aria-label': 'Close' }}
    >
      <Stack>
        {props.children}
        <ErrorAlert error={action.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={action.cancel}>
            Cancel
          </Button>
          <Button color="red" loading={action.busy} onClick={action.confirm}>
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

/** An organization's name as the console shows it: its own, or its id's start for one made without a name. */
export function organizationLabel(organization: { organizationId: string; name: string | null }): string {
  return organization.name ?? `Organization ${organization.organizationId.slice(0, 8)}`;
}

/**
 * A name that may be long (a file name of 150 characters): one line cut with an ellipsis, the whole name in a tooltip
 * (on hover and on keyboard focus), so the cells beside it (status, actions) keep their width.
 */
export function TruncatedName({ name, size = 'sm' }: { name: string; size?: 'xs' | 'sm' }) {
  return (
    <Tooltip label={name} multiline maw={480} openDelay={300} events={{ hover: true, focus: true, touch: true }}>
      <Text size={size} truncate="end" tabIndex={0} style={{ minWidth: 0 }}>
        {name}
      </Text>
    </Tooltip>
  );
}

/**
 * A table's own sideways scroll: on a phone a table wider than the screen scrolls inside this box, never the page.
 * Reachable by keyboard (a scrolling region must be), named after what it holds.
 */
export function ScrollBox({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls must take focus to scroll by keyboard
    <section aria-label={label} tabIndex={0} className="scroll-box">
      {children}
    </section>
  );
}
