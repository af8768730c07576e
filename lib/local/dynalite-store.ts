/**
 * dynalite's own modules, reached in-process: the store a server serves from (dynalite/db `create`), and its
 * validations and actions (what its HTTP handler runs after parsing a request), for code that works on a dynalite
 * server without sending it HTTP requests (lib/local/dynamo-transactions.ts). dynalite 4.0.0 (pinned): the shape
 * relied on is checked where it is used.
 */
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import dynalite from 'dynalite';

export type DynaliteCallback<T = unknown> = (error: unknown, result?: T) => void;

/** A table's description as dynalite stores it (DescribeTable's `Table`). */
export interface DynaliteTable {
  readonly KeySchema: readonly { readonly AttributeName: string; readonly KeyType: string }[];
}

/** What dynalite/db `create` returns: the store every action of one server reads and writes. */
export interface DynaliteStore {
  getTable(name: string, checkStatus: boolean | DynaliteCallback<DynaliteTable>, callback?: DynaliteCallback): void;
  tableDb: Record<'put' | 'del' | 'batch', (...args: unknown[]) => unknown>;
}

/** An error dynalite answers: its HTTP status and JSON body (`__type`, `message`). */
export interface DynaliteError {
  readonly statusCode: number;
  readonly body: { readonly __type: string; readonly message?: string; readonly Message?: string };
}

export function isDynaliteError(error: unknown): error is DynaliteError {
  const { statusCode, body } = (error ?? {}) as Partial<DynaliteError>;
  return typeof statusCode === 'number' && typeof body === 'object' && body !== null;
}

interface DynaliteDb {
  create(options: unknown): DynaliteStore;
}

type DynaliteOptions = NonNullable<Parameters<typeof dynalite>[0]>;

/** A module of the dynalite package by its path inside it (`./db`, `./actions/putItem`), as dynalite loads it. */
export function dynaliteModule<T>(path: string): T {
  return createRequire(require.resolve('dynalite'))(path) as T;
}

const stores = new WeakMap<Server, DynaliteStore>();
/** The stores made while `createDynalite` runs dynalite(); undefined the rest of the time. */
let capturing: DynaliteStore[] | undefined;
let installed = false;

/**
 * `dynalite(options)`, with the store it made remembered for `dynaliteStore(server)`. Other wrappers of dynalite/db
 * `create` (lib/local/dynalite-table-cache.ts) may be installed before or after: each returns the store it was given.
 */
export function createDynalite(options: DynaliteOptions): Server {
  if (!installed) {
    const db = dynaliteModule<DynaliteDb>('./db');
    const create = db.create;
    if (typeof create !== 'function') throw new Error('dynalite/db has no create(): createDynalite does not fit it');
    db.create = (createOptions: unknown) => {
      const store = create(createOptions);
      capturing?.push(store);
      return store;
    };
    installed = true;
  }
  const made: DynaliteStore[] = [];
  capturing = made;
  let server: Server;
  try {
    server = dynalite(options);
  } finally {
    capturing = undefined;
  }
  if (made.length !== 1) throw new Error(`dynalite() made ${made.length} stores: createDynalite does not fit it`);
  stores.set(server, made[0] as DynaliteStore);
  return server;
}

/** The store `server` serves from; the server must come from `createDynalite`. */
export function dynaliteStore(server: Server): DynaliteStore {
  const store = stores.get(server);
  if (!store) throw new Error('This server was not made by createDynalite: its dynalite store is not known');
  return store;
}
