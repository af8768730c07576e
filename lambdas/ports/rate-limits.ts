/**
 * The counters of the rate limits (core/auth/rate-limit.ts) and of the flow work budget (core/flows/work-budget.ts).
 * Implementation: adapters/store/dynamodb/rate-limit-store.ts.
 */
export interface RateLimitCounters {
  /**
   * Counts `amount` (default 1: one request) against `key` in the fixed window numbered `window` and answers how much
   * that window has counted, this amount included. A key keeps only its latest window: a count of a later window
   * starts it anew. `expiresAtEpoch`: when the store may forget the key (TTL), if nothing counts against it meanwhile.
   */
  hit(key: string, window: number, expiresAtEpoch: number, amount?: number): Promise<number>;
}
