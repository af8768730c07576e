/**
 * Rate limits of the API (issue: "protected from a runaway client"): per token and per organization, a burst of
 * `burst` requests in a window of `burst / perSecond` seconds (defaults 100 in 2 s: 50 a second sustained). Fixed
 * windows counted in a store shared by every function (ports/rate-limits.ts), so the same limit holds across
 * Lambda containers and processes.
 *
 * One count per request (docs/rate-limits.md, "Choices"): the organization's. Its tokens have the same burst, and
 * every request a token makes in the organization counts there, so a token never counts more than its organization
 * in a window: the organization's count is the tighter of the two, and a token's own count would never refuse a
 * request the organization's lets through. A caller acting in no organization is counted by its token.
 *
 * Accuracy (docs/rate-limits.md): a fixed window lets up to 2 × burst through around a window's edge, and a refused
 * request still counts in its window.
 */
import { AppError } from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import type { RateLimitCounters } from '#ports/rate-limits';

export interface RateLimitSettings {
  /** Requests a second, sustained. */
  readonly perSecond: number;
  /** Requests one window takes; the window lasts burst / perSecond seconds. */
  readonly burst: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitSettings = { perSecond: 50, burst: 100 };

/**
 * How long a window's count outlives the window before the store's TTL may remove it: a window is never counted
 * again once it has ended, but for a clock behind (a function's clock is well within a second of the others').
 */
const COUNTER_TTL_SECONDS = 60;

export interface RateLimitVerdict {
  readonly allowed: boolean;
  /** Requests a window takes (RateLimit-Limit). */
  readonly limit: number;
  /** Requests left in this window for the tighter of the token's and the organization's counts (RateLimit-Remaining). */
  readonly remaining: number;
  /** Whole seconds until the window ends (RateLimit-Reset; Retry-After when refused). */
  readonly resetSeconds: number;
  /** The window's length in seconds (RateLimit-Policy). */
  readonly windowSeconds: number;
}

export class RateLimitedError extends AppError {
  constructor(
    readonly verdict: RateLimitVerdict,
    /** Which limit refused (the flow work budget's: core/flows/work-budget.ts); by default the requests'. */
    message = `Too many requests: at most ${verdict.limit} every ${verdict.windowSeconds} s for this token and for its organization; retry in ${verdict.resetSeconds} s`,
  ) {
    super(429, 'RATE_LIMITED', message);
  }
}

/**
 * The fixed window of `settings` that `nowMs` falls in: its number, when its counters may expire, and the verdict of
 * what was counted in it. Shared by the requests' limits and the flow work budget (core/flows/work-budget.ts).
 */
export function fixedWindow(settings: RateLimitSettings, nowMs: number) {
  const windowMs = Math.round((settings.burst / settings.perSecond) * 1000);
  const window = Math.floor(nowMs / windowMs);
  const endsAt = (window + 1) * windowMs;
  return {
    window,
    expiresAtEpoch: Math.ceil(endsAt / 1000) + COUNTER_TTL_SECONDS,
    verdict: (used: number): RateLimitVerdict => ({
      allowed: used <= settings.burst,
      limit: settings.burst,
      remaining: Math.max(0, settings.burst - used),
      resetSeconds: Math.max(1, Math.ceil((endsAt - nowMs) / 1000)),
      windowSeconds: windowMs / 1000,
    }),
  };
}

export async function checkRateLimit(
  counters: RateLimitCounters,
  settings: RateLimitSettings,
  /** A person acting in no organization (their own routes: core/dashboard/my-account.ts) is counted by token only. */
  caller: Pick<Caller, 'tokenId'> & { readonly organizationId?: string },
  nowMs: number,
): Promise<RateLimitVerdict> {
  const { window, expiresAtEpoch, verdict } = fixedWindow(settings, nowMs);
  const key = caller.organizationId === undefined ? `token#${caller.tokenId}` : `organization#${caller.organizationId}`;
  return verdict(await counters.hit(key, window, expiresAtEpoch));
}
