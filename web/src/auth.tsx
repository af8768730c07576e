/**
 * People's sign-in with Cognito through the AWS SDK (docs/console.md, "Sign-in"): the console's app client has no
 * secret, so sign-in, the first-password challenge, refresh, a forgotten password and the refresh token's revocation
 * at sign-out are Cognito's public calls (the only ones the local engine's guard takes unsigned). The session (ID and
 * refresh tokens) lives in sessionStorage: it ends with the tab, and no other origin reads it.
 *
 * Cognito's refusals reach the person as sentences (`AuthError`), one for an unknown address and a wrong password
 * alike ("Incorrect e-mail or password."), as the pool answers with user-existence errors hidden.
 */
import {
  CognitoIdentityProviderClient,
  ConfirmForgotPasswordCommand,
  ForgotPasswordCommand,
  InitiateAuthCommand,
  RespondToAuthChallengeCommand,
  RevokeTokenCommand,
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
  /** Asks Cognito to e-mail a code to reset the password (locally, the runtime prints it). */
  forgotPassword(email: string): Promise<void>;
  /** The code and a new password; then signs in with it (null), or hands the challenge Cognito asks. */
  resetPassword(email: string, code: string, password: string): Promise<NewPasswordChallenge | null>;
  signOut(): void;
  /** A valid ID token, refreshed when it is about to expire; null when signed out. */
  idToken(): Promise<string | null>;
  /**
   * A new ID token now, after the person's organizations changed (an invitation accepted, an organization created):
   * in AWS the API's authorizer keeps its answer for one ID token (their organizations) up to 60 s, and a new token is
   * asked afresh. A refused refresh keeps the current token (it still works; the new organization follows within 60 s).
   */
  renew(): Promise<void>;
}

const AuthContext = createContext<AuthState | null>(null);

/** A refusal of Cognito's, in words for the person. */
export class AuthError extends Error {
  constructor(
    message: string,
    /** Cognito's name for it (NotAuthorizedException, CodeMismatchException, …). */
    readonly code: string,
  ) {
    super(message);
    this.name = 'AuthError';
  }
}

/** What sign-in answers for an unknown address and a wrong password alike. */
export const INCORRECT_SIGN_IN = 'Incorrect e-mail or password.';

const SENTENCES: Record<string, string> = {
  CodeMismatchException: 'That code is not the one we sent. Check it, or ask for a new one.',
  ExpiredCodeException: 'That code has expired. Ask for a new one.',
  LimitExceededException: 'Too many attempts. Wait a while, then try again.',
  TooManyRequestsException: 'Too many attempts. Wait a while, then try again.',
  TooManyFailedAttemptsException: 'Too many attempts. Wait a while, then try again.',
  PasswordResetRequiredException: 'Your password must be reset: use "Forgot your password?".',
  UserNotConfirmedException: 'Your e-mail address is not confirmed yet.',
  InvalidParameterException: 'Something in the form is not valid. Check it and try again.',
  NetworkError: 'The sign-in service cannot be reached. Try again in a moment.',
};

/**
 * Cognito's error as an AuthError. While signing in (`signingIn`), an unknown person and a wrong password are one
 * message, whatever the pool says (cognito-local tells them apart; the pool in AWS does not).
 */
export function authError(error: unknown, signingIn: boolean): AuthError {
  const name = (error as { name?: unknown } | null)?.name;
  const code = typeof name === 'string' ? name : 'Error';
  const message = error instanceof Error ? error.message : String(error);
  if (signingIn && ['NotAuthorizedException', 'UserNotFoundException', 'InvalidPasswordException'].includes(code)) {
    return new AuthError(INCORRECT_SIGN_IN, code);
  }
  if (code === 'InvalidPasswordException') {
    // Cognito's own words after its prefix: "Password does not conform to policy: Password not long enough".
    const why = message.includes(': ') ? message.slice(message.lastIndexOf(': ') + 2) : message;
    return new AuthError(`That password is not allowed: ${why.replace(/\.$/, '')}.`, code);
  }
  if (code === 'NotAuthorizedException' || code === 'UserNotFoundException') {
    return new AuthError('Your session has ended. Sign in again.', code);
  }
  if (error instanceof TypeError) return new AuthError(SENTENCES.NetworkError, code);
  return new AuthError(SENTENCES[code] ?? 'Something went wrong. Try again in a moment.', code);
}

