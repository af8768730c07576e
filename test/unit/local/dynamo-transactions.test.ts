/**
 * The local engine's TransactWriteItems (lib/local/dynamo-transactions.ts) against dynalite: all actions or none,
 * DynamoDB's cancellation reasons, its limits and dynalite's validation messages, exact counters under concurrent
 * transactions, and no HTTP request to the server for the actions (they run on dynalite's store in-process).
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
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

test('the actions run on dynalite in-process: one TransactWriteItems of 5 actions is one request to the server', async () => {
  let requests = 0;
  const count = () => {
    requests += 1;
  };
  dynamo.server.on('request', count);
  try {
    await dynamo.client.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: table, Item: { pk: 'e', sk: 'one', v: 1 } } },
          { Put: { TableName: table, Item: { pk: 'e', sk: 'two', v: 2 } } },
          {
            Update: {
              TableName: table,
              Key: { pk: 'e', sk: 'three' },
              UpdateExpression: 'ADD v :three',
              ExpressionAttributeValues: { ':three': 3 },
            },
          },
          { Delete: { TableName: table, Key: { pk: 'e', sk: 'four' } } },
          {
            Put: {
              TableName: table,
              Item: { pk: 'e', sk: 'five', v: 5 },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );
  } finally {
    dynamo.server.off('request', count);
  }
  expect(requests).toBe(1);
  expect(await get('e', 'three')).toEqual({ pk: 'e', sk: 'three', v: 3 });
  expect(await get('e', 'five')).toEqual({ pk: 'e', sk: 'five', v: 5 });
});

test('an update of an item not there yet is undone by deleting it, the item it overwrote restored', async () => {
  await dynamo.client.send(
    new PutCommand({
      TableName: table,
      Item: { pk: 'f', sk: 'kept', v: 1, tags: ['a'], bin: new Uint8Array([1, 2, 250]) },
    }),
  );
  const failure = await dynamo.client
    .send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: table,
              Key: { pk: 'f', sk: '#counts' },
              UpdateExpression: 'ADD ready :one SET note = :note',
              ExpressionAttributeValues: { ':one': 1, ':note': 'x' },
            },
          },
          {
            Update: {
              TableName: table,
              Key: { pk: 'f', sk: 'kept' },
              UpdateExpression: 'SET v = :two REMOVE tags',
              ExpressionAttributeValues: { ':two': 2 },
            },
          },
          {
            Put: {
              TableName: table,
              Item: { pk: 'f', sk: 'kept-too', v: 1 },
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
        ],
      }),
    )
    .catch((error: unknown) => error as TransactionCanceledException);
  expect(failure).toBeInstanceOf(TransactionCanceledException);
  expect(failure).toMatchObject({
    message:
      'Transaction cancelled, please refer cancellation reasons for specific reasons [None, None, ConditionalCheckFailed]',
    CancellationReasons: [
      { Code: 'None' },
      { Code: 'None' },
      { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' },
    ],
  });
  expect(await get('f', '#counts')).toBeUndefined();
  expect(await get('f', 'kept')).toEqual({
    pk: 'f',
    sk: 'kept',
    v: 1,
    tags: ['a'],
    bin: new Uint8Array([1, 2, 250]),
  });
  expect(await get('f', 'kept-too')).toBeUndefined();
});

test("input dynalite refuses is refused with DynamoDB's message before any action is written", async () => {
  const refused = (TransactItems: NonNullable<TransactWriteCommandInput['TransactItems']>) =>
    dynamo.client.send(new TransactWriteCommand({ TransactItems })).catch((error: unknown) => error as Error);
  const first = { Put: { TableName: table, Item: { pk: 'g', sk: 'first' } } };

  // An update expression that does not parse, in the second action: the first is not written either.
  expect(
    await refused([first, { Update: { TableName: table, Key: { pk: 'g', sk: 'x' }, UpdateExpression: 'SET' } }]),
  ).toMatchObject({
    name: 'ValidationException',
    message: expect.stringMatching(/^Invalid UpdateExpression: Syntax error/),
  });
  // A key the table does not have.
  expect(await refused([first, { Put: { TableName: table, Item: { pk: 'g' } } }])).toMatchObject({
    name: 'ValidationException',
    message: 'One or more parameter values were invalid: Missing the key sk in the item',
  });
  expect(await refused([first, { Delete: { TableName: table, Key: { pk: 'g', sk: 'x', other: 1 } } }])).toMatchObject({
    name: 'ValidationException',
    message: 'The provided key element does not match the schema',
  });
  // An update of a key attribute.
  expect(
    await refused([
      first,
      {
        Update: {
          TableName: table,
          Key: { pk: 'g', sk: 'x' },
          UpdateExpression: 'SET sk = :sk',
          ExpressionAttributeValues: { ':sk': 'y' },
        },
      },
    ]),
  ).toMatchObject({ name: 'ValidationException', message: expect.stringContaining('part of the key') });
  // A table that is not there.
  expect(await refused([first, { Put: { TableName: 'missing', Item: { pk: 'g', sk: 'x' } } }])).toMatchObject({
    name: 'ResourceNotFoundException',
    message: 'Requested resource not found',
  });
  // ConditionCheck is refused (none is used by the service).
  expect(
    await refused([
      first,
      {
        ConditionCheck: {
          TableName: table,
          Key: { pk: 'g', sk: 'x' },
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    ]),
  ).toMatchObject({ name: 'ValidationException', message: expect.stringContaining('ConditionCheck') });
  expect(await get('g', 'first')).toBeUndefined();
});

test('more than 100 actions, or more than 4 MB, are refused', async () => {
  const puts = (count: number, size: number) =>
    Array.from({ length: count }, (_, n) => ({
      Put: { TableName: table, Item: { pk: 'h', sk: `item${n}`, data: 'x'.repeat(size) } },
    }));
  expect(
    await dynamo.client.send(new TransactWriteCommand({ TransactItems: puts(101, 1) })).catch((error: Error) => error),
  ).toMatchObject({ name: 'ValidationException', message: expect.stringContaining('1 to 100 actions') });
  expect(
    await dynamo.client
      .send(new TransactWriteCommand({ TransactItems: puts(11, 390_000) }))
      .catch((error: Error) => error),
  ).toMatchObject({ name: 'ValidationException', message: expect.stringContaining('exceeds 4194304 bytes') });
  expect(await get('h', 'item0')).toBeUndefined();
});
