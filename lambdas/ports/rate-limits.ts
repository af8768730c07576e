/** The counters of the rate limits (core/auth/rate-limit.ts). Implementation: adapters/store/dynamodb/rate-limit-store.ts. */
export interface RateLimitCounters {
  /**
   * Counts one request against `key` in the fixed window numbered `window` and answers how many that window has
   * counted, this one included. A key keeps only its latest window: a request of a later window starts it anew.
   * `expiresAtEpoch`: when the store may forget the key (TTL), if nothing counts against it meanwhile.
   */
  hit(key: string, window: number, expiresAtEpoch: number): Promise<number>;
}
