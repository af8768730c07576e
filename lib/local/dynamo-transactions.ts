/**
 * TransactWriteItems for dynalite, which has no transactions (../shared/engines.md). The operation is served in front
 * of dynalite's own handler, from its single-item writes run in-process on the server's store (dynalite's own
 * validations and actions, as its handler runs them for PutItem, UpdateItem and DeleteItem: no SDK, no HTTP, no
 * signature per action): one transaction at a time (a lock), each action as its conditional Put, Update or Delete
 * with the old image returned, and when an action fails its condition, the actions before it undone from those images
 * (in reverse) and TransactionCanceledException answered with one reason per action, as DynamoDB answers it.
 *
 * Every action is validated (dynalite's checks, DynamoDB's messages) and its key read from the table's description
 * before the first is written, so a request refused for its input writes nothing.
 *
 * What it does not give, written down because a reader of the local engine should know (docs/ARCHITECTURE.md,
 * "Local engines"): isolation from single-item reads (a read between an action and its undo sees the undone write),
 * and a single-item write to the same item that lands between an action and its undo is overwritten by the undo.
 * The service's transactions put their one conditional action first and unconditional counter updates after it, so
 * an undo follows only an engine failure. ConditionCheck actions are refused (no use of them here); the limits
 * DynamoDB checks (100 actions, 4 MB, no two on one item) are checked.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  type DynaliteError,
  type DynaliteStore,
  type DynaliteTable,
  dynaliteModule,
  dynaliteStore,
  isDynaliteError,
} from './dynalite-store';

const TARGET = 'DynamoDB_20120810.TransactWriteItems';
/** DynamoDB's own limits: 100 actions, 4 MB a request. */
const MAX_ACTIONS = 100;
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
const AWS_JSON = 'application/x-amz-json-1.0';

/** Attribute values as dynalite reads and answers them (DynamoDB's JSON: `{ S: 'a' }`, `{ N: '1' }`...). */
type Item = Record<string, unknown>;
type Request = Record<string, unknown>;
type Kind = 'putItem' | 'updateItem' | 'deleteItem';

interface Validation {
  readonly types: Record<string, unknown>;
  readonly custom?: (data: Request, store: DynaliteStore) => string | undefined;
}
type Action = (
  store: DynaliteStore,
  data: Request,
  done: (error: unknown, result?: { Attributes?: Item }) => void,
) => void;

/** dynalite's request checks (validations/index.js) and, per operation, its validation and action modules. */
const checks = dynaliteModule<{
  checkTypes(data: Request, types: Validation['types']): Request;
  checkValidations(data: Request, types: Validation['types'], custom: Validation['custom'], store: unknown): void;
}>('./validations');
const dynaliteDb = dynaliteModule<{
  validateItem(item: unknown, table: DynaliteTable): DynaliteError | null | undefined;
  validateKey(key: unknown, table: DynaliteTable): DynaliteError | null | undefined;
  validateUpdates(updates: unknown, expression: unknown, table: DynaliteTable): DynaliteError | null | undefined;
}>('./db');
const operations = Object.fromEntries(
  (['putItem', 'updateItem', 'deleteItem'] as const).map((kind) => [
    kind,
    {
      validation: dynaliteModule<Validation>(`./validations/${kind}`),
      action: dynaliteModule<Action>(`./actions/${kind}`),
    },
  ]),
) as Record<Kind, { validation: Validation; action: Action }>;
for (const [kind, { validation, action }] of Object.entries(operations)) {
  if (typeof validation.types !== 'object' || typeof action !== 'function') {
    throw new Error(`dynalite has no ${kind} validation/action: the transaction emulation does not fit it`);
  }
}
const needed = {
  checkTypes: checks.checkTypes,
  checkValidations: checks.checkValidations,
  validateItem: dynaliteDb.validateItem,
  validateKey: dynaliteDb.validateKey,
  validateUpdates: dynaliteDb.validateUpdates,
};
for (const [name, fn] of Object.entries(needed)) {
  if (typeof fn !== 'function') throw new Error(`dynalite has no ${name}(): the transaction emulation does not fit it`);
}

interface Done {
  readonly table: string;
  readonly key: Item;
  /** The item before the action; undefined when there was none. */
  readonly before: Item | undefined;
}

