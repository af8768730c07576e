/**
 * People's sign-in with Cognito through the AWS SDK (docs/console.md, "Sign-in"): the console's app client has no
 * secret, so sign-in, the first-password challenge, refresh and sign-up are Cognito's public calls. The session (ID and
 * refresh tokens) lives in sessionStorage: it ends with the tab, and no other origin reads it.
 */
import {
  CognitoIdentityProviderClient,
  InitiateAuthCommand,
  RespondToAuthChallengeCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { createContext, type ReactNode, useCallback, useContext, useMemo, useState } from 'react';
import type { ConsoleConfig } from './config';

const STORAGE_KEY = 'agent-platform.session';
/** Refresh this long before the ID token expires. */
const REFRESH_MARGIN_MS = 60_000;

export interface Session {
  readonly email: string;
  readonly idToken: string;
  readonly refreshToken: string;
  /** Epoch milliseconds. */
  readonly expiresAt: number;
}

/** The first sign-in of an invited person: Cognito wants a password of their own. */
export interface NewPasswordChallenge {
  readonly email: string;
  readonly session: string;
}

interface AuthState {
  readonly session: Session | null;
  signIn(email: string, password: string): Promise<NewPasswordChallenge | null>;
  choosePassword(challenge: NewPasswordChallenge, password: string): Promise<void>;
  signOut(): void;
  /** A valid ID token, refreshed when it is about to expire; null when signed out. */
  idToken(): Promise<string | null>;
}

const AuthContext = createContext<AuthState | null>(null);

function stored(): Session | null {
  const text = sessionStorage.getItem(STORAGE_KEY);
  return text ? (JSON.parse(text) as Session) : null;
}

function expiryOf(idToken: string): number {
  const payload = JSON.parse(atob(idToken.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))) as { exp: number };
  return payload.exp * 1000;
}

export function AuthProvider({ config, children }: { config: ConsoleConfig; children: ReactNode }) {
  const [session, setSession] = useState<Session | null>(stored);
  const client = useMemo(
    () =>
      config.cognito
        ? new CognitoIdentityProviderClient({
            region: config.cognito.region,
            ...(config.cognito.endpoint ? { endpoint: config.cognito.endpoint } : {}),
            // Public calls: no credentials are sent, but the SDK wants something to sign with.
            credentials: { accessKeyId: 'console', secretAccessKey: 'console' },
          })
        : null,
    [config],
  );

  const keep = useCallback((next: Session | null) => {
    if (next) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
    else sessionStorage.removeItem(STORAGE_KEY);
    setSession(next);
  }, []);

  const value = useMemo<AuthState>(() => {
    const clientId = config.cognito?.clientId ?? '';
    const need = () => {
      if (!client) throw new Error("This deployment has no people's accounts");
      return client;
    };
    const fromResult = (email: string, result: { IdToken?: string; RefreshToken?: string }, refresh?: string) => {
      const idToken = result.IdToken as string;
      keep({ email, idToken, refreshToken: result.RefreshToken ?? refresh ?? '', expiresAt: expiryOf(idToken) });
    };
    return {
      session,
      async signIn(email, password) {
        const address = email.trim().toLowerCase();
        const answer = await need().send(
          new InitiateAuthCommand({
            ClientId: clientId,
            AuthFlow: 'USER_PASSWORD_AUTH',
            AuthParameters: { USERNAME: address, PASSWORD: password },
          }),
        );
        if (answer.ChallengeName === 'NEW_PASSWORD_REQUIRED') {
          return { email: address, session: answer.Session as string };
        }
        if (!answer.AuthenticationResult)
          throw new Error(`Cognito asked for ${answer.ChallengeName}, which the console does not support`);
        fromResult(address, answer.AuthenticationResult);
        return null;
      },
      async choosePassword(challenge, password) {
        const answer = await need().send(
          new RespondToAuthChallengeCommand({
            ClientId: clientId,
            ChallengeName: 'NEW_PASSWORD_REQUIRED',
            Session: challenge.session,
            ChallengeResponses: { USERNAME: challenge.email, NEW_PASSWORD: password },
          }),
        );
        if (!answer.AuthenticationResult) throw new Error('Cognito did not sign the person in');
        fromResult(challenge.email, answer.AuthenticationResult);
      },
      signOut() {
        keep(null);
      },
      async idToken() {
        const current = stored();
        if (!current) return null;
        if (current.expiresAt - Date.now() > REFRESH_MARGIN_MS) return current.idToken;
        try {
          const answer = await need().send(
            new InitiateAuthCommand({
              ClientId: clientId,
              AuthFlow: 'REFRESH_TOKEN_AUTH',
              AuthParameters: { REFRESH_TOKEN: current.refreshToken },
            }),
          );
          if (!answer.AuthenticationResult) throw new Error('no tokens');
          fromResult(current.email, answer.AuthenticationResult, current.refreshToken);
          return answer.AuthenticationResult.IdToken as string;
        } catch {
          keep(null);
          return null;
        }
      },
    };
  }, [client, config, keep, session]);

  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): AuthState {
  const state = useContext(AuthContext);
  if (!state) throw new Error('useAuth outside AuthProvider');
  return state;
}
