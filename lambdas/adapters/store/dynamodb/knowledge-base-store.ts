/**
 * KnowledgeBaseStore on DynamoDB: knowledge bases by agent, the deletion job a knowledge base being deleted carries,
 * and its reindex job (lib/tables.ts). While a reindex runs, `reindexKey` and `reindexUpdatedAt` (its last progress)
 * put the row in the sparse index `reindexing`, where the watchdog finds a job that stopped moving.
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Environment } from '#core/knowledge/fields';
import {
  advancedReindex,
  type KnowledgeBaseDeletion,
  type KnowledgeBaseRecord,
  type KnowledgeBaseReindex,
  type KnowledgeBaseStore,
  type ReindexProgress,
} from '#ports/stores';
import { DELETING, DeletionJobRows } from './deletion-jobs';
import { setExpression, unlessConditionFails } from './expressions';
import { collect, queryAll, waitingBefore } from './queries';

/** Value of `reindexKey` while a reindex runs. */
const REINDEXING = 'reindexing';

export function knowledgeBaseOf(item: Record<string, unknown> | undefined): KnowledgeBaseRecord | undefined {
  if (!item) return undefined;
  const { pendingKey: _pending, reindexKey: _reindexing, reindexUpdatedAt: _progress, ...record } = item;
  return record as unknown as KnowledgeBaseRecord;
}

export class DynamoKnowledgeBaseStore implements KnowledgeBaseStore {
  private readonly jobs: DeletionJobRows;

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {
    this.jobs = new DeletionJobRows(client, tableName);
  }

