/** DynamoDB implementations of the persistence ports. Key schemas: lib/tables.ts. */
import {
  BatchWriteCommand,
  type BatchWriteCommandInput,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { DatasetRef, DocumentError, DocumentRecord, DocumentStatus } from '../../../core/knowledge/document';
import type { Environment, MetadataChanges } from '../../../core/knowledge/fields';
import type { UploadCompletion, UploadSession } from '../../../core/knowledge/upload-session';
import type { RetrievalConfigRecord } from '../../../core/retrieval/retrieval-config';
import type { RetrievalConfigStore } from '../../../ports/retrieval-configs';
import type {
  AgentRecord,
  AgentStore,
  ContentFields,
  DocumentStore,
  KnowledgeBaseDeletion,
  KnowledgeBaseRecord,
  KnowledgeBaseStore,
  TokenRecord,
  TokenStore,
  UploadSessionStore,
} from '../../../ports/stores';
import type { ZipJobFile, ZipJobRecord, ZipJobStatus, ZipJobStore } from '../../../ports/zip-jobs';
import { setExpression, unlessConditionFails } from './expressions';

/**
 * A local data folder made before an index existed lacks it (dynalite cannot add one to a table; the runtime warns
 * at start): such a read finds nothing rather than failing what depends on it, e.g. every watchdog tick.
 */
async function unlessIndexMissing<T>(read: () => Promise<T>, missing: T): Promise<T> {
  try {
    return await read();
  } catch (error) {
    const absent =
      error instanceof Error &&
      error.name === 'ValidationException' &&
      error.message.includes('does not have the specified index');
    if (absent) return missing;
    throw error;
  }
}

/** Every item of a Query, page after page. */
export async function* queryAll<T>(client: DynamoDBDocumentClient, input: QueryCommandInput): AsyncGenerator<T> {
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await client.send(new QueryCommand({ ...input, ExclusiveStartKey }));
    for (const item of page.Items ?? []) yield item as T;
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

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

export class DynamoAgentStore implements AgentStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async put(agent: AgentRecord): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: agent }));
  }

  async get(organizationId: string, agentId: string): Promise<AgentRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { organizationId, agentId } }),
    );
    return Item as AgentRecord | undefined;
  }

  async list(organizationId: string): Promise<AgentRecord[]> {
    const agents = await collect(
      queryAll<AgentRecord>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'organizationId = :o',
        ExpressionAttributeValues: { ':o': organizationId },
      }),
    );
    return agents.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.agentId.localeCompare(b.agentId));
  }
}

/** Value of `pendingKey` while a knowledge base is being deleted (the watchdog's sparse index). */
const DELETING = 'deleting';

function knowledgeBaseOf(item: Record<string, unknown> | undefined): KnowledgeBaseRecord | undefined {
  if (!item) return undefined;
  const { pendingKey: _pending, ...record } = item;
  return record as unknown as KnowledgeBaseRecord;
}

export class DynamoKnowledgeBaseStore implements KnowledgeBaseStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

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

  async advanceDeletion(agentId: string, knowledgeBaseId: string, page: number, updatedAt: string): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { agentId, knowledgeBaseId },
          UpdateExpression: 'SET deletion.#page = :next, updatedAt = :now',
          ConditionExpression: '#status = :deleting AND deletion.#page = :page',
          ExpressionAttributeNames: { '#status': 'status', '#page': 'page' },
          ExpressionAttributeValues: { ':deleting': DELETING, ':page': page, ':next': page + 1, ':now': updatedAt },
        }),
      ),
    );
    return written !== undefined;
  }

  async listDeleting(updatedBefore: string, limit: number): Promise<{ agentId: string; knowledgeBaseId: string }[]> {
    const { Items } = await unlessIndexMissing(
      () =>
        this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            IndexName: 'deleting',
            KeyConditionExpression: 'pendingKey = :p AND updatedAt < :before',
            ExpressionAttributeValues: { ':p': DELETING, ':before': updatedBefore },
            Limit: limit,
          }),
        ),
      { Items: [] } as { Items?: Record<string, unknown>[] },
    );
    return (Items ?? []).map((item) => ({
      agentId: String(item.agentId),
      knowledgeBaseId: String(item.knowledgeBaseId),
    }));
  }

  async removeDeleted(agentId: string, knowledgeBaseId: string): Promise<boolean> {
    const removed = await unlessConditionFails(() =>
      this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { agentId, knowledgeBaseId },
          ConditionExpression: '#status = :deleting',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':deleting': DELETING },
        }),
      ),
    );
    return removed !== undefined;
  }
}

