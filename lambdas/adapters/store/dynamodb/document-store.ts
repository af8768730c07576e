/**
 * DocumentStore on DynamoDB: documents by dataset; conditional writes carry the state rules (reserved → uploaded →
 * ready | failed), and a sparse index finds the ones still `uploaded` (lib/tables.ts).
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { DatasetRef, DocumentError, DocumentRecord, DocumentStatus } from '#core/knowledge/document';
import type { Environment, MetadataChanges } from '#core/knowledge/fields';
import type { ContentFields, DocumentStore } from '#ports/stores';
import { setExpression, unlessConditionFails } from './expressions';
import { queryAll } from './queries';

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

  retryFailed(ref: DatasetRef, documentId: string, uploadId: string, updatedAt: string) {
    return this.update(
      ref,
      documentId,
      { status: 'uploaded', pendingKey: PENDING, watchdogRetries: 0, error: null, updatedAt },
      'attribute_exists(documentId) AND #status = :failed AND uploadId = :upload',
      { ':failed': 'failed', ':upload': uploadId },
    );
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