interface Failure {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

class Refused extends Error {
  constructor(readonly failure: Failure) {
    super(String(failure.body.message ?? failure.body.__type));
  }
}

function validation(message: string): Refused {
  return new Refused({ status: 400, body: { __type: 'com.amazon.coral.validate#ValidationException', message } });
}

/** dynalite's answer to a request it refused, as the transaction's answer. */
function refusal(error: DynaliteError): Refused {
  return new Refused({ status: error.statusCode, body: { ...error.body } });
}

function isConditionFailure(error: unknown): boolean {
  return isDynaliteError(error) && error.body.__type.endsWith('#ConditionalCheckFailedException');
}

/** Serves TransactWriteItems on `server`, a dynalite server made by createDynalite (before it listens or after). */
export function serveTransactions(server: Server): void {
  const store = dynaliteStore(server);
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  let queue: Promise<unknown> = Promise.resolve();

  /** A single-item request checked as dynalite's handler checks it; the data its action takes. */
  const prepare = (kind: Kind, request: Request): Request => {
    const { types, custom } = operations[kind].validation;
    try {
      const data = checks.checkTypes({ ...request }, types);
      checks.checkValidations(data, types, custom, store);
      return data;
    } catch (error) {
      if (isDynaliteError(error)) throw refusal(error);
      throw error;
    }
  };

  const perform = (kind: Kind, data: Request) =>
    new Promise<{ Attributes?: Item }>((resolve, reject) => {
      operations[kind].action(store, data, (error, result) => (error ? reject(error) : resolve(result ?? {})));
    });

  const tableOf = (name: string) =>
    new Promise<DynaliteTable>((resolve, reject) => {
      store.getTable(name, (error, table) => {
        if (error) reject(isDynaliteError(error) ? refusal(error) : error);
        else resolve(table as DynaliteTable);
      });
    });

  const undo = async (done: readonly Done[]) => {
    for (const step of [...done].reverse()) {
      if (step.before) await perform('putItem', prepare('putItem', { TableName: step.table, Item: step.before }));
      else await perform('deleteItem', prepare('deleteItem', { TableName: step.table, Key: step.key }));
    }
  };

  const run = async (actions: unknown): Promise<void> => {
    if (!Array.isArray(actions) || actions.length < 1 || actions.length > MAX_ACTIONS) {
      throw validation(`TransactItems must hold 1 to ${MAX_ACTIONS} actions`);
    }
    const tables = new Map<string, Promise<DynaliteTable>>();
    const targets = new Set<string>();
    const planned: { table: string; key: Item; kind: Kind; data: Request }[] = [];
    for (const action of actions as Record<string, unknown>[]) {
      if (action?.ConditionCheck) throw validation('ConditionCheck is not served by the local engine');
      const [kind, request] = action?.Put
        ? (['putItem', action.Put] as const)
        : action?.Update
          ? (['updateItem', action.Update] as const)
          : action?.Delete
            ? (['deleteItem', action.Delete] as const)
            : [];
      if (!kind || typeof request !== 'object') throw validation('Each action must be one of Put, Update and Delete');
      const data = prepare(kind, { ...(request as Request), ReturnValues: 'ALL_OLD' });
      const table = data.TableName as string;
      let description = tables.get(table);
      if (!description) {
        description = tableOf(table);
        tables.set(table, description);
      }
      const schema = await description;
      const item = (kind === 'putItem' ? data.Item : data.Key) as Item;
      // What the action checks against the table, checked for every action before the first writes.
      const invalid =
        kind === 'putItem'
          ? dynaliteDb.validateItem(item, schema)
          : dynaliteDb.validateKey(item, schema) ||
            (kind === 'updateItem' ? dynaliteDb.validateUpdates(data.AttributeUpdates, data._updates, schema) : null);
      if (invalid) throw refusal(invalid);
      // A copy: an UpdateItem of an item not there yet builds the new item on its Key.
      const key: Item = {};
      for (const { AttributeName } of schema.KeySchema) key[AttributeName] = { ...(item[AttributeName] as object) };
      const target = JSON.stringify([table, key]);
      if (targets.has(target)) throw validation('Transaction request cannot include multiple operations on one item');
      targets.add(target);
      planned.push({ table, key, kind, data });
    }
    const done: Done[] = [];
    for (const [index, { table, key, kind, data }] of planned.entries()) {
      try {
        const { Attributes } = await perform(kind, data);
        done.push({ table, key, before: Attributes && Object.keys(Attributes).length > 0 ? Attributes : undefined });
      } catch (error) {
        await undo(done);
        if (!isConditionFailure(error)) {
          // The engine's own refusal (a ValidationException, say) is the transaction's, as DynamoDB answers it.
          if (!isDynaliteError(error) || error.statusCode >= 500) throw error;
          throw refusal(error);
        }
        const reasons = planned.map((_, i) =>
          i === index
            ? { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' }
            : { Code: 'None' },
        );
        throw new Refused({
          status: 400,
          body: {
            __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
            message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
            CancellationReasons: reasons,
          },
        });
      }
    }
  };

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': AWS_JSON, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.headers['x-amz-target'] !== TARGET) {
      for (const handler of handlers) handler.call(server, req, res);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const work = async () => {
        if (tooLarge) throw validation(`The request exceeds ${MAX_REQUEST_BYTES} bytes`);
        let body: { TransactItems?: unknown };
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          throw new Refused({
            status: 400,
            body: { __type: 'com.amazon.coral.service#SerializationException', message: 'The request is not JSON' },
          });
        }
        await run(body?.TransactItems ?? []);
      };
      // One transaction at a time: the next starts when this one has written or undone everything.
      const turn = queue.then(work);
      queue = turn.catch(() => undefined);
      turn.then(
        () => answer(res, 200, {}),
        (error: unknown) => {
          if (error instanceof Refused) {
            answer(res, error.failure.status, error.failure.body);
            return;
          }
          answer(res, 500, {
            __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
            message: (error as Error).message,
          });
        },
      );
    });
  });
}
