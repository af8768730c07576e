/** Sign-in, sign-up (where the deployment is open) and an invited person's first password. */
import { Anchor, Button, Container, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { type FormEvent, useState } from 'react';
import { type Api, unwrap } from '../api';
import { type NewPasswordChallenge, useAuth } from '../auth';
import { ErrorAlert } from '../components';
import type { ConsoleConfig } from '../config';

type Mode = 'sign-in' | 'sign-up' | 'new-password';

export function SignIn({ api, config }: { api: Api; config: ConsoleConfig }) {
  const auth = useAuth();
  const [mode, setMode] = useState<Mode>('sign-in');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [organizationName, setOrganizationName] = useState('');
  const [challenge, setChallenge] = useState<NewPasswordChallenge | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      if (mode === 'sign-up') {
        const answer = await unwrap<{ confirmed: boolean }>(
          api.POST('/dashboard/signup', { body: { email, password, organizationName } }),
        );
        if (!answer.confirmed) {
          setNotice('Check your e-mail for the confirmation code, confirm, then sign in.');
          setMode('sign-in');
          return;
        }
        await auth.signIn(email, password);
      } else if (mode === 'new-password' && challenge) {
        await auth.choosePassword(challenge, password);
      } else {
        const next = await auth.signIn(email, password);
        if (next) {
          setChallenge(next);
          setPassword('');
          setMode('new-password');
        }
      }
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  }

  const title = { 'sign-in': 'Sign in', 'sign-up': 'Create your organization', 'new-password': 'Choose your password' }[
    mode
  ];
  return (
    <Container size={420} py="xl" component="main">
      <Title order={1} ta="center" mb="md">
        Agent Platform
      </Title>
      <Paper withBorder p="lg" radius="md">
        <form onSubmit={submit} aria-label={title}>
          <Stack>
            <Title order={2} size="h3">
              {title}
            </Title>
            {!config.cognito && <Text c="red.9">This deployment has no people&apos;s accounts (COGNITO=off).</Text>}
            {notice && <Text c="teal.9">{notice}</Text>}
            {mode !== 'new-password' && (
              <TextInput
                label="E-mail"
                type="email"
                autoComplete="username"
                required
                value={email}
                onChange={(e) => setEmail(e.currentTarget.value)}
              />
            )}
            {mode === 'sign-up' && (
              <TextInput
                label="Organization name"
                required
                value={organizationName}
                onChange={(e) => setOrganizationName(e.currentTarget.value)}
              />
            )}
            <PasswordInput
              label={mode === 'new-password' ? 'New password' : 'Password'}
              description={
                mode === 'sign-in' ? undefined : 'At least 8 characters: lower and upper case, a digit and a symbol'
              }
              autoComplete={mode === 'sign-in' ? 'current-password' : 'new-password'}
              required
              value={password}
              onChange={(e) => setPassword(e.currentTarget.value)}
            />
            <ErrorAlert error={error} />
            <Button type="submit" loading={busy} disabled={!config.cognito}>
              {mode === 'sign-up' ? 'Sign up' : mode === 'new-password' ? 'Save password' : 'Sign in'}
            </Button>
            {config.signUp === 'open' && mode !== 'new-password' && (
              <Anchor
                component="button"
                type="button"
                onClick={() => {
                  setError(null);
                  setMode(mode === 'sign-in' ? 'sign-up' : 'sign-in');
                }}
              >
                {mode === 'sign-in' ? 'No account? Sign up' : 'Have an account? Sign in'}
              </Anchor>
            )}
          </Stack>
        </form>
      </Paper>
    </Container>
  );
}
