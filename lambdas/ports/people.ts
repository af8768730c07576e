/** People signed in with Cognito (docs/people.md). Implementation: adapters/auth/cognito-jwt.ts. */
export interface PersonToken {
  /** Cognito's id of the person (stable, never reused). */
  readonly sub: string;
  /** Lower case. */
  readonly email: string;
  /** When the token stops being accepted. */
  readonly expiresAt: Date;
}

export interface PersonVerifier {
  /** The person a valid ID token names; undefined for any token that is not one (forged, expired, another client). */
  verify(token: string, now?: Date): Promise<PersonToken | undefined>;
}

/** What Cognito (or cognito-local) answers a sign-up. */
export type SignUpOutcome =
  | { readonly kind: 'created'; readonly confirmed: boolean }
  | { readonly kind: 'exists' }
  /** The directory refused a value (the password by its policy, an e-mail it does not take); in its own words. */
  | { readonly kind: 'refused'; readonly field: 'email' | 'password'; readonly message: string };

/** People's accounts in the user pool (Cognito). Implementation: adapters/auth/cognito-directory.ts. */
export interface PeopleDirectory {
  /** A person signs up with their own password; confirmed at once where the deployment says so (locally). */
  signUp(email: string, password: string): Promise<SignUpOutcome>;
  /**
   * An invitation: the pool creates the person with a temporary password and sends it (by e-mail in AWS; printed
   * locally). `exists` when the pool has the person already: nothing is sent, their password stays theirs.
   */
  invite(email: string): Promise<'invited' | 'exists'>;
  /** Removes the person from the pool; nothing when they are not in it. */
  remove(email: string): Promise<void>;
}
