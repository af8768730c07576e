/** People signed in with Cognito (docs/people.md). Implementation: adapters/auth/cognito-jwt.ts. */
export interface PersonToken {
  /** Cognito's id of the person (stable, never reused): who the person is. */
  readonly sub: string;
  /** Lower case. */
  readonly email: string;
  /** Whether the pool has verified that the person receives mail at `email` (the `email_verified` claim). */
  readonly emailVerified: boolean;
  /** When the token stops being accepted. */
  readonly expiresAt: Date;
}

export interface PersonVerifier {
  /** The person a valid ID token names; undefined for any token that is not one (forged, expired, another client). */
  verify(token: string, now?: Date): Promise<PersonToken | undefined>;
}

/** What Cognito (or cognito-local) answers a sign-up. */
export type SignUpOutcome =
  | { readonly kind: 'created'; readonly sub: string; readonly confirmed: boolean }
  | { readonly kind: 'exists' }
  /** The directory refused a value (the password by its policy, an e-mail it does not take); in its own words. */
  | { readonly kind: 'refused'; readonly field: 'email' | 'password'; readonly message: string };

/** People's accounts in the user pool (Cognito). Implementation: adapters/auth/cognito-directory.ts. */
export interface PeopleDirectory {
  /** A person signs up with their own password; confirmed at once where the deployment says so (locally). */
  signUp(email: string, password: string): Promise<SignUpOutcome>;
  /**
   * An account for an invited address: the pool creates the person with a temporary password and sends it (by e-mail
   * in AWS; printed locally). `exists` when the pool has the person already: nothing is sent, their password stays
   * theirs.
   */
  invite(email: string): Promise<'invited' | 'exists'>;
  /** The `sub` of the person whose account has this address; undefined when the pool has none. */
  lookup(email: string): Promise<string | undefined>;
}