/** The pool's password policy (lib/constructs/people.ts; the API's PASSWORD_RULES): what a new one lacks, or null. */
export function passwordProblem(password: string): string | null {
  if (password.length < 8) return 'at least 8 characters';
  if (password.length > 256) return 'at most 256 characters';
  if (!/[a-z]/.test(password)) return 'a lower-case letter';
  if (!/[A-Z]/.test(password)) return 'an upper-case letter';
  if (!/[0-9]/.test(password)) return 'a digit';
  if (!/[^A-Za-z0-9\s]/.test(password)) return 'a symbol';
  return null;
}

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
    /** Cognito's answer, or its refusal as an AuthError. */
    const send = async <T,>(call: () => Promise<T>, signingIn: boolean): Promise<T> => {
      try {
        return await call();
      } catch (error) {
        throw authError(error, signingIn);
      }
    };
    const signIn = async (email: string, password: string): Promise<NewPasswordChallenge | null> => {
      const address = email.trim().toLowerCase();
      const answer = await send(
        () =>
          need().send(
            new InitiateAuthCommand({
              ClientId: clientId,
              AuthFlow: 'USER_PASSWORD_AUTH',
              AuthParameters: { USERNAME: address, PASSWORD: password },
            }),
          ),
        true,
      );
      if (answer.ChallengeName === 'NEW_PASSWORD_REQUIRED') {
        return { email: address, session: answer.Session as string };
      }
      if (!answer.AuthenticationResult)
        throw new Error(`Cognito asked for ${answer.ChallengeName}, which the console does not support`);
      fromResult(address, answer.AuthenticationResult);
      return null;
    };
    const checked = (password: string) => {
      const problem = passwordProblem(password);
      if (problem) throw new AuthError(`The new password needs ${problem}.`, 'InvalidPasswordException');
    };
    return {
      session,
      signIn,
      async choosePassword(challenge, password) {
        checked(password);
        const answer = await send(
          () =>
            need().send(
              new RespondToAuthChallengeCommand({
                ClientId: clientId,
                ChallengeName: 'NEW_PASSWORD_REQUIRED',
                Session: challenge.session,
                ChallengeResponses: { USERNAME: challenge.email, NEW_PASSWORD: password },
              }),
            ),
          false,
        );
        if (!answer.AuthenticationResult) throw new Error('Cognito did not sign the person in');
        fromResult(challenge.email, answer.AuthenticationResult);
      },
      async forgotPassword(email) {
        // The same answer whether or not the address has an account (the pool hides it; so does the guard locally).
        await send(
          () => need().send(new ForgotPasswordCommand({ ClientId: clientId, Username: email.trim().toLowerCase() })),
          false,
        );
      },
      async resetPassword(email, code, password) {
        checked(password);
        const address = email.trim().toLowerCase();
        await send(
          () =>
            need().send(
              new ConfirmForgotPasswordCommand({
                ClientId: clientId,
                Username: address,
                ConfirmationCode: code.trim(),
                Password: password,
              }),
            ),
          false,
        );
        return signIn(address, password);
      },
      signOut() {
        const refreshToken = stored()?.refreshToken;
        keep(null);
        // The refresh token is revoked too (the pool's token revocation), so a copy of it refreshes nothing.
        if (client && refreshToken) {
          client.send(new RevokeTokenCommand({ ClientId: clientId, Token: refreshToken })).catch(() => undefined);
        }
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
      async renew() {
        const current = stored();
        if (!current || !client) return;
        try {
          const answer = await client.send(
            new InitiateAuthCommand({
              ClientId: clientId,
              AuthFlow: 'REFRESH_TOKEN_AUTH',
              AuthParameters: { REFRESH_TOKEN: current.refreshToken },
            }),
          );
          // Not after a sign-out meanwhile: that session is over.
          const still = stored()?.refreshToken === current.refreshToken;
          if (answer.AuthenticationResult && still) {
            fromResult(current.email, answer.AuthenticationResult, current.refreshToken);
          }
        } catch {
          // The current token stays: it is valid, only its organizations may lag in AWS.
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
