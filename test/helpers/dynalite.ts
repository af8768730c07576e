/** An in-process dynalite for tests of DynamoDB adapters: a document client on a free port, and its tables by schema. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynalite } from '../../lib/local/dynalite-store';
import { serveTransactions } from '../../lib/local/dynamo-transactions';
import { createTableInput } from '../../lib/local/engines';
import type { TableSchema } from '../../lib/tables';

export interface LocalDynamo {
  readonly client: DynamoDBDocumentClient;
  /** Where it answers, for a client made elsewhere (a handler's, through AWS_ENDPOINT_URL_DYNAMODB). */
  readonly endpoint: string;
  /** The dynalite server itself (its 'request' events count the HTTP requests it gets). */
  readonly server: Server;
  /** Creates `name` with the keys and indexes of `schema` (lib/tables.ts), as the local runtime does. */
  createTable(name: string, schema: TableSchema): Promise<string>;
  stop(): Promise<void>;
}

export async function startDynalite(): Promise<LocalDynamo> {
  const server = createDynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  serveTransactions(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  return {
    client,
    endpoint: `http://127.0.0.1:${port}`,
    server,
    createTable: async (name, schema) => {
      await client.send(new CreateTableCommand(createTableInput(name, schema)));
      return name;
    },
    stop: async () => {
      client.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
