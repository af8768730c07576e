/**
 * A short-lived cache of a store's record reads, per function container (docs/ARCHITECTURE.md, "Caches"): the
 * caller, agent and knowledge base checks every API request makes read the same few records again and again. A
 * record found is kept for `ttlMs`; a miss is never kept (a record created elsewhere is seen at once). Any write
 * through the same store empties the cache, and a read that was under way across a write does not store what it
 * read, so in one process (the local runtime serves every route from one) a change is seen by the next request.
 * Another container sees a change (a deleted knowledge base, a revoked token) within `ttlMs`.
 *
 * The key is the method and every argument, exactly as the store is asked: the cache answers only what the store
 * would have answered for the same arguments, so it cannot carry one tenant's record to another's request.
 */

/** How long a record read is kept (5 s): see the module's note. */
export const READ_CACHE_TTL_MS = 5000;
const MAX_ENTRIES = 1000;

type AsyncMethodNames<T> = {
  [K in keyof T]: T[K] extends (...args: never[]) => Promise<unknown> ? K : never;
}[keyof T];

export interface ReadCacheOptions<T> {
  /** Reads answered from the cache (their results are records or undefined). */
  readonly cached: readonly AsyncMethodNames<T>[];
  /** Reads that go to the store every time and change nothing; every other method is a write. */
  readonly uncached: readonly AsyncMethodNames<T>[];
  readonly ttlMs?: number;
  /** Milliseconds now (tests move it). */
  readonly now?: () => number;
}

/**
 * The cache of a `readCache` itself, for a reader that fills it with records it read some other way (one
 * BatchGetItem for the records of two stores: CachedTenancyReads). `name` and `args` are the store's method and
 * arguments, as the cached view would be asked.
 */
export interface ReadCacheEntries {
  /** The record kept for `name(...args)` and not expired; undefined when none is. */
  peek(name: string, args: readonly unknown[]): unknown;
  /** Taken before a read that will be kept: a write made while it ran keeps it from being stored. */
  mark(): number;
  /** Keeps `value` (a record, or undefined: nothing kept) as the answer to `name(...args)`, read since `mark`. */
  keep(name: string, args: readonly unknown[], value: unknown, mark: number): void;
}

/** `store`, with the `cached` reads kept for a short time; see the module's note. */
export function withReadCache<T extends object>(store: T, options: ReadCacheOptions<T>): T {
  return readCache(store, options).cached;
}

/**
 * Two views of `store` that share one cache: `cached` answers the `cached` reads from it; `fresh` reads the store
 * every time (a decision that writes, or a record shown right after a change made elsewhere, reads it as it is now)
 * and keeps what it read for the cached view. Writes through either empty the cache.
 */
export function readCache<T extends object>(
  store: T,
  options: ReadCacheOptions<T>,
): { cached: T; fresh: T; entries: ReadCacheEntries } {
  const ttlMs = options.ttlMs ?? READ_CACHE_TTL_MS;
  const now = options.now ?? Date.now;
  const entries = new Map<string, { value: unknown; until: number }>();
  /** Moves on with every write: a read started before one does not store its result. */
  let generation = 0;
  const cached = new Set<PropertyKey>(options.cached);
  const uncached = new Set<PropertyKey>(options.uncached);

  const keep = (key: string, value: unknown, started: number) => {
    if (started !== generation) return;
    entries.delete(key);
    if (value === undefined) return;
    if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
    entries.set(key, { value, until: now() + ttlMs });
  };
  const keyOf = (name: string, args: readonly unknown[]) => JSON.stringify([name, ...args]);
  /** The value kept under `key` and not expired; an expired one is dropped. */
  const live = (key: string): unknown => {
    const hit = entries.get(key);
    if (hit && hit.until > now()) return hit.value;
    entries.delete(key);
    return undefined;
  };
  const read = (name: string, method: (...args: unknown[]) => Promise<unknown>) =>
    async function cachedRead(...args: unknown[]): Promise<unknown> {
      const key = keyOf(name, args);
      const hit = live(key);
      if (hit !== undefined) return hit;
      const started = generation;
      const value = await method.apply(store, args);
      keep(key, value, started);
      return value;
    };
  const freshRead = (name: string, method: (...args: unknown[]) => Promise<unknown>) =>
    async function freshRead(...args: unknown[]): Promise<unknown> {
      const key = keyOf(name, args);
      const started = generation;
      const value = await method.apply(store, args);
      keep(key, value, started);
      return value;
    };
  const write = (method: (...args: unknown[]) => Promise<unknown>) =>
    async function writeThrough(...args: unknown[]): Promise<unknown> {
      generation++;
      entries.clear();
      try {
        return await method.apply(store, args);
      } finally {
        generation++;
        entries.clear();
      }
    };

  const view = (readOf: typeof read): T => {
    const wrappers = new Map<PropertyKey, unknown>();
    return new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function' || uncached.has(property)) return value;
        let wrapper = wrappers.get(property);
        if (!wrapper) {
          const method = value as (...args: unknown[]) => Promise<unknown>;
          wrapper = cached.has(property) ? readOf(String(property), method) : write(method);
          wrappers.set(property, wrapper);
        }
        return wrapper;
      },
    });
  };
  const entriesOf: ReadCacheEntries = {
    peek: (name, args) => live(keyOf(name, args)),
    mark: () => generation,
    keep(name, args, value, mark) {
      keep(keyOf(name, args), value, mark);
    },
  };
  return { cached: view(read), fresh: view(freshRead), entries: entriesOf };
}
