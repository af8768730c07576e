/**
 * TokenStore on DynamoDB: organization tokens by the SHA-256 of their value, and by organization through the index
 * `byOrganization` (lib/tables.ts).
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { TokenRecord, TokenStore } from '#ports/stores';
import { unlessConditionFails } from './expressions';
import { collect, queryAll } from './queries';

const BY_ORGANIZATION = 'byOrganization';

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

  async list(organizationId: string): Promise<TokenRecord[]> {
    return collect(
      queryAll<TokenRecord>(this.client, {
        TableName: this.tableName,
        IndexName: BY_ORGANIZATION,
        KeyConditionExpression: 'organizationId = :o',
        ExpressionAttributeValues: { ':o': organizationId },
      }),
    );
  }

  async getById(organizationId: string, tokenId: string): Promise<TokenRecord | undefined> {
    const [found] = await collect(
      queryAll<TokenRecord>(this.client, {
        TableName: this.tableName,
        IndexName: BY_ORGANIZATION,
        KeyConditionExpression: 'organizationId = :o AND tokenId = :t',
        ExpressionAttributeValues: { ':o': organizationId, ':t': tokenId },
      }),
    );
    return found;
  }

  async delete(tokenHash: string): Promise<void> {
    await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { tokenHash } }));
  }

  async recordUse(tokenHash: string, at: string, since: string): Promise<void> {
    await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { tokenHash },
          UpdateExpression: 'SET lastUsedAt = :at',
          // Not a token deleted meanwhile (no bare item), and not again within the minute.
          ConditionExpression:
            'attribute_exists(tokenHash) AND (attribute_not_exists(lastUsedAt) OR lastUsedAt < :since)',
          ExpressionAttributeValues: { ':at': at, ':since': since },
        }),
      ),
    );
  }
}
