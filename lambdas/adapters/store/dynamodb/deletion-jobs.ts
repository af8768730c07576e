/**
 * The deletion job a row carries while it is `deleting` (a knowledge base, an agent: core/processing/*-deletion.ts),
 * kept the same way in both tables: `status: deleting`, `deletion.page`, `updatedAt` (the job's last progress), and
 * `pendingKey` for the table's sparse `deleting` index, through which the watchdog finds a job that stopped moving.
 */
import { DeleteCommand, type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unlessConditionFails } from './expressions';
import { waitingBefore } from './queries';

/** Value of `status` and of `pendingKey` while a row is being deleted. */
export const DELETING = 'deleting';

export class DeletionJobRows {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Moves the job of the row at `key` from `page` to `page + 1`; false when it is not at `page` or is gone. */
  async advance(key: Record<string, string>, page: number, updatedAt: string): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET deletion.#page = :next, updatedAt = :now',
          ConditionExpression: '#status = :deleting AND deletion.#page = :page',
          ExpressionAttributeNames: { '#status': 'status', '#page': 'page' },
          ExpressionAttributeValues: { ':deleting': DELETING, ':page': page, ':next': page + 1, ':now': updatedAt },
        }),
      ),
    );
    return written !== undefined;
  }

  /** The keys of rows `deleting` whose job last moved before `updatedBefore`, oldest first, at most `limit`. */
  async listStale(updatedBefore: string, limit: number): Promise<Record<string, unknown>[]> {
    return waitingBefore(this.client, {
      table: this.tableName,
      index: 'deleting',
      key: ['pendingKey', DELETING],
      sortKey: 'updatedAt',
      before: updatedBefore,
      limit,
    });
  }

  /** Removes the row at `key`, only while it is `deleting` (the job's last step); false when it is not. */
  async remove(key: Record<string, string>): Promise<boolean> {
    const removed = await unlessConditionFails(() =>
      this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: key,
          ConditionExpression: '#status = :deleting',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':deleting': DELETING },
        }),
      ),
    );
    return removed !== undefined;
  }
}
