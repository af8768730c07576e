/**
 * The counters of the rate limits (core/auth/rate-limit.ts) and of the flow work budget (core/flows/work-budget.ts).
 * Implementation: adapters/store/dynamodb/rate-limit-store.ts.
 */
export interface RateLimitCounters {
  /**
   * Counts `amount` (default 1: one request) against `key` in the fixed window numbered `window` and answers how much
   * that window has counted, this amount included. Each window is counted apart: a later one starts at 0, and an
   * earlier one (a clock behind) is counted in its own count. `expiresAtEpoch`: when the store may forget the
   * window's count (TTL).
   */
  hit(key: string, window: number, expiresAtEpoch: number, amount?: number): Promise<number>;
}