  async put(knowledgeBase: KnowledgeBaseRecord): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: knowledgeBase }));
  }

  async get(agentId: string, knowledgeBaseId: string): Promise<KnowledgeBaseRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { agentId, knowledgeBaseId }, ConsistentRead: true }),
    );
    return knowledgeBaseOf(Item);
  }

  async list(agentId: string, options: { includeDeleting?: boolean } = {}): Promise<KnowledgeBaseRecord[]> {
    const items = await collect(
      queryAll<Record<string, unknown>>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'agentId = :a',
        ExpressionAttributeValues: { ':a': agentId },
      }),
    );
    const bases = items
      .map((item) => knowledgeBaseOf(item) as KnowledgeBaseRecord)
      .filter((kb) => options.includeDeleting || kb.status !== 'deleting');
    return bases.sort(
      (a, b) => a.createdAt.localeCompare(b.createdAt) || a.knowledgeBaseId.localeCompare(b.knowledgeBaseId),
    );
  }

  async update(
    agentId: string,
    knowledgeBaseId: string,
    changes: { name?: string; description?: string | null },
    updatedAt: string,
  ): Promise<KnowledgeBaseRecord | undefined> {
    return unlessConditionFails(async () => {
      const parts = setExpression({ ...changes, updatedAt });
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { agentId, knowledgeBaseId },
          ...parts,
          ExpressionAttributeNames: { ...parts.ExpressionAttributeNames, '#status': 'status' },
          ConditionExpression: 'attribute_exists(knowledgeBaseId) AND attribute_not_exists(#status)',
          ReturnValues: 'ALL_NEW',
        }),
      );
      return knowledgeBaseOf(Attributes);
    });
  }

  async markDeleting(
    agentId: string,
    knowledgeBaseId: string,
    deletion: KnowledgeBaseDeletion,
    updatedAt: string,
  ): Promise<KnowledgeBaseRecord | undefined> {
    return unlessConditionFails(async () => {
      const parts = setExpression({ status: DELETING, deletion, pendingKey: DELETING, updatedAt });
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { agentId, knowledgeBaseId },
          ...parts,
          ExpressionAttributeNames: { ...parts.ExpressionAttributeNames, '#status': 'status' },
          ConditionExpression: 'attribute_exists(knowledgeBaseId) AND attribute_not_exists(#status)',
          ReturnValues: 'ALL_NEW',
        }),
      );
      return knowledgeBaseOf(Attributes);
    });
  }

  async recordDefaultRetrievalChanged(
    agentId: string,
    knowledgeBaseId: string,
    environments: readonly Environment[],
  ): Promise<void> {
    await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { agentId, knowledgeBaseId },
          UpdateExpression: 'SET deletion.defaultRetrievalChanged = :e',
          ConditionExpression: '#status = :deleting',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':e': environments, ':deleting': DELETING },
        }),
      ),
    );
  }

  advanceDeletion(agentId: string, knowledgeBaseId: string, page: number, updatedAt: string): Promise<boolean> {
    return this.jobs.advance({ agentId, knowledgeBaseId }, page, updatedAt);
  }

  async listDeleting(updatedBefore: string, limit: number): Promise<{ agentId: string; knowledgeBaseId: string }[]> {
    return (await this.jobs.listStale(updatedBefore, limit)).map((item) => ({
      agentId: String(item.agentId),
      knowledgeBaseId: String(item.knowledgeBaseId),
    }));
  }

  removeDeleted(agentId: string, knowledgeBaseId: string): Promise<boolean> {
    return this.jobs.remove({ agentId, knowledgeBaseId });
  }

  async startReindex(
    agentId: string,
    knowledgeBaseId: string,
    job: KnowledgeBaseReindex,
  ): Promise<KnowledgeBaseRecord | undefined> {
    return unlessConditionFails(async () => {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { agentId, knowledgeBaseId },
          UpdateExpression: 'SET #reindex = :job, reindexKey = :key, reindexUpdatedAt = :now',
          ConditionExpression:
            'attribute_exists(knowledgeBaseId) AND attribute_not_exists(#status) AND ' +
            '(attribute_not_exists(#reindex) OR #reindex.#status <> :running)',
          ExpressionAttributeNames: { '#status': 'status', '#reindex': 'reindex' },
          ExpressionAttributeValues: { ':job': job, ':key': REINDEXING, ':now': job.updatedAt, ':running': 'running' },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return knowledgeBaseOf(Attributes);
    });
  }

  async advanceReindex(
    agentId: string,
    knowledgeBaseId: string,
    page: number,
    progress: ReindexProgress,
    updatedAt: string,
  ): Promise<boolean> {
    const kb = await this.get(agentId, knowledgeBaseId);
    if (kb?.reindex?.status !== 'running' || kb.reindex.page !== page) return false;
    const job = advancedReindex(kb.reindex, progress, updatedAt);
    const running = job.status === 'running';
    // Conditional on the page read: of two copies of a page, or a page and the watchdog, one moves the job.
    const written = await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { agentId, knowledgeBaseId },
          UpdateExpression: running
            ? 'SET #reindex = :job, reindexUpdatedAt = :now'
            : 'SET #reindex = :job REMOVE reindexKey, reindexUpdatedAt',
          ConditionExpression: '#reindex.#status = :running AND #reindex.#page = :page',
          ExpressionAttributeNames: { '#reindex': 'reindex', '#status': 'status', '#page': 'page' },
          ExpressionAttributeValues: {
            ':job': job,
            ':running': 'running',
            ':page': page,
            ...(running ? { ':now': updatedAt } : {}),
          },
        }),
      ),
    );
    return written !== undefined;
  }

  async listReindexing(updatedBefore: string, limit: number): Promise<{ agentId: string; knowledgeBaseId: string }[]> {
    const items = await waitingBefore(this.client, {
      table: this.tableName,
      index: 'reindexing',
      key: ['reindexKey', REINDEXING],
      sortKey: 'reindexUpdatedAt',
      before: updatedBefore,
      limit,
    });
    return items.map((item) => ({
      agentId: String(item.agentId),
      knowledgeBaseId: String(item.knowledgeBaseId),
    }));
  }
}
