/**
 * transactAll: a transaction of several conditional actions (a ZIP import's window of reservations) is all or none:
 * false when any condition fails, tried again after a conflict with another transaction, and an error after that
 * stays an error.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { transactAll } from '#adapters/store/dynamodb/transactions';

function cancelled(codes: string[]): TransactionCanceledException {
  return new TransactionCanceledException({
    message: 'Transaction cancelled',
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });
}

/** A client whose sends answer (or throw) the given outcomes in turn. */
function clientAnswering(outcomes: (Error | undefined)[]) {
  let sends = 0;
  const client = {
    send: async () => {
      const outcome = outcomes[sends++];
      if (outcome) throw outcome;
      return {};
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, sends: () => sends };
}

const ITEMS = [{ Put: { TableName: 't', Item: { id: 'a' } } }, { Put: { TableName: 't', Item: { id: 'b' } } }];

describe('transactAll', () => {
  it('answers true when the transaction was written', async () => {
    const { client, sends } = clientAnswering([undefined]);
    expect(await transactAll(client, ITEMS)).toBe(true);
    expect(sends()).toBe(1);
  });

  it('answers false, without trying again, when the condition of any item failed, not only the first', async () => {
    const { client, sends } = clientAnswering([cancelled(['None', 'ConditionalCheckFailed'])]);
    expect(await transactAll(client, ITEMS)).toBe(false);
    expect(sends()).toBe(1);
  });

  it('tries again after meeting another transaction', async () => {
    const conflict = cancelled(['TransactionConflict', 'None']);
    const { client, sends } = clientAnswering([conflict, conflict, undefined]);
    expect(await transactAll(client, ITEMS)).toBe(true);
    expect(sends()).toBe(3);
  });

  it('throws any other error at once', async () => {
    const { client, sends } = clientAnswering([new Error('throttled')]);
    await expect(transactAll(client, ITEMS)).rejects.toThrow('throttled');
    expect(sends()).toBe(1);
  });
});
