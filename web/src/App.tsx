/**
 * The console's frame: sign-in until a person is signed in; then their organizations (`GET /dashboard/me`), the
 * organization chosen (the header's switcher), the navigation and the screen of the path. Every screen acts in the
 * chosen organization: its API client names it (`X-Organization-Id`) and its queries live in a cache of that
 * organization's own, so switching shows nothing of the one before. A person of no organization gets their
 * invitations instead.
 */
import { AppShell, Badge, Burger, Button, Group, Loader, NavLink, Text, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { QueryClientProvider, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useCallback, useEffect, useMemo, useState } from 'react';
import { Link, Redirect, Route, Switch, useLocation } from 'wouter';
import { createApi, unwrap } from './api';
import { useAuth } from './auth';
import { ErrorAlert } from './components';
import type { ConsoleConfig } from './config';
import {
  currentOrganization,
  newQueryClient,
  OrganizationSwitcher,
  rememberOrganization,
  storedOrganization,
} from './organizations';
import { Agents } from './screens/Agents';
import { Members } from './screens/Members';
import { SignIn } from './screens/SignIn';
import { Tokens } from './screens/Tokens';

// Screens past the first one load as chunks of their own, so the sign-in screen stays light.
const KnowledgeBases = lazy(() => import('./screens/KnowledgeBases'));
const Playground = lazy(() => import('./screens/Playground'));
const Documents = lazy(() => import('./screens/Documents'));
const Chunks = lazy(() => import('./screens/Chunks'));
const Flows = lazy(() => import('./screens/Flows'));
const FlowPlayground = lazy(() => import('./screens/FlowPlayground'));
const Analytics = lazy(() => import('./screens/Analytics'));
const RetrievalSettings = lazy(() => import('./screens/RetrievalSettings'));
const NoOrganization = lazy(() => import('./screens/Invitations').then((m) => ({ default: m.NoOrganization })));
const InvitationsDialog = lazy(() => import('./screens/Invitations').then((m) => ({ default: m.InvitationsDialog })));
const CreateOrganizationDialog = lazy(() =>
  import('./screens/Invitations').then((m) => ({ default: m.CreateOrganizationDialog })),
);

export function App({ config }: { config: ConsoleConfig }) {
  const auth = useAuth();
  const email = auth.session?.email ?? null;
  const queries = useQueryClient();
  const [location, navigate] = useLocation();
  // The person's own routes and sign-up: no organization named.
  const personal = useMemo(() => createApi(config.apiUrl, () => auth.idToken()), [auth, config.apiUrl]);
  const me = useQuery({
    queryKey: ['me', email],
    queryFn: () => unwrap(personal.GET('/dashboard/me')),
    enabled: email !== null,
  });

  // The organization chosen in this tab, else the one stored for this person, else their first.
  const [choice, setChoice] = useState<{ email: string; organizationId: string } | null>(null);
  const wanted = email && choice?.email === email ? choice.organizationId : email ? storedOrganization(email) : null;
  const organizations = me.data?.organizations ?? [];
  const current = currentOrganization(organizations, wanted);
  const organizationId = current?.organizationId ?? null;

  useEffect(() => {
    // A stored organization the person no longer belongs to is forgotten.
    if (!email || !me.data || me.isFetching) return;
    const stored = storedOrganization(email);
    if (stored && !me.data.organizations.some((o) => o.organizationId === stored)) rememberOrganization(email, null);
  }, [email, me.data, me.isFetching]);

  const api = useMemo(
    () => createApi(config.apiUrl, () => auth.idToken(), organizationId),
    [auth, config.apiUrl, organizationId],
  );
  const refreshMe = useCallback(() => queries.invalidateQueries({ queryKey: ['me', email] }), [queries, email]);
  // A fresh cache for each organization chosen (and each person): nothing of another is ever shown.
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new cache exactly when the person or organization changes
  const organizationQueries = useMemo(() => newQueryClient(() => void refreshMe()), [email, organizationId]);

  const [dialog, setDialog] = useState<'invitations' | 'create' | null>(null);
  // Below the `sm` breakpoint (a phone) the navigation is a layer the header's button opens; it closes once a
  // section is chosen, so a tap meant for the screen never lands on it.
  const [navigation, { toggle: toggleNavigation, close: closeNavigation }] = useDisclosure(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: closes on every change of the path
  useEffect(() => closeNavigation(), [location, closeNavigation]);

  const switchTo = (next: string) => {
    if (!email) return;
    rememberOrganization(email, next);
    setChoice({ email, organizationId: next });
    // An agent's screens belong to one organization: the other one opens on its agents.
    if (location.startsWith('/agents/')) navigate('/agents');
  };
  const joined = async (next: string) => {
    // A new ID token: in AWS the authorizer's answer for the old one still lists the organizations of before.
    await auth.renew();
    await refreshMe();
    switchTo(next);
  };
  const actions = { personal, onJoined: joined, onChanged: refreshMe };

  if (!auth.session) return <SignIn api={personal} config={config} />;
  const owner = current?.role === 'owner';
  const canCreate = config.signUp === 'open';
  const invitations = me.data?.invitations ?? [];
  const links = [
    { href: '/agents', label: 'Agents' },
    { href: '/members', label: 'Members' },
    ...(owner ? [{ href: '/tokens', label: 'Tokens' }] : []),
  ];
  return (
    <AppShell
      header={{ height: 56 }}
      navbar={current ? { width: 200, breakpoint: 'sm', collapsed: { mobile: !navigation } } : undefined}
      padding={{ base: 'xs', sm: 'md' }}
    >
      {/* The first stop of the keyboard: past the header and the navigation, to the screen itself. */}
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <AppShell.Header>
        <Group h="100%" px={{ base: 'xs', sm: 'md' }} justify="space-between" wrap="nowrap" gap="xs">
          <Group gap="sm" wrap="nowrap" miw={0}>
            {current && (
              <Burger
                opened={navigation}
                onClick={toggleNavigation}
                hiddenFrom="sm"
                size="sm"
                aria-label={navigation ? 'Close the navigation' : 'Open the navigation'}
                aria-expanded={navigation}
                aria-controls="navigation"
              />
            )}
            <Text fw={700} visibleFrom="xs">
              Agent Platform
            </Text>
            {current && (
              <OrganizationSwitcher
                organizations={organizations}
                current={current}
                canCreate={canCreate}
                onSwitch={switchTo}
                onCreate={() => setDialog('create')}
              />
            )}
          </Group>
          <Group wrap="nowrap">
            {current && invitations.length > 0 && (
              <Button
                size="xs"
                variant="light"
                onClick={() => setDialog('invitations')}
                rightSection={
                  <Badge size="sm" color="red.9" circle>
                    {invitations.length}
                  </Badge>
                }
              >
                Invitations
              </Button>
            )}
            <Text size="sm" visibleFrom="md">
              {auth.session.email}
              {current ? ` (${current.role})` : ''}
            </Text>
            <Button size="xs" variant="default" onClick={() => auth.signOut()}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      {current && (
        <AppShell.Navbar p="xs" component="nav" aria-label="Sections" id="navigation">
          {/* The header has no room for who is signed in on a phone: the navigation says it. */}
          <Text size="xs" c="dimmed" hiddenFrom="md" px="sm" pb="xs" style={{ overflowWrap: 'anywhere' }}>
            {auth.session.email}
            {current ? ` (${current.role})` : ''}
          </Text>
          {links.map((link) => (
            <NavLink
              key={link.href}
              component={Link}
              href={link.href}
              label={link.label}
              active={location === link.href}
            />
          ))}
        </AppShell.Navbar>
      )}
      <AppShell.Main id="main" tabIndex={-1}>
        {me.isPending && <Loader aria-label="Loading" />}
        <ErrorAlert error={me.error} />
        {me.data && !current && (
          <Suspense fallback={<Loader aria-label="Loading" />}>
            <NoOrganization {...actions} me={me.data} canCreate={canCreate} checking={me.isFetching} />
          </Suspense>
        )}
        {current && (
          <QueryClientProvider client={organizationQueries} key={current.organizationId}>
            <Suspense fallback={<Loader aria-label="Loading" />}>
              <Switch>
                <Route path="/agents">
                  <Agents api={api} canManage={owner} />
                </Route>
                <Route path="/agents/:agentId/knowledge">
                  {(params) => <KnowledgeBases api={api} agentId={params.agentId} />}
                </Route>
                <Route path="/agents/:agentId/knowledge/:knowledgeBaseId">
                  {(params) => (
                    <Documents api={api} agentId={params.agentId} knowledgeBaseId={params.knowledgeBaseId} />
                  )}
                </Route>
                <Route path="/agents/:agentId/knowledge/:knowledgeBaseId/chunks">
                  {(params) => <Chunks api={api} agentId={params.agentId} knowledgeBaseId={params.knowledgeBaseId} />}
                </Route>
                <Route path="/agents/:agentId/knowledge/:knowledgeBaseId/playground">
                  {(params) => (
                    <Playground api={api} agentId={params.agentId} knowledgeBaseId={params.knowledgeBaseId} />
                  )}
                </Route>
                <Route path="/agents/:agentId/flows">{(params) => <Flows api={api} agentId={params.agentId} />}</Route>
                <Route path="/agents/:agentId/flows/playground">
                  {(params) => <FlowPlayground api={api} agentId={params.agentId} />}
                </Route>
                <Route path="/agents/:agentId/retrieval">
                  {(params) => <RetrievalSettings api={api} agentId={params.agentId} />}
                </Route>
                <Route path="/agents/:agentId/analytics">
                  {(params) => <Analytics api={api} agentId={params.agentId} />}
                </Route>
                <Route path="/members">
                  <Members api={api} canManage={owner} />
                </Route>
                <Route path="/tokens">
                  {owner ? <Tokens api={api} /> : <Title order={1}>Only owners manage tokens</Title>}
                </Route>
                <Route>
                  <Redirect to="/agents" />
                </Route>
              </Switch>
            </Suspense>
          </QueryClientProvider>
        )}
        {dialog === 'invitations' && (
          <Suspense fallback={null}>
            <InvitationsDialog {...actions} invitations={invitations} opened onClose={() => setDialog(null)} />
          </Suspense>
        )}
        {dialog === 'create' && (
          <Suspense fallback={null}>
            <CreateOrganizationDialog {...actions} opened onClose={() => setDialog(null)} />
          </Suspense>
        )}
      </AppShell.Main>
    </AppShell>
  );
}
