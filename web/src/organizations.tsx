/**
 * The organizations of the person signed in (docs/console.md, "Organizations"): what `GET /dashboard/me` answers, the
 * organization chosen (kept per e-mail in localStorage, so a reload or a new tab opens where the person was), a query
 * cache per organization, and the switcher in the console's header.
 */
import { Button, Divider, NavLink, Popover, Stack, Text, VisuallyHidden } from '@mantine/core';
import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { type Answer, ApiError } from './api';
import { organizationLabel } from './components';

export type Role = 'owner' | 'member';

/** `GET /dashboard/me`: the person, their organizations (oldest membership first) and open invitations. */
export type Me = Answer<'/dashboard/me', 'get'>;
export type MyOrganization = Me['organizations'][number];
export type MyInvitation = Me['invitations'][number];

const STORAGE_PREFIX = 'agent-platform.organization:';

/** The organization the person last chose, or null (localStorage may be unavailable: then nothing is kept). */
export function storedOrganization(email: string): string | null {
  try {
    return localStorage.getItem(STORAGE_PREFIX + email);
  } catch {
    return null;
  }
}

export function rememberOrganization(email: string, organizationId: string | null): void {
  try {
    if (organizationId) localStorage.setItem(STORAGE_PREFIX + email, organizationId);
    else localStorage.removeItem(STORAGE_PREFIX + email);
  } catch {
    // Not kept: the first organization opens next time.
  }
}

/**
 * The organization the console acts in: the one asked (a choice made now), else the one stored, when the person still
 * belongs to it; else their first; null for a person of none.
 */
export function currentOrganization(
  organizations: readonly MyOrganization[],
  wanted: string | null,
): MyOrganization | null {
  return organizations.find((organization) => organization.organizationId === wanted) ?? organizations[0] ?? null;
}

/** The API's answers that mean the person is no longer where the console thinks: their organizations are read again. */
const LOST_ACCESS = new Set(['NOT_A_MEMBER', 'NO_ORGANIZATION']);

/**
 * A query cache: the console's own (the person's routes), and one for each organization chosen, so nothing one
 * organization answered is ever shown in another. `onLostAccess` runs when a call says the person is not (or no
 * longer) a member of the organization it named.
 */
export function newQueryClient(onLostAccess?: () => void): QueryClient {
  const lost = (error: unknown) => {
    if (onLostAccess && error instanceof ApiError && LOST_ACCESS.has(error.code)) onLostAccess();
  };
  return new QueryClient({
    queryCache: new QueryCache({ onError: lost }),
    mutationCache: new MutationCache({ onError: lost }),
    defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false } },
  });
}

/**
 * The header's switcher: the current organization's name (its role is beside the e-mail); it opens the list of the
 * person's organizations, each with their role there, and "Create organization" where sign-up is open. A popover of
 * links (Mantine's Popover and NavLink, in the first screen already), not Mantine's Menu, which would add 8 KB gzip.
 */
export function OrganizationSwitcher(props: {
  organizations: readonly MyOrganization[];
  current: MyOrganization;
  canCreate: boolean;
  onSwitch: (organizationId: string) => void;
  onCreate: () => void;
}) {
  const { current } = props;
  const [opened, setOpened] = useState(false);
  const heading = useId();
  const choose = (then: () => void) => () => {
    setOpened(false);
    then();
  };
  return (
    <Popover opened={opened} onChange={setOpened} position="bottom-start" shadow="md" width={300} trapFocus>
      <Popover.Target>
        <Button
          variant="default"
          size="xs"
          onClick={() => setOpened((open) => !open)}
          rightSection={<span aria-hidden="true">▾</span>}
        >
          <VisuallyHidden>Organization: </VisuallyHidden>
          {organizationLabel(current)}
        </Button>
      </Popover.Target>
      <Popover.Dropdown p={4}>
        <Text size="xs" fw={700} c="dimmed" px="sm" py={4} id={heading}>
          Your organizations
        </Text>
        <Stack gap={0} component="ul" aria-labelledby={heading} m={0} p={0} style={{ listStyle: 'none' }}>
          {props.organizations.map((organization) => {
            const here = organization.organizationId === current.organizationId;
            return (
              <li key={organization.organizationId}>
                <NavLink
                  component="button"
                  label={organizationLabel(organization)}
                  // Not NavLink's description: on the active row its faded colour is below 4.5:1.
                  rightSection={
                    <Text size="xs" c="gray.8">
                      {organization.role}
                    </Text>
                  }
                  active={here}
                  aria-current={here ? 'true' : undefined}
                  onClick={choose(() => here || props.onSwitch(organization.organizationId))}
                />
              </li>
            );
          })}
        </Stack>
        {props.canCreate && (
          <>
            <Divider my={4} />
            <NavLink component="button" label="Create organization" onClick={choose(props.onCreate)} />
          </>
        )}
      </Popover.Dropdown>
    </Popover>
  );
}
