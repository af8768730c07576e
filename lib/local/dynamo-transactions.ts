/**
 * TransactWriteItems for dynalite, which has no transactions (../shared/engines.md). The operation is served in front
 * of dynalite's own handler, from its single-item writes through the same server: one transaction at a time (a
 * lock), each action as its conditional Put, Update or Delete with the old image returned, and when an action fails
 * its condition, the actions before it undone from those images (in reverse) and TransactionCanceledException
 * answered with one reason per action, as DynamoDB answers it.
 *
 * What it does not give, written down because a reader of the local engine should know (docs/ARCHITECTURE.md,
 * "Local engines"): isolation from single-item reads (a read between an action and its undo sees the undone write),
 * and a single-item write to the same item that lands between an action and its undo is overwritten by the undo.
 * The service's transactions put their one conditional action first and unconditional counter updates after it, so
 * an undo follows only an engine failure. ConditionCheck actions are refused (no use of them here); the limits
 * DynamoDB checks (100 actions, no two on one item) are checked.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AttributeValue,
  DeleteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
  type TransactWriteItem,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';

const TARGET = 'DynamoDB_20120810.TransactWriteItems';
/** DynamoDB's own limits: 100 actions, 4 MB a request. */
const MAX_ACTIONS = 100;
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
const AWS_JSON = 'application/x-amz-json-1.0';

type Item = Record<string, AttributeValue>;

interface Done {
  readonly table: string;
  readonly key: Item;
  /** The item before the action; undefined when there was none. */
  readonly before: Item | undefined;
}

interface Failure {
  readonly status: number;
  readonly type: string;
  readonly message: string;
  readonly reasons?: { Code: string; Message?: string }[];
}

class Refused extends Error {
  constructor(readonly failure: Failure) {
    super(failure.message);
  }
}

function validation(message: string): Refused {
  return new Refused({ status: 400, type: 'com.amazon.coral.validate#ValidationException', message });
}

/**
 * Serves TransactWriteItems on `server` (a dynalite server, before it listens or after). `credentials` sign the
 * single-item writes it sends back to the same server.
 */
export function serveTransactions(
  server: Server,
  credentials: { accessKeyId: string; secretAccessKey: string },
  region: string,
): void {
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  let client: DynamoDBClient | undefined;
  const keyNames = new Map<string, Promise<string[]>>();
  let queue: Promise<unknown> = Promise.resolve();
  server.on('close', () => client?.destroy());

  const engine = () => {
    if (!client) {
      const { address, port, family } = server.address() as AddressInfo;
      const host =
        address === '0.0.0.0' || address === '::' ? '127.0.0.1' : family === 'IPv6' ? `[${address}]` : address;
      client = new DynamoDBClient({
        endpoint: `http://${host}:${port}`,
        region,
        credentials: { ...credentials },
        maxAttempts: 1,
      });
    }
    return client;
  };

  const keyOf = async (table: string, item: Item): Promise<Item> => {
    let names = keyNames.get(table);
    if (!names) {
      names = engine()
        .send(new DescribeTableCommand({ TableName: table }))
        .then(({ Table }) => (Table?.KeySchema ?? []).map((key) => key.AttributeName as string));
      names.catch(() => keyNames.delete(table));
      keyNames.set(table, names);
    }
    const key: Item = {};
    for (const name of await names) {
      const value = item[name];
      if (value === undefined) throw validation(`One of the required keys was not given a value (${table}.${name})`);
      key[name] = value;
    }
    return key;
  };

  const undo = async (done: readonly Done[]) => {
    for (const step of [...done].reverse()) {
      if (step.before) await engine().send(new PutItemCommand({ TableName: step.table, Item: step.before }));
      else await engine().send(new DeleteItemCommand({ TableName: step.table, Key: step.key }));
    }
  };

  /** One action as its single-item write; the item before it, or undefined when there was none. */
  const apply = async (action: TransactWriteItem): Promise<Item | undefined> => {
    const { Attributes } = action.Put
      ? await engine().send(new PutItemCommand({ ...action.Put, ReturnValues: 'ALL_OLD' } as never))
      : action.Update
        ? await engine().send(new UpdateItemCommand({ ...action.Update, ReturnValues: 'ALL_OLD' } as never))
        : await engine().send(new DeleteItemCommand({ ...action.Delete, ReturnValues: 'ALL_OLD' } as never));
    return Attributes && Object.keys(Attributes).length > 0 ? Attributes : undefined;
  };

  const run = async (actions: TransactWriteItem[]): Promise<void> => {
    if (!Array.isArray(actions) || actions.length < 1 || actions.length > MAX_ACTIONS) {
      throw validation(`TransactItems must hold 1 to ${MAX_ACTIONS} actions`);
    }
    const targets = new Set<string>();
    const planned: { table: string; key: Item; action: TransactWriteItem }[] = [];
    for (const action of actions) {
      if (action.ConditionCheck) throw validation('ConditionCheck is not served by the local engine');
      const table = action.Put?.TableName ?? action.Update?.TableName ?? action.Delete?.TableName;
      if (!table) throw validation('Each action must be one of Put, Update and Delete');
      const key = action.Put
        ? await keyOf(table, action.Put.Item ?? {})
        : await keyOf(table, (action.Update ?? action.Delete)?.Key ?? {});
      const target = JSON.stringify([table, key]);
      if (targets.has(target)) throw validation('Transaction request cannot include multiple operations on one item');
      targets.add(target);
      planned.push({ table, key, action });
    }
    const done: Done[] = [];
    for (const [index, { table, key, action }] of planned.entries()) {
      try {
        done.push({ table, key, before: await apply(action) });
      } catch (error) {
        await undo(done);
        if ((error as Error).name !== 'ConditionalCheckFailedException') {
          // The engine's own refusal (a ValidationException, say) is the transaction's, as DynamoDB answers it.
          const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
          if (status === undefined || status >= 500) throw error;
          throw new Refused({ status, type: (error as Error).name, message: (error as Error).message });
        }
        const reasons = planned.map((_, i) =>
          i === index
            ? { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' }
            : { Code: 'None' },
        );
        throw new Refused({
          status: 400,
          type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
          message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
          reasons,
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
        let body: { TransactItems?: TransactWriteItem[] };
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          throw new Refused({
            status: 400,
            type: 'com.amazon.coral.service#SerializationException',
            message: 'The request is not JSON',
          });
        }
        await run(body.TransactItems ?? []);
      };
      // One transaction at a time: the next starts when this one has written or undone everything.
      const turn = queue.then(work);
      queue = turn.catch(() => undefined);
      turn.then(
        () => answer(res, 200, {}),
        (error: unknown) => {
          if (error instanceof Refused) {
            const { status, type, message, reasons } = error.failure;
            answer(res, status, { __type: type, message, ...(reasons ? { CancellationReasons: reasons } : {}) });
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
