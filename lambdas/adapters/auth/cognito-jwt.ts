/**
 * The ID tokens of people signed in with Amazon Cognito (cognito-local locally): the signature against the pool's
 * JWKS (fetched once, then cached: `jose`'s remote key set, refreshed when a token names an unknown key), the issuer
 * (the pool), the audience (the app client), `token_use: id`, and the expiry. A token that fails any of them is
 * no person (undefined: the caller answers 401); a key set that cannot be fetched is an error (retry later).
 */
import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import type { PersonToken, PersonVerifier } from '#ports/people';

export interface CognitoSettings {
  /** `https://cognito-idp.<region>.amazonaws.com/<poolId>`, or cognito-local's `http://<host>:<port>/<poolId>`. */
  readonly issuer: string;
  /** The app client id: the tokens' audience. */
  readonly clientId: string;
}

/** How long fetched keys are used before they are fetched again (Cognito rotates rarely; a new `kid` refetches). */
const KEYS_MAX_AGE_MS = 60 * 60 * 1000;

export class CognitoIdTokenVerifier implements PersonVerifier {
  private readonly keys: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly settings: CognitoSettings) {
    this.keys = createRemoteJWKSet(new URL(`${settings.issuer}/.well-known/jwks.json`), {
      cacheMaxAge: KEYS_MAX_AGE_MS,
      timeoutDuration: 5000,
    });
  }

  async verify(token: string, now: Date = new Date()): Promise<PersonToken | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        issuer: this.settings.issuer,
        audience: this.settings.clientId,
        algorithms: ['RS256'],
        currentDate: now,
        requiredClaims: ['sub', 'exp', 'token_use'],
      });
      if (payload.token_use !== 'id' || typeof payload.sub !== 'string' || typeof payload.email !== 'string') {
        return undefined;
      }
      return {
        sub: payload.sub,
        email: payload.email.toLowerCase(),
        // Cognito writes a boolean; a string `true` is taken too (some pools' attribute mappings carry strings).
        emailVerified: payload.email_verified === true || payload.email_verified === 'true',
        expiresAt: new Date((payload.exp ?? 0) * 1000),
      };
    } catch (error) {
      // The key set could not be read: not the token's fault.
      if (error instanceof errors.JWKSTimeout) throw error;
      if (error instanceof errors.JOSEError) return undefined;
      throw error;
    }
  }
}
