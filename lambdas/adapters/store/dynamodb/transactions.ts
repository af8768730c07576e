/**
 * TransactWriteItems the way the stores use it: the one conditional action first, then the writes that go with it
 * (locally served by lib/local/dynamo-transactions.ts, which undoes nothing unless the first action fails).
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';

/** Tries of a transaction that keeps meeting others on the same items. */
const MAX_TRANSACTION_TRIES = 10;

export type TransactItem = Record<string, Record<string, unknown>>;

function conditionFailedFirst(error: unknown): boolean {
  return (
    error instanceof TransactionCanceledException && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed'
  );
}

/** DynamoDB cancels a transaction that meets another on the same item: it is tried again. */
function conflicted(error: unknown): boolean {
  return (
    error instanceof TransactionCanceledException &&
    (error.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict')
  );
}

/** One transaction, tried again when it meets another; false when its first item's condition failed. */
export async function transactUnlessFirstFails(
  client: DynamoDBDocumentClient,
  items: readonly TransactItem[],
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.send(new TransactWriteCommand({ TransactItems: items as never }));
      return true;
    } catch (error) {
      if (conditionFailedFirst(error)) return false;
      if (!conflicted(error) || attempt >= MAX_TRANSACTION_TRIES) throw error;
    }
  }
}

/** The first wait before a large transaction is tried again after a conflict; it doubles, with jitter. */
const CONFLICT_BACKOFF_MS = 25;

/**
 * One transaction of several conditional actions (all or none), tried again when it meets another; false when any
 * action's condition failed, in which case nothing was written. Its items may include a hot one (a dataset's
 * counters, which every status change also writes): a conflict is tried again after a short, growing, jittered wait,
 * so a transaction of many items is not cancelled again and again by the small ones it meets.
 */
export async function transactAll(client: DynamoDBDocumentClient, items: readonly TransactItem[]): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.send(new TransactWriteCommand({ TransactItems: items as never }));
      return true;
    } catch (error) {
      if (
        error instanceof TransactionCanceledException &&
        (error.CancellationReasons ?? []).some((reason) => reason.Code === 'ConditionalCheckFailed')
      ) {
        return false;
      }
      if (!conflicted(error) || attempt >= MAX_TRANSACTION_TRIES) throw error;
      const wait = CONFLICT_BACKOFF_MS * 2 ** (attempt - 1);
      await new Promise((resolve) => setTimeout(resolve, wait / 2 + Math.random() * wait));
    }
  }
}
