/**
 * Reading DynamoDB the way every store does: every page of a Query, and an index a local data folder may lack; and
 * putting or deleting many items at once.
 */
import {
  BatchWriteCommand,
  type BatchWriteCommandInput,
  type DynamoDBDocumentClient,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';

/** Most items one BatchWriteItem takes. */
const BATCH_WRITE_ITEMS = 25;

type WriteRequests = NonNullable<BatchWriteCommandInput['RequestItems']>[string];

/** Deletes the items of `keys`, 25 a request; what DynamoDB leaves unprocessed (throttling) is sent again. */
export async function deleteKeys(
  client: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
): Promise<void> {
  await batchWrite(
    client,
    tableName,
    keys.map((Key) => ({ DeleteRequest: { Key } })),
  );
}

/** Puts `items` (unconditionally), 25 a request; what DynamoDB leaves unprocessed (throttling) is sent again. */
export async function putItems(
  client: DynamoDBDocumentClient,
  tableName: string,
  items: readonly Record<string, unknown>[],
): Promise<void> {
  await batchWrite(
    client,
    tableName,
    items.map((Item) => ({ PutRequest: { Item } })),
  );
}

async function batchWrite(client: DynamoDBDocumentClient, tableName: string, all: WriteRequests): Promise<void> {
  for (let start = 0; start < all.length; start += BATCH_WRITE_ITEMS) {
    let requests: WriteRequests = all.slice(start, start + BATCH_WRITE_ITEMS);
    // The SDK's own retries space the attempts.
    while (requests.length > 0) {
      const { UnprocessedItems } = await client.send(
        new BatchWriteCommand({ RequestItems: { [tableName]: requests } }),
      );
      requests = UnprocessedItems?.[tableName] ?? [];
    }
  }
}

/**
 * A local data folder made before an index existed lacks it (dynalite cannot add one to a table; the runtime warns
 * at start): such a read finds nothing rather than failing what depends on it, e.g. every watchdog tick.
 */
export async function unlessIndexMissing<T>(read: () => Promise<T>, missing: T): Promise<T> {
  try {
    return await read();
  } catch (error) {
    const absent =
      error instanceof Error &&
      error.name === 'ValidationException' &&
      error.message.includes('does not have the specified index');
    if (absent) return missing;
    throw error;
  }
}

/**
 * The items a watchdog looks for in a sparse index (lib/tables.ts): those under the partition `key` whose sort
 * attribute is before `before` (the oldest first), at most `limit`; none where the index is missing.
 */
export async function waitingBefore(
  client: DynamoDBDocumentClient,
  query: {
    readonly table: string;
    readonly index: string;
    readonly key: readonly [name: string, value: string];
    readonly sortKey: string;
    readonly before: string;
    readonly limit: number;
  },
): Promise<Record<string, unknown>[]> {
  const { Items } = await unlessIndexMissing(
    () =>
      client.send(
        new QueryCommand({
          TableName: query.table,
          IndexName: query.index,
          KeyConditionExpression: '#key = :key AND #sort < :before',
          ExpressionAttributeNames: { '#key': query.key[0], '#sort': query.sortKey },
          ExpressionAttributeValues: { ':key': query.key[1], ':before': query.before },
          Limit: query.limit,
        }),
      ),
    { Items: [] } as { Items?: Record<string, unknown>[] },
  );
  return Items ?? [];
}

/** Every item of a Query, page after page. */
export async function* queryAll<T>(client: DynamoDBDocumentClient, input: QueryCommandInput): AsyncGenerator<T> {
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await client.send(new QueryCommand({ ...input, ExclusiveStartKey }));
    for (const item of page.Items ?? []) yield item as T;
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}
