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
