/** DynamoDB implementations of the persistence ports. Key schemas: lib/tables.ts. */
import {
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
import type { ZipJobFile, ZipJobRecord, ZipJobStatus, ZipJobStore } from '../../../core/processing/zip-job';
import type { RetrievalConfigRecord, RetrievalConfigStore } from '../../../core/retrieval/default-retrieval';
import type {
  AgentRecord,
  AgentStore,
  ContentFields,
  DocumentStore,
  KnowledgeBaseRecord,
  KnowledgeBaseStore,
  TokenRecord,
  TokenStore,
  UploadSessionStore,
} from '../../../ports/stores';
import { setExpression, unlessConditionFails } from './expressions';

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
      new GetCommand({ TableName: this.tableName, Key: { agentId, knowledgeBaseId } }),
    );
    return Item as KnowledgeBaseRecord | undefined;
  }

  async list(agentId: string): Promise<KnowledgeBaseRecord[]> {
    const bases = await collect(
      queryAll<KnowledgeBaseRecord>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'agentId = :a',
        ExpressionAttributeValues: { ':a': agentId },
      }),
    );
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
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { agentId, knowledgeBaseId },
          ...setExpression({ ...changes, updatedAt }),
          ConditionExpression: 'attribute_exists(knowledgeBaseId)',
          ReturnValues: 'ALL_NEW',
        }),
      );
      return Attributes as KnowledgeBaseRecord;
    });
  }

  async delete(agentId: string, knowledgeBaseId: string): Promise<KnowledgeBaseRecord | undefined> {
    const { Attributes } = await this.client.send(
      new DeleteCommand({ TableName: this.tableName, Key: { agentId, knowledgeBaseId }, ReturnValues: 'ALL_OLD' }),
    );
    return Attributes as KnowledgeBaseRecord | undefined;
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

  async *listDataset(ref: DatasetRef): AsyncIterable<DocumentRecord> {
    for await (const item of queryAll<Record<string, unknown>>(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'tenantKey = :t',
      ExpressionAttributeValues: { ':t': tenantKey(ref) },
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
          Item: { ...job, itemKey: JOB_ITEM, pendingKey: UNREAD },
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
    const { itemKey: _key, pendingKey: _pending, ...job } = Item;
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
}
