/**
 * The tokens table of a local runtime under test, read and written directly: to prove that a refused
 * POST /dashboard/tokens stored nothing, to delete a token behind the API's back, and to make one expire. Null against a deployment,
 * whose table a test cannot reach.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { hashToken } from '#core/auth/tokens';
import { LOCAL_REGION, loadEngineCredentials } from '../../lib/local/engine-credentials';
import type { TestService } from './service';

export interface TokenTable {
  /** How many tokens the table holds. */
  count(): Promise<number>;
  /** Removes a token's record, as an operator revoking it does. */
  remove(token: string): Promise<void>;
  /** Sets a token's `expiresAt`, as time passing does. */
  expire(token: string, expiresAt: string): Promise<void>;
  close(): void;
}

export function tokenTable(service: TestService): TokenTable | null {
  if (!service.dynamodbEndpoint || !service.dataDir) return null;
  const dynamo = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: service.dynamodbEndpoint,
      region: LOCAL_REGION,
      credentials: loadEngineCredentials(service.dataDir),
    }),
  );
  return {
    count: async () => {
      let total = 0;
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      do {
        const page = await dynamo.send(new ScanCommand({ TableName: 'tokens', Select: 'COUNT', ExclusiveStartKey }));
        total += page.Count ?? 0;
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
      return total;
    },
    remove: async (token) => {
      await dynamo.send(new DeleteCommand({ TableName: 'tokens', Key: { tokenHash: hashToken(token) } }));
    },
    expire: async (token, expiresAt) => {
      await dynamo.send(
        new UpdateCommand({
          TableName: 'tokens',
          Key: { tokenHash: hashToken(token) },
          UpdateExpression: 'SET expiresAt = :e',
          ExpressionAttributeValues: { ':e': expiresAt },
        }),
      );
    },
    close: () => dynamo.destroy(),
  };
}
