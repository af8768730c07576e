/**
 * dynalite reads the table's description from LevelDB and decodes its JSON on every item request (`getTable`):
 * about a ninth of the engines' CPU under the load benchmark (bench/RESULTS.md, "Load"). Here each store dynalite
 * creates keeps the descriptions its item requests read, and forgets them whenever its table sub-database is
 * written (CreateTable, UpdateTable, DeleteTable, a status change): the description an item request sees is the one
 * stored. Control-plane reads (DescribeTable, DeleteTable, UpdateTable ask with `checkStatus` false) and every
 * failure go to LevelDB as before. dynalite 4.0.0 (pinned); the shape it relies on is checked when it is installed.
 */
import { type DynaliteCallback as Callback, type DynaliteStore, dynaliteModule } from './dynalite-store';

interface DynaliteDb {
  create(options: unknown): DynaliteStore;
}

let installed = false;

/** Installs the cache in dynalite's store factory; call before `dynalite()` builds a server. */
export function cacheDynaliteTables(): void {
  if (installed) return;
  const dynaliteDb = dynaliteModule<DynaliteDb>('./db');
  const create = dynaliteDb.create;
  if (typeof create !== 'function') throw new Error('dynalite/db has no create(): the table cache does not fit it');
  dynaliteDb.create = (options: unknown) => {
    const store = create(options);
    const { getTable, tableDb } = store;
    if (typeof getTable !== 'function' || !tableDb || typeof tableDb.put !== 'function') {
      throw new Error('dynalite store has no getTable/tableDb: the table cache does not fit it');
    }
    const cache = new Map<string, unknown>();
    for (const method of ['put', 'del', 'batch'] as const) {
      const write = tableDb[method];
      if (typeof write !== 'function') continue;
      tableDb[method] = (...args: unknown[]) => {
        cache.clear();
        return write.apply(tableDb, args);
      };
    }
    store.getTable = (name, checkStatus, callback) => {
      const done = (typeof checkStatus === 'function' ? checkStatus : callback) as Callback;
      // Control-plane reads (checkStatus false) get a fresh copy they may change before they write it back.
      if (checkStatus === false) return getTable.call(store, name, checkStatus, callback);
      const cached = cache.get(name);
      if (cached) return done(null, cached);
      getTable.call(store, name, (error: unknown, table?: unknown) => {
        if (!error && table) cache.set(name, table);
        done(error, table);
      });
    };
    return store;
  };
  installed = true;
}
