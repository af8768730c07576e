/** The console's frame: sign-in until a person is signed in, then the navigation and the screen of the path. */
import { AppShell, Button, Group, Loader, NavLink, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense, useMemo } from 'react';
import { Link, Redirect, Route, Switch, useLocation } from 'wouter';
import { createApi, unwrap } from './api';
import { useAuth } from './auth';
import { ErrorAlert } from './components';
import type { ConsoleConfig } from './config';
import { Agents } from './screens/Agents';
import { Members } from './screens/Members';
import { SignIn } from './screens/SignIn';
import { Tokens } from './screens/Tokens';

// Screens past the first one load as chunks of their own, so the sign-in screen stays light.
const KnowledgeBases = lazy(() => import('./screens/KnowledgeBases'));
const Playground = lazy(() => import('./screens/Playground'));
const Documents = lazy(() => import('./screens/Documents'));
const Flows = lazy(() => import('./screens/Flows'));
const FlowPlayground = lazy(() => import('./screens/FlowPlayground'));
const Analytics = lazy(() => import('./screens/Analytics'));
const RetrievalSettings = lazy(() => import('./screens/RetrievalSettings'));

interface Organization {
  readonly organizationId: string;
  readonly name: string | null;
  readonly caller: { kind: 'person' | 'token'; email: string | null; role: 'owner' | 'member' };
}

export function App({ config }: { config: ConsoleConfig }) {
  const auth = useAuth();
  const api = useMemo(() => createApi(config.apiUrl, () => auth.idToken()), [auth, config.apiUrl]);
  const [location] = useLocation();
  const organization = useQuery({
    queryKey: ['organization', auth.session?.email],
    queryFn: () => unwrap<Organization>(api.GET('/dashboard/organization')),
    enabled: auth.session !== null,
  });

  if (!auth.session) return <SignIn api={api} config={config} />;
  const owner = organization.data?.caller.role === 'owner';
  const links = [
    { href: '/agents', label: 'Agents' },
    { href: '/members', label: 'Members' },
    ...(owner ? [{ href: '/tokens', label: 'Tokens' }] : []),
  ];
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 200, breakpoint: 'sm' }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between">
          <Text fw={700}>Agent Platform{organization.data?.name ? ` · ${organization.data.name}` : ''}</Text>
          <Group>
            <Text size="sm">
              {auth.session.email}
              {organization.data ? ` (${organization.data.caller.role})` : ''}
            </Text>
            <Button size="xs" variant="default" onClick={() => auth.signOut()}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" component="nav" aria-label="Sections">
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
      <AppShell.Main>
        {organization.isPending && <Loader aria-label="Loading" />}
        <ErrorAlert error={organization.error} />
        {organization.data && (
          <Suspense fallback={<Loader aria-label="Loading" />}>
            <Switch>
              <Route path="/agents">
                <Agents api={api} />
              </Route>
              <Route path="/agents/:agentId/knowledge">
                {(params) => <KnowledgeBases api={api} agentId={params.agentId} />}
              </Route>
              <Route path="/agents/:agentId/knowledge/:knowledgeBaseId">
                {(params) => <Documents api={api} agentId={params.agentId} knowledgeBaseId={params.knowledgeBaseId} />}
              </Route>
              <Route path="/agents/:agentId/knowledge/:knowledgeBaseId/playground">
                {(params) => <Playground api={api} agentId={params.agentId} knowledgeBaseId={params.knowledgeBaseId} />}
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
        )}
      </AppShell.Main>
    </AppShell>
  );
}
