/**
 * RateLimitCounters on DynamoDB: one item per key (`token#<id>`, `organization#<id>`, `work#<id>`) holding its current
 * window and the count in it. A count is one UpdateItem (`ADD` while the window is the item's), or two at the first
 * count of a window (the `ADD` refused, then the window started with a conditional `SET`); TTL removes keys idle for
 * a day.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RateLimitCounters } from '#ports/rate-limits';
import { unlessConditionFails } from './expressions';

/** Rounds of ADD / start-the-window before a request is let through uncounted (only under a clock far off). */
const MAX_TRIES = 3;

export class DynamoRateLimitCounters implements RateLimitCounters {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async hit(key: string, window: number, expiresAtEpoch: number, amount = 1): Promise<number> {
    for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
      const counted = await unlessConditionFails(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { key },
            UpdateExpression: 'ADD #count :amount',
            ConditionExpression: '#window = :window',
            ExpressionAttributeNames: { '#count': 'count', '#window': 'window' },
            ExpressionAttributeValues: { ':amount': amount, ':window': window },
            ReturnValues: 'UPDATED_NEW',
          }),
        ),
      );
      if (counted) return Number(counted.Attributes?.count);
      // The item holds an earlier window (or none): this count starts the new one, unless another did first.
      const started = await unlessConditionFails(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { key },
            UpdateExpression: 'SET #window = :window, #count = :amount, expiresAt = :expires',
            ConditionExpression: 'attribute_not_exists(#window) OR #window < :window',
            ExpressionAttributeNames: { '#count': 'count', '#window': 'window' },
            ExpressionAttributeValues: { ':amount': amount, ':window': window, ':expires': expiresAtEpoch },
          }),
        ),
      );
      if (started) return amount;
    }
    // The item holds a later window than this container's clock: let the count through rather than refuse it.
    return 0;
  }
}
