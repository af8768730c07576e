/**
 * Sign-in, sign-up (where the deployment is open), an invited person's first password, and a forgotten password: the
 * e-mail, then the code Cognito sent (locally, the one `npm start` printed) with a new password, then signed in.
 */
import {
  Alert,
  Anchor,
  Button,
  Container,
  Group,
  Paper,
  PasswordInput,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { type FormEvent, useState } from 'react';
import { type Api, unwrap } from '../api';
import { AuthError, type NewPasswordChallenge, passwordProblem, useAuth } from '../auth';
import { ErrorAlert } from '../components';
import type { ConsoleConfig } from '../config';

type Mode = 'sign-in' | 'sign-up' | 'new-password' | 'forgot' | 'reset';

const TITLES: Record<Mode, string> = {
  'sign-in': 'Sign in',
  'sign-up': 'Create your organization',
  'new-password': 'Choose your password',
  forgot: 'Reset your password',
  reset: 'Choose a new password',
};

const POLICY = 'At least 8 characters: lower and upper case, a digit and a symbol';

/** The same words whether or not the address has an account: the page must not tell which. */
const codeSent = (email: string) =>
  `If ${email.trim().toLowerCase()} has an account, a code is on its way there. Enter it below with a new password.`;

export function SignIn({ api, config }: { api: Api; config: ConsoleConfig }) {
  const auth = useAuth();
  const [mode, setMode] = useState<Mode>('sign-in');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [organizationName, setOrganizationName] = useState('');
  const [challenge, setChallenge] = useState<NewPasswordChallenge | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const go = (next: Mode, keepNotice = false) => {
    setError(null);
    if (!keepNotice) setNotice(null);
    setPassword('');
    setMode(next);
  };

  const challenged = (next: NewPasswordChallenge | null) => {
    if (!next) return;
    setChallenge(next);
    go('new-password');
  };

  async function sendCode() {
    await auth.forgotPassword(email);
    setCode('');
    go('reset');
    setNotice(codeSent(email));
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      if (mode === 'sign-up') {
        const answer = await unwrap(api.POST('/dashboard/signup', { body: { email, password, organizationName } }));
        if (!answer.confirmed) {
          setNotice('Check your e-mail for the confirmation code, confirm, then sign in.');
          setMode('sign-in');
          return;
        }
        await auth.signIn(email, password);
      } else if (mode === 'new-password' && challenge) {
        await auth.choosePassword(challenge, password);
      } else if (mode === 'forgot') {
        await sendCode();
      } else if (mode === 'reset') {
        // The new password is checked against the pool's policy before anything is sent (auth.tsx).
        challenged(await auth.resetPassword(email, code, password));
      } else {
        challenged(await auth.signIn(email, password));
      }
    } catch (caught) {
      if (mode === 'reset') setNotice(codeSent(email));
      setError(caught);
    } finally {
      setBusy(false);
    }
  }

  async function resend() {
    setBusy(true);
    setError(null);
    try {
      await sendCode();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  }

  const title = TITLES[mode];
  const submitLabel = {
    'sign-in': 'Sign in',
    'sign-up': 'Sign up',
    'new-password': 'Save password',
    forgot: 'Send a code',
    reset: 'Reset password',
  }[mode];
  const choosing = mode === 'sign-up' || mode === 'new-password' || mode === 'reset';
  const newPasswordProblem = choosing && password !== '' ? passwordProblem(password) : null;
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
            {mode === 'forgot' && (
              <Text size="sm">
                Enter the e-mail address you sign in with: we send a code there to reset your password.
              </Text>
            )}
            {notice && (
              <Text c="teal.9" role="status">
                {notice}
              </Text>
            )}
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
            {mode === 'reset' && (
              <TextInput
                label="Code"
                description="The code in the e-mail we sent"
                autoComplete="one-time-code"
                inputMode="numeric"
                required
                value={code}
                onChange={(e) => setCode(e.currentTarget.value)}
              />
            )}
            {mode !== 'forgot' && (
              <PasswordInput
                label={mode === 'new-password' || mode === 'reset' ? 'New password' : 'Password'}
                description={choosing ? POLICY : undefined}
                autoComplete={choosing ? 'new-password' : 'current-password'}
                required
                // A new password is checked against the pool's rules as it is typed.
                error={newPasswordProblem ? `It needs ${newPasswordProblem}.` : undefined}
                value={password}
                onChange={(e) => setPassword(e.currentTarget.value)}
              />
            )}
            {error instanceof AuthError ? (
              <Alert color="red" title="Not done" role="alert">
                {error.message}
              </Alert>
            ) : (
              <ErrorAlert error={error} />
            )}
            <Button type="submit" loading={busy} disabled={!config.cognito || newPasswordProblem !== null}>
              {submitLabel}
            </Button>
            {mode === 'sign-in' && config.cognito && (
              <Anchor component="button" type="button" onClick={() => go('forgot')}>
                Forgot your password?
              </Anchor>
            )}
            {(mode === 'forgot' || mode === 'reset') && (
              <Group justify="space-between">
                <Anchor component="button" type="button" onClick={() => go('sign-in')}>
                  Back to sign-in
                </Anchor>
                {mode === 'reset' && (
                  <Anchor component="button" type="button" onClick={() => void resend()} disabled={busy}>
                    Send a new code
                  </Anchor>
                )}
              </Group>
            )}
            {config.signUp === 'open' && (mode === 'sign-in' || mode === 'sign-up') && (
              <Anchor component="button" type="button" onClick={() => go(mode === 'sign-in' ? 'sign-up' : 'sign-in')}>
                {mode === 'sign-in' ? 'No account? Sign up' : 'Have an account? Sign in'}
              </Anchor>
            )}
          </Stack>
        </form>
      </Paper>
    </Container>
  );
}
