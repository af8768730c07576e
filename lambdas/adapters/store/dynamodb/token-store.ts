/**
 * TokenStore on DynamoDB: organization tokens by the SHA-256 of their value (lib/tables.ts).
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { TokenRecord, TokenStore } from '#ports/stores';

export class DynamoTokenStore implements TokenStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async put(token: TokenRecord): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: token,
        ConditionExpression: 'attribute_not_exists(tokenHash)',
      }),
    );
  }

  async getByHash(tokenHash: string): Promise<TokenRecord | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.tableName, Key: { tokenHash } }));
    return Item as TokenRecord | undefined;
  }
}
