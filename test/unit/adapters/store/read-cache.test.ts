import { READ_CACHE_TTL_MS, readCache, withReadCache } from '#adapters/store/read-cache';

interface Row {
  readonly organizationId: string;
  readonly id: string;
  readonly name: string;
}

/** A store that counts its reads and can hold a read back until the test lets it go. */
class CountingStore {
  readonly rows = new Map<string, Row>();
  reads = 0;
  lists = 0;
  held: ((row: Row | undefined) => void) | undefined;
  hold = false;

  async get(organizationId: string, id: string): Promise<Row | undefined> {
    this.reads++;
    const row = this.rows.get(`${organizationId}/${id}`);
    if (!this.hold) return row;
    return new Promise((resolve) => {
      this.held = () => resolve(row);
    });
  }

  async list(): Promise<Row[]> {
    this.lists++;
    return [...this.rows.values()];
  }

  async rename(organizationId: string, id: string, name: string): Promise<void> {
    this.rows.set(`${organizationId}/${id}`, { organizationId, id, name });
  }
}

function cachedStore() {
  const store = new CountingStore();
  let clock = 0;
  const cached = withReadCache(store, { cached: ['get'], uncached: ['list'], now: () => clock });
  return { store, cached, advance: (ms: number) => (clock += ms) };
}

test('a record read again within the time to live comes from the cache, and from the store after it', async () => {
  const { store, cached, advance } = cachedStore();
  await store.rename('org-1', 'a', 'first');
  expect(await cached.get('org-1', 'a')).toEqual({ organizationId: 'org-1', id: 'a', name: 'first' });
  advance(READ_CACHE_TTL_MS - 1);
  await cached.get('org-1', 'a');
  expect(store.reads).toBe(1);
  advance(1);
  await cached.get('org-1', 'a');
  expect(store.reads).toBe(2);
});

test('the key is every argument: another organization asking for the same id reads the store, and finds nothing', async () => {
  const { store, cached } = cachedStore();
  await store.rename('org-1', 'a', 'first');
  await cached.get('org-1', 'a');
  expect(await cached.get('org-2', 'a')).toBeUndefined();
  expect(store.reads).toBe(2);
});

test('a miss is not kept: a record created elsewhere is found at once', async () => {
  const { store, cached } = cachedStore();
  expect(await cached.get('org-1', 'a')).toBeUndefined();
  await store.rename('org-1', 'a', 'made by another container');
  expect(await cached.get('org-1', 'a')).toMatchObject({ name: 'made by another container' });
});

test('a write through the cache is seen by the next read; uncached reads always go to the store', async () => {
  const { store, cached } = cachedStore();
  await cached.rename('org-1', 'a', 'first');
  await cached.get('org-1', 'a');
  await cached.rename('org-1', 'a', 'second');
  expect(await cached.get('org-1', 'a')).toMatchObject({ name: 'second' });
  await cached.list();
  await cached.list();
  expect(store.lists).toBe(2);
});

test('a read under way across a write does not store what it read before the write', async () => {
  const { store, cached } = cachedStore();
  await store.rename('org-1', 'a', 'old');
  store.hold = true;
  const slow = cached.get('org-1', 'a');
  await cached.rename('org-1', 'a', 'new');
  store.held?.(undefined);
  expect(await slow).toMatchObject({ name: 'old' });
  store.hold = false;
  expect(await cached.get('org-1', 'a')).toMatchObject({ name: 'new' });
});

describe('the fresh view (writes and dashboard reads)', () => {
  function views() {
    const store = new CountingStore();
    const { cached, fresh } = readCache(store, { cached: ['get'], uncached: ['list'], now: () => 0 });
    return { store, cached, fresh };
  }

  test('reads the store every time, whatever the cache holds, and keeps what it read for the cached view', async () => {
    const { store, cached, fresh } = views();
    await store.rename('org-1', 'a', 'before');
    expect(await cached.get('org-1', 'a')).toMatchObject({ name: 'before' });
    await store.rename('org-1', 'a', 'renamed by another container');
    expect(await cached.get('org-1', 'a')).toMatchObject({ name: 'before' });
    expect(await fresh.get('org-1', 'a')).toMatchObject({ name: 'renamed by another container' });
    expect(await fresh.get('org-1', 'a')).toMatchObject({ name: 'renamed by another container' });
    expect(store.reads).toBe(3);
    // The cached view now answers what the fresh read found, without a read of its own.
    expect(await cached.get('org-1', 'a')).toMatchObject({ name: 'renamed by another container' });
    expect(store.reads).toBe(3);
  });

  test('a record the fresh view finds gone is gone from the cached view too', async () => {
    const { store, cached, fresh } = views();
    await store.rename('org-1', 'a', 'kept');
    await cached.get('org-1', 'a');
    store.rows.clear(); // deleted by another container
    expect(await fresh.get('org-1', 'a')).toBeUndefined();
    expect(await cached.get('org-1', 'a')).toBeUndefined();
  });

  test('a write through the fresh view empties the cache the cached view reads', async () => {
    const { cached, fresh } = views();
    await fresh.rename('org-1', 'a', 'first');
    expect(await cached.get('org-1', 'a')).toMatchObject({ name: 'first' });
    await fresh.rename('org-1', 'a', 'second');
    expect(await cached.get('org-1', 'a')).toMatchObject({ name: 'second' });
  });
});
