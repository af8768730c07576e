/**
 * ScheduleFireLog on DynamoDB, in the rate limits table (lib/tables.ts: short-lived keys, TTL `expiresAt`): one item
 * per schedule trigger, `key` = `schedule#<agentId>#<environment>#<trigger>`, holding `sentThrough` (epoch ms of the
 * latest fire whose message went out). Read with GetItem, moved forward with one conditional UpdateItem that never
 * moves it back; TTL removes it a day after that fire, long after the tick's look-back has passed it.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ScheduleFireLog } from '#ports/flows';
import { unlessConditionFails } from './expressions';

/** Kept this long after its latest fire: well past any look-back (core/flows/scheduler.ts). */
const RETENTION_SECONDS = 86_400;

export class DynamoScheduleFireLog implements ScheduleFireLog {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async sentThrough(trigger: string): Promise<number | null> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { key: `schedule#${trigger}` },
        ConsistentRead: true,
        ProjectionExpression: 'sentThrough',
      }),
    );
    return typeof Item?.sentThrough === 'number' ? Item.sentThrough : null;
  }

  async markSent(trigger: string, atMs: number): Promise<void> {
    // Refused when a later fire is stored already (another tick got further): that one stays.
    await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key: `schedule#${trigger}` },
          UpdateExpression: 'SET sentThrough = :at, expiresAt = :expires',
          ConditionExpression: 'attribute_not_exists(sentThrough) OR sentThrough < :at',
          ExpressionAttributeValues: { ':at': atMs, ':expires': Math.floor(atMs / 1000) + RETENTION_SECONDS },
        }),
      ),
    );
  }
}
