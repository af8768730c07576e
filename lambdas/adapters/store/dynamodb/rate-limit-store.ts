/**
 * RateLimitCounters on DynamoDB: one item per key and window, `<key>#<window>` (`organization#<id>#<window>`,
 * `token#<id>#<window>`, `work#<id>#<window>`), holding the window's count, so a new window is a new item and every
 * count is one UpdateItem; TTL `expiresAt` removes the item soon after its window ends.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RateLimitCounters } from '#ports/rate-limits';

export class DynamoRateLimitCounters implements RateLimitCounters {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async hit(key: string, window: number, expiresAtEpoch: number, amount = 1): Promise<number> {
    const { Attributes } = await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { key: `${key}#${window}` },
        UpdateExpression: 'ADD #count :amount SET expiresAt = :expires',
        ExpressionAttributeNames: { '#count': 'count' },
        ExpressionAttributeValues: { ':amount': amount, ':expires': expiresAtEpoch },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(Attributes?.count);
  }
}
