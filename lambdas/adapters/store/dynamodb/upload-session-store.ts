/**
 * UploadSessionStore on DynamoDB: upload sessions by uploadId, their completion, and a sparse index of the open
 * ones the watchdog cleans up after (lib/tables.ts).
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { UploadCompletion, UploadSession } from '#core/knowledge/upload-session';
import type { UploadSessionStore } from '#ports/stores';
import { unlessConditionFails } from './expressions';
import { waitingBefore } from './queries';

/** Sessions stay readable for a day after they end, so a late repeat of upload-complete still gets its answer. */
const SESSION_RETENTION_SECONDS = 24 * 3600;

/** Value of `openKey` while a session is neither completed nor swept (the watchdog's sparse index). */
const OPEN = 'open';

export class DynamoUploadSessionStore implements UploadSessionStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async put(session: UploadSession): Promise<void> {
    const expiresAtEpoch = Math.ceil(Date.parse(session.expiresAt) / 1000) + SESSION_RETENTION_SECONDS;
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...session, expiresAtEpoch, openKey: OPEN },
        ConditionExpression: 'attribute_not_exists(uploadId)',
      }),
    );
  }

  async get(uploadId: string): Promise<UploadSession | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { uploadId }, ConsistentRead: true }),
    );
    if (!Item) return undefined;
    const { expiresAtEpoch: _ttl, openKey: _open, ...session } = Item;
    return session as UploadSession;
  }

  async listOpenEndedBefore(endedBefore: string, limit: number): Promise<string[]> {
    const items = await waitingBefore(this.client, {
      table: this.tableName,
      index: 'open',
      key: ['openKey', OPEN],
      sortKey: 'expiresAt',
      before: endedBefore,
      limit,
    });
    return items.map((item) => String(item.uploadId));
  }

  async markSwept(uploadId: string): Promise<void> {
    await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { uploadId },
          UpdateExpression: 'REMOVE openKey',
          ConditionExpression: 'attribute_exists(uploadId)',
        }),
      ),
    );
  }

  async saveCompletion(uploadId: string, completion: UploadCompletion): Promise<UploadCompletion> {
    const saved = await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { uploadId },
          UpdateExpression: 'SET completion = :c REMOVE openKey',
          ConditionExpression:
            'attribute_exists(uploadId) AND (attribute_not_exists(completion) OR completion = :null)',
          ExpressionAttributeValues: { ':c': completion, ':null': null },
        }),
      ),
    );
    if (saved) return completion;
    const existing = await this.get(uploadId);
    return existing?.completion ?? completion;
  }
}
