/**
 * ZipJobStore on DynamoDB: a ZIP import job and its file list in one item collection, and a sparse index of the
 * imports not yet read through (lib/tables.ts).
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { DatasetRef } from '#core/knowledge/document';
import {
  type ZipJobFile,
  type ZipJobRecord,
  type ZipJobStatus,
  type ZipJobStore,
  zipJobPosition,
} from '#ports/zip-jobs';
import { setExpression, unlessConditionFails } from './expressions';
import { collect, deleteKeys, putItems, queryAll, unlessIndexMissing, waitingBefore } from './queries';

const JOB_ITEM = 'job';
/** The index of a dataset's jobs by `listKey` (lib/tables.ts). */
const BY_DATASET = 'byDataset';

const datasetKeyOf = (ref: DatasetRef) => `${ref.agentId}#${ref.environment}#${ref.knowledgeBaseId}`;

/** The job as the store holds it, without the keys of its indexes. */
function jobOf(item: Record<string, unknown>): ZipJobRecord {
  const {
    itemKey: _key,
    pendingKey: _pending,
    knowledgeBaseKey: _kb,
    datasetKey: _dataset,
    listKey: _position,
    ...job
  } = item;
  return job as unknown as ZipJobRecord;
}

const knowledgeBaseKeyOf = (ref: { agentId: string; knowledgeBaseId: string }) =>
  `${ref.agentId}#${ref.knowledgeBaseId}`;

const fileItemKey = (index: number) => `file#${String(index).padStart(5, '0')}`;

/** Value of `pendingKey` while a job's archive is not read through (the watchdog's sparse index). */
const UNREAD = 'unread';