/** Value of `pendingKey` while a document waits for processing (the watchdog's sparse index). */
const PENDING = 'uploaded';

/** `<agentId>#<environment>#<knowledgeBaseId>`: the partition of one dataset. */
export function tenantKey(ref: DatasetRef): string {
  return `${ref.agentId}#${ref.environment}#${ref.knowledgeBaseId}`;
}

function withoutKeys(item: Record<string, unknown> | undefined): DocumentRecord | undefined {
  if (!item) return undefined;
  const { tenantKey: _key, ...record } = item;
  return record as unknown as DocumentRecord;
}

export class DynamoDocumentStore implements DocumentStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  private key(ref: DatasetRef, documentId: string) {
    return { tenantKey: tenantKey(ref), documentId };
  }

  async get(ref: DatasetRef, documentId: string): Promise<DocumentRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: this.key(ref, documentId), ConsistentRead: true }),
    );
    return withoutKeys(Item);
  }

  async reserve(doc: DocumentRecord, now: string): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...doc, tenantKey: tenantKey(doc) },
          ConditionExpression: 'attribute_not_exists(documentId) OR (#status = :reserved AND reservedUntil < :now)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':reserved': 'reserved', ':now': now },
        }),
      ),
    );
    return written !== undefined;
  }

  private async update(
    ref: DatasetRef,
    documentId: string,
    fields: Record<string, unknown>,
    condition: string,
    values: Record<string, unknown>,
    remove: readonly string[] = [],
  ): Promise<DocumentRecord | undefined> {
    return unlessConditionFails(async () => {
      const parts = setExpression(fields, values, remove);
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(ref, documentId),
          ...parts,
          ExpressionAttributeNames: { ...parts.ExpressionAttributeNames, '#status': 'status' },
          ConditionExpression: condition,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return withoutKeys(Attributes);
    });
  }

  completeReservation(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
    createdAt: string,
  ): Promise<DocumentRecord | undefined> {
    return this.update(
      ref,
      documentId,
      { ...content, ...metadata, status: 'uploaded', pendingKey: PENDING, createdAt, reservedUntil: null, error: null },
      '#status = :reserved AND uploadId = :upload',
      { ':reserved': 'reserved', ':upload': content.uploadId },
    );
  }

  replaceContent(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
  ): Promise<DocumentRecord | undefined> {
    return this.update(
      ref,
      documentId,
      { ...content, ...metadata, status: 'uploaded', pendingKey: PENDING, watchdogRetries: 0, error: null },
      'attribute_exists(documentId) AND #status <> :reserved AND uploadId <> :upload',
      { ':reserved': 'reserved', ':upload': content.uploadId },
    );
  }

  patchMetadata(
    ref: DatasetRef,
    documentId: string,
    metadata: MetadataChanges,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined> {
    return this.update(
      ref,
      documentId,
      { ...metadata, updatedAt },
      'attribute_exists(documentId) AND #status <> :reserved',
      { ':reserved': 'reserved' },
    );
  }

  setStatus(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    status: DocumentStatus,
    error: DocumentError | null,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined> {
    return this.update(
      ref,
      documentId,
      { status, error, updatedAt },
      'attribute_exists(documentId) AND #status = :uploaded AND uploadId = :upload',
      { ':uploaded': 'uploaded', ':upload': uploadId },
      ['pendingKey'],
    );
  }

  async listPending(updatedBefore: string, limit: number): Promise<(DatasetRef & { documentId: string })[]> {
    const { Items } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'pending',
        KeyConditionExpression: 'pendingKey = :p AND updatedAt < :before',
        ExpressionAttributeValues: { ':p': PENDING, ':before': updatedBefore },
        Limit: limit,
      }),
    );
    return (Items ?? []).map((item) => {
      const [agentId, environment, knowledgeBaseId] = String(item.tenantKey).split('#');
      return { agentId, environment: environment as Environment, knowledgeBaseId, documentId: String(item.documentId) };
    });
  }

  recordWatchdogRetry(ref: DatasetRef, documentId: string, uploadId: string, retries: number, updatedAt: string) {
    return this.update(
      ref,
      documentId,
      { watchdogRetries: retries, updatedAt },
      '#status = :uploaded AND uploadId = :upload',
      { ':uploaded': 'uploaded', ':upload': uploadId },
    );
  }

  async delete(ref: DatasetRef, documentId: string): Promise<DocumentRecord | undefined> {
    const { Attributes } = await this.client.send(
      new DeleteCommand({ TableName: this.tableName, Key: this.key(ref, documentId), ReturnValues: 'ALL_OLD' }),
    );
    return withoutKeys(Attributes);
  }

  async *listDataset(ref: DatasetRef, options: { pageSize?: number } = {}): AsyncIterable<DocumentRecord> {
    for await (const item of queryAll<Record<string, unknown>>(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'tenantKey = :t',
      ExpressionAttributeValues: { ':t': tenantKey(ref) },
      ...(options.pageSize ? { Limit: options.pageSize } : {}),
    })) {
      yield withoutKeys(item) as DocumentRecord;
    }
  }
}

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
    const { Items } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'open',
        KeyConditionExpression: 'openKey = :open AND expiresAt < :before',
        ExpressionAttributeValues: { ':open': OPEN, ':before': endedBefore },
        Limit: limit,
      }),
    );
    return (Items ?? []).map((item) => String(item.uploadId));
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

