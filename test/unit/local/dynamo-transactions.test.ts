/**
 * The local engine's TransactWriteItems (lib/local/dynamo-transactions.ts) against dynalite: all actions or none,
 * DynamoDB's cancellation reasons, its limits, and exact counters under concurrent transactions.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { type LocalDynamo, startDynalite } from '../../helpers/dynalite';

let dynamo: LocalDynamo;
const table = 'items';

beforeAll(async () => {
  dynamo = await startDynalite();
  await dynamo.createTable(table, { partitionKey: 'pk', sortKey: 'sk' });
});
afterAll(() => dynamo.stop());

const get = async (pk: string, sk: string) =>
  (await dynamo.client.send(new GetCommand({ TableName: table, Key: { pk, sk }, ConsistentRead: true }))).Item;

test('every action is written when every condition holds', async () => {
  await dynamo.client.send(new PutCommand({ TableName: table, Item: { pk: 'a', sk: 'doc', status: 'uploaded' } }));
  await dynamo.client.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: table,
            Key: { pk: 'a', sk: 'doc' },
            UpdateExpression: 'SET #s = :ready',
            ConditionExpression: '#s = :uploaded',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':ready': 'ready', ':uploaded': 'uploaded' },
          },
        },
        {
          Update: {
            TableName: table,
            Key: { pk: 'a', sk: '#counts' },
            UpdateExpression: 'ADD ready :one',
            ExpressionAttributeValues: { ':one': 1 },
          },
        },
        { Put: { TableName: table, Item: { pk: 'a', sk: 'new', n: 1 } } },
      ],
    }),
  );
  expect(await get('a', 'doc')).toMatchObject({ status: 'ready' });
  expect(await get('a', '#counts')).toEqual({ pk: 'a', sk: '#counts', ready: 1 });
  expect(await get('a', 'new')).toEqual({ pk: 'a', sk: 'new', n: 1 });
});

test('a failed condition undoes the actions before it and names the action in the reasons', async () => {
  await dynamo.client.send(new PutCommand({ TableName: table, Item: { pk: 'b', sk: 'one', v: 1 } }));
  await dynamo.client.send(new PutCommand({ TableName: table, Item: { pk: 'b', sk: 'two', v: 1 } }));
  const failure = await dynamo.client
    .send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: table, Item: { pk: 'b', sk: 'one', v: 2 } } },
          { Put: { TableName: table, Item: { pk: 'b', sk: 'created', v: 2 } } },
          {
            Delete: {
              TableName: table,
              Key: { pk: 'b', sk: 'two' },
              ConditionExpression: 'v = :two',
              ExpressionAttributeValues: { ':two': 2 },
            },
          },
        ],
      }),
    )
    .catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(TransactionCanceledException);
  expect((failure as TransactionCanceledException).CancellationReasons?.map((reason) => reason.Code)).toEqual([
    'None',
    'None',
    'ConditionalCheckFailed',
  ]);
  expect(await get('b', 'one')).toEqual({ pk: 'b', sk: 'one', v: 1 });
  expect(await get('b', 'created')).toBeUndefined();
  expect(await get('b', 'two')).toEqual({ pk: 'b', sk: 'two', v: 1 });
});

test('two actions on one item and an empty transaction are refused before anything is written', async () => {
  const twice = await dynamo.client
    .send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: table, Item: { pk: 'c', sk: 'x', v: 1 } } },
          { Delete: { TableName: table, Key: { pk: 'c', sk: 'x' } } },
        ],
      }),
    )
    .catch((error: unknown) => error as Error);
  expect(twice).toMatchObject({ name: 'ValidationException', message: expect.stringContaining('one item') });
  expect(await get('c', 'x')).toBeUndefined();
  const empty = await dynamo.client
    .send(new TransactWriteCommand({ TransactItems: [] }))
    .catch((error: unknown) => error as Error);
  expect(empty).toMatchObject({ name: 'ValidationException' });
});

test('concurrent transactions keep a counter exact: each status change counted once, the losers none', async () => {
  const documents = 20;
  for (let i = 0; i < documents; i += 1) {
    await dynamo.client.send(
      new PutCommand({ TableName: table, Item: { pk: 'd', sk: `doc${i}`, status: 'uploaded' } }),
    );
  }
  await dynamo.client.send(
    new PutCommand({ TableName: table, Item: { pk: 'd', sk: '#counts', uploaded: documents, ready: 0 } }),
  );
  // Three racing writers per document: one wins the uploaded → ready change, the others fail its condition.
  const attempts = Array.from({ length: documents * 3 }, (_, n) =>
    dynamo.client
      .send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: table,
                Key: { pk: 'd', sk: `doc${n % documents}` },
                UpdateExpression: 'SET #s = :ready',
                ConditionExpression: '#s = :uploaded',
                ExpressionAttributeNames: { '#s': 'status' },
                ExpressionAttributeValues: { ':ready': 'ready', ':uploaded': 'uploaded' },
              },
            },
            {
              Update: {
                TableName: table,
                Key: { pk: 'd', sk: '#counts' },
                UpdateExpression: 'ADD uploaded :minus, ready :one',
                ExpressionAttributeValues: { ':one': 1, ':minus': -1 },
              },
            },
          ],
        }),
      )
      .then(
        () => 'won',
        (error: Error) => error.name,
      ),
  );
  const outcomes = await Promise.all(attempts);
  expect(outcomes.filter((o) => o === 'won')).toHaveLength(documents);
  expect(outcomes.filter((o) => o === 'TransactionCanceledException')).toHaveLength(documents * 2);
  expect(await get('d', '#counts')).toEqual({ pk: 'd', sk: '#counts', uploaded: 0, ready: documents });
});
