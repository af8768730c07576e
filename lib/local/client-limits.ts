/**
 * Per-client limits of the local API Gateway (docs/rate-limits.md, "Per client"): what no token pays for. A client is
 * its source address. Sign-ups (and organizations founded) are counted per client, and so are the requests whose
 * credential the authorizer refused: past the limit, a client's sign-ups, or its requests that need a credential, are
 * answered 429 until the window ends, before the authorizer runs or any body is read. In AWS the web ACL's rate rules
 * stand here (lib/constructs/api-firewall.ts).
 */

export interface ClientLimitSettings {
  /** Sign-ups (POST /dashboard/signup, POST /dashboard/me/organizations) one client may make in five minutes. */
  readonly signUpsPer5Minutes: number;
  /** Requests one client may send with no valid credential in a minute. */
  readonly failedAuthPerMinute: number;
}

/**
 * Sign-ups as the stack's web ACL counts them (lib/constructs/api-firewall.ts, DEFAULT_SIGNUP_LIMIT_PER_5_MINUTES, 10
 * in 5 minutes); requests without a valid credential, 60 a minute (WAF cannot tell them apart: its rule of all requests
 * stands there).
 */
export const DEFAULT_CLIENT_LIMITS: ClientLimitSettings = { signUpsPer5Minutes: 10, failedAuthPerMinute: 60 };

/**
 * The limits of the environment: SIGNUP_LIMIT_PER_5_MINUTES and FAILED_AUTH_LIMIT_PER_MINUTE, each a whole number from
 * 1 (default DEFAULT_CLIENT_LIMITS); anything else stops the start.
 */
export function clientLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): ClientLimitSettings {
  const read = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a whole number from 1, got ${raw}`);
    return value;
  };
  return {
    signUpsPer5Minutes: read('SIGNUP_LIMIT_PER_5_MINUTES', DEFAULT_CLIENT_LIMITS.signUpsPer5Minutes),
    failedAuthPerMinute: read('FAILED_AUTH_LIMIT_PER_MINUTE', DEFAULT_CLIENT_LIMITS.failedAuthPerMinute),
  };
}

/** Clients one counter remembers; past it, the one seen least recently is forgotten (a flood of addresses costs bounded memory). */
const MAX_CLIENTS = 10_000;

/** A fixed-window count per client, in memory (the local runtime is one process). */
export class ClientCounter {
  private readonly counts = new Map<string, { window: number; count: number }>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until `client`'s window ends when it is over the limit; 0 when it may go on. */
  blockedFor(client: string): number {
    const entry = this.counts.get(client);
    const window = Math.floor(this.now() / this.windowMs);
    if (!entry || entry.window !== window || entry.count < this.limit) return 0;
    return Math.max(1, Math.ceil(((window + 1) * this.windowMs - this.now()) / 1000));
  }

  /** Counts one for `client`. */
  hit(client: string): void {
    const window = Math.floor(this.now() / this.windowMs);
    const entry = this.counts.get(client);
    this.counts.delete(client);
    this.counts.set(client, { window, count: entry && entry.window === window ? entry.count + 1 : 1 });
    if (this.counts.size > MAX_CLIENTS) this.counts.delete(this.counts.keys().next().value as string);
  }
}

export interface ClientLimits {
  readonly signUps: ClientCounter;
  readonly failedAuth: ClientCounter;
}

export function clientLimits(settings: ClientLimitSettings, now: () => number = Date.now): ClientLimits {
  return {
    signUps: new ClientCounter(settings.signUpsPer5Minutes, 5 * 60_000, now),
    failedAuth: new ClientCounter(settings.failedAuthPerMinute, 60_000, now),
  };
}