const JOB_ITEM = 'job';
const knowledgeBaseKeyOf = (ref: { agentId: string; knowledgeBaseId: string }) =>
  `${ref.agentId}#${ref.knowledgeBaseId}`;
/** Most items one BatchWriteItem takes. */
const BATCH_WRITE_ITEMS = 25;
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
          Item: { ...job, itemKey: JOB_ITEM, pendingKey: UNREAD, knowledgeBaseKey: knowledgeBaseKeyOf(job) },
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
    const { itemKey: _key, pendingKey: _pending, knowledgeBaseKey: _kb, ...job } = Item;
    return job as ZipJobRecord;
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
    const { Items } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'pending',
        KeyConditionExpression: 'pendingKey = :p AND updatedAt < :before',
        ExpressionAttributeValues: { ':p': UNREAD, ':before': updatedBefore },
        Limit: limit,
      }),
    );
    return (Items ?? []).map((item) => String(item.zipJobId));
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

  failUnread(zipJobId: string, error: NonNullable<ZipJobRecord['error']>, updatedAt: string): Promise<boolean> {
    return this.updateUnread(zipJobId, { status: 'failed', error, updatedAt }, ['pendingKey']);
  }

  async putFile(zipJobId: string, index: number, file: ZipJobFile): Promise<void> {
    await this.client.send(
      new PutCommand({ TableName: this.tableName, Item: { ...file, zipJobId, itemKey: fileItemKey(index) } }),
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
    for (let start = 0; start < files.length; start += BATCH_WRITE_ITEMS) {
      let requests: NonNullable<BatchWriteCommandInput['RequestItems']>[string] = files
        .slice(start, start + BATCH_WRITE_ITEMS)
        .map((item) => ({ DeleteRequest: { Key: { zipJobId, itemKey: item.itemKey } } }));
      // What DynamoDB leaves unprocessed (throttling) is sent again; the SDK's own retries space the attempts.
      while (requests.length > 0) {
        const { UnprocessedItems } = await this.client.send(
          new BatchWriteCommand({ RequestItems: { [this.tableName]: requests } }),
        );
        requests = UnprocessedItems?.[this.tableName] ?? [];
      }
    }
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

export class DynamoRetrievalConfigStore implements RetrievalConfigStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(agentId: string, environment: Environment): Promise<RetrievalConfigRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { agentId, environment } }),
    );
    return Item as RetrievalConfigRecord | undefined;
  }

  async put(record: RetrievalConfigRecord): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: record }));
  }

  async replace(record: RetrievalConfigRecord, previousUpdatedAt: string): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: record,
          ConditionExpression: 'updatedAt = :previous',
          ExpressionAttributeValues: { ':previous': previousUpdatedAt },
        }),
      ),
    );
    return written !== undefined;
  }
}
