/**
 * The engines' cache of dynalite's table descriptions (lib/local/dynalite-table-cache.ts): item requests read the
 * description once, and a table deleted and made again with another key is seen as it now is.
 */
import type { AddressInfo } from 'node:net';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { cacheDynaliteTables } from '../../../lib/local/dynalite-table-cache';

let server: ReturnType<typeof dynalite>;
let client: DynamoDBClient;

beforeAll(async () => {
  cacheDynaliteTables();
  server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  client = new DynamoDBClient({
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
  });
});
afterAll(async () => {
  client.destroy();
  await new Promise((done) => server.close(done));
});

const create = (key: string) =>
  client.send(
    new CreateTableCommand({
      TableName: 'things',
      KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );

test('item requests follow the table as it is now, after it was deleted and made again with another key', async () => {
  await create('pk');
  await client.send(new PutItemCommand({ TableName: 'things', Item: { pk: { S: 'one' }, v: { S: '1' } } }));
  const first = await client.send(new GetItemCommand({ TableName: 'things', Key: { pk: { S: 'one' } } }));
  expect(first.Item?.v).toEqual({ S: '1' });
  await client.send(new DeleteTableCommand({ TableName: 'things' }));
  await expect(client.send(new GetItemCommand({ TableName: 'things', Key: { pk: { S: 'one' } } }))).rejects.toThrow(
    /not found/i,
  );
  await create('id');
  // The old key is refused, the new one taken: the description read is the new table's.
  await expect(
    client.send(new PutItemCommand({ TableName: 'things', Item: { pk: { S: 'one' }, v: { S: '2' } } })),
  ).rejects.toThrow(/key/i);
  await client.send(new PutItemCommand({ TableName: 'things', Item: { id: { S: 'two' }, v: { S: '2' } } }));
  const second = await client.send(new GetItemCommand({ TableName: 'things', Key: { id: { S: 'two' } } }));
  expect(second.Item?.v).toEqual({ S: '2' });
});