export class DynamoZipJobStore implements ZipJobStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(job: ZipJobRecord): Promise<ZipJobRecord> {
    const created = await unlessConditionFails(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...job,
            itemKey: JOB_ITEM,
            pendingKey: UNREAD,
            knowledgeBaseKey: knowledgeBaseKeyOf(job),
            datasetKey: datasetKeyOf(job),
            listKey: zipJobPosition(job),
          },
          ConditionExpression: 'attribute_not_exists(zipJobId)',
        }),
      ),
    );
    return created ? job : ((await this.get(job.zipJobId)) ?? job);
  }

  async get(zipJobId: string): Promise<ZipJobRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { zipJobId, itemKey: JOB_ITEM }, ConsistentRead: true }),
    );
    if (!Item) return undefined;
    return jobOf(Item);
  }

  async listOfDataset(
    ref: DatasetRef,
    options: { readonly limit: number; readonly before?: string },
  ): Promise<{ jobs: ZipJobRecord[]; next: string | null }> {
    const values: Record<string, unknown> = { ':d': datasetKeyOf(ref) };
    if (options.before !== undefined) values[':before'] = options.before;
    // One more than the page tells whether another follows.
    const { Items = [] } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: BY_DATASET,
        KeyConditionExpression:
          options.before === undefined ? 'datasetKey = :d' : 'datasetKey = :d AND listKey < :before',
        ExpressionAttributeValues: values,
        ScanIndexForward: false,
        Limit: options.limit + 1,
      }),
    );
    const jobs = Items.slice(0, options.limit).map(jobOf);
    return { jobs, next: Items.length > options.limit ? zipJobPosition(jobs[jobs.length - 1]) : null };
  }

  async setStatus(zipJobId: string, status: ZipJobStatus, error: ZipJobRecord['error'], updatedAt: string) {
    const parts = setExpression(
      { status, error, updatedAt },
      { ':failed': 'failed' },
      status === 'failed' ? ['pendingKey'] : [],
    );
    // A failed job stays failed (the watchdog may have given up on it while an import attempt was starting).
    await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { zipJobId, itemKey: JOB_ITEM },
          ...parts,
          ExpressionAttributeNames: { ...parts.ExpressionAttributeNames, '#status': 'status' },
          ConditionExpression: 'attribute_exists(zipJobId) AND #status <> :failed',
        }),
      ),
    );
  }

  async markRead(zipJobId: string, fileCount: number, warnings: readonly string[], updatedAt: string) {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { zipJobId, itemKey: JOB_ITEM },
        ...setExpression({ fileCount, warnings, updatedAt }, {}, ['pendingKey']),
      }),
    );
  }

  async listPending(updatedBefore: string, limit: number): Promise<string[]> {
    const items = await waitingBefore(this.client, {
      table: this.tableName,
      index: 'pending',
      key: ['pendingKey', UNREAD],
      sortKey: 'updatedAt',
      before: updatedBefore,
      limit,
    });
    return items.map((item) => String(item.zipJobId));
  }

  private async updateUnread(zipJobId: string, fields: Record<string, unknown>, remove: readonly string[] = []) {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { zipJobId, itemKey: JOB_ITEM },
          ...setExpression(fields, { ':unread': UNREAD }, remove),
          ConditionExpression: 'pendingKey = :unread',
        }),
      ),
    );
    return written !== undefined;
  }

  recordWatchdogRetry(zipJobId: string, retries: number, updatedAt: string): Promise<boolean> {
    return this.updateUnread(zipJobId, { watchdogRetries: retries, updatedAt });
  }

  async recordProgress(zipJobId: string, updatedAt: string): Promise<void> {
    await this.updateUnread(zipJobId, { updatedAt }, ['watchdogRetries']);
  }

  failUnread(zipJobId: string, error: NonNullable<ZipJobRecord['error']>, updatedAt: string): Promise<boolean> {
    return this.updateUnread(zipJobId, { status: 'failed', error, updatedAt }, ['pendingKey']);
  }

  async putFile(zipJobId: string, index: number, file: ZipJobFile): Promise<void> {
    await this.client.send(
      new PutCommand({ TableName: this.tableName, Item: { ...file, zipJobId, itemKey: fileItemKey(index) } }),
    );
  }

  async putFiles(zipJobId: string, firstIndex: number, files: readonly ZipJobFile[]): Promise<void> {
    await putItems(
      this.client,
      this.tableName,
      files.map((file, i) => ({ ...file, zipJobId, itemKey: fileItemKey(firstIndex + i) })),
    );
  }

  async listOfKnowledgeBase(agentId: string, knowledgeBaseId: string): Promise<ZipJobRecord[]> {
    const keys = await unlessIndexMissing(
      () =>
        collect(
          queryAll<Record<string, unknown>>(this.client, {
            TableName: this.tableName,
            IndexName: 'byKnowledgeBase',
            KeyConditionExpression: 'knowledgeBaseKey = :k',
            ExpressionAttributeValues: { ':k': knowledgeBaseKeyOf({ agentId, knowledgeBaseId }) },
          }),
        ),
      [],
    );
    const jobs = await Promise.all(keys.map((key) => this.get(String(key.zipJobId))));
    return jobs.filter((job): job is ZipJobRecord => job !== undefined);
  }

  async delete(zipJobId: string): Promise<void> {
    const items = await collect(
      queryAll<Record<string, unknown>>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'zipJobId = :z',
        ExpressionAttributeValues: { ':z': zipJobId },
        ProjectionExpression: 'zipJobId, itemKey',
        ConsistentRead: true,
      }),
    );
    const files = items.filter((item) => item.itemKey !== JOB_ITEM);
    await deleteKeys(
      this.client,
      this.tableName,
      files.map((item) => ({ zipJobId, itemKey: item.itemKey })),
    );
    await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { zipJobId, itemKey: JOB_ITEM } }));
  }

  async listFiles(zipJobId: string): Promise<ZipJobFile[]> {
    const files: ZipJobFile[] = [];
    for await (const item of queryAll<Record<string, unknown>>(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'zipJobId = :z AND begins_with(itemKey, :f)',
      ExpressionAttributeValues: { ':z': zipJobId, ':f': 'file#' },
      ConsistentRead: true,
    })) {
      const { zipJobId: _id, itemKey: _key, ...file } = item;
      files.push(file as unknown as ZipJobFile);
    }
    return files;
  }
}
