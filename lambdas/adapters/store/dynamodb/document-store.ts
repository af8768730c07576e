/**
 * DocumentStore on DynamoDB: documents by dataset; conditional writes carry the state rules (reserved → uploaded →
 * ready | failed), and a sparse index finds the ones still `uploaded` (lib/tables.ts).
 *
 * Each dataset's partition also holds one counters item (documentId `#counts`, which no document id can be: they
 * start with a letter or digit): how many documents are `uploaded`, `ready` and `failed`. Every write that changes a
 * document's counted status is one transaction with the counters' `ADD`, so the counts are exact whatever races and
 * retries happen; a write whose condition fails changes neither.
 *
 * And the records of owed work (documentId `#owed#<work>#<documentId>`, no document id starts with `#` either): a
 * metadata sync or an erasure accepted by the API and not yet done by the worker, written in the same transaction
 * as the change that owes it. Their `pendingKey` is the work's name, so the watchdog finds those that stalled in the
 * same sparse index as the documents still `uploaded`.
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type {
  ChunkGeneration,
  DatasetRef,
  DocumentError,
  DocumentRecord,
  DocumentStatus,
  StoredStatus,
} from '#core/knowledge/document';
import type { Environment, MetadataChanges } from '#core/knowledge/fields';
import {
  type ContentFields,
  DOCUMENT_LIST_SCAN,
  type DocumentCounts,
  type DocumentListQuery,
  type DocumentStore,
  documentPosition,
  type OwedWork,
  type OwedWorkRecord,
  type ReservationCompletion,
} from '#ports/stores';
import { batchGetDocuments, retrievableDocuments, tenantKey } from './document-records';
import { setExpression, type UpdateParts, unlessConditionFails } from './expressions';
import { queryAll, waitingBefore } from './queries';
import { type TransactItem, transactAll, transactUnlessFirstFails } from './transactions';

/** Value of `pendingKey` while a document waits for processing (the watchdog's sparse index). */
const PENDING = 'uploaded';
/** The sort key of a dataset's counters item. */
const COUNTS_ID = '#counts';
/** The sort keys of owed work start so: `#owed#<work>#<documentId>`. */
const OWED_PREFIX = '#owed#';
const OWED_WORK: readonly OwedWork[] = ['delete-document', 'sync-metadata'];

function owedId(work: OwedWork, documentId: string): string {
  return `${OWED_PREFIX}${work}#${documentId}`;
}
/** The index of listed documents by `listKey` (`<createdAt>#<documentId>`, written when a document is created). */
const BY_CREATION = 'byCreation';
/** The sparse index of ZIP imports' unfinished documents, by zipJobId. */
const ZIP_PENDING = 'zipPending';
/** The sparse index of failed documents, by the upload they failed with: a ZIP import's failures, by zipJobId. */
const ZIP_FAILED = 'zipFailed';
/** Documents a query of the list reads at once. */
const LIST_PAGE = 200;
/** DynamoDB's most actions in one transaction. */
const MAX_TRANSACTION_ITEMS = 100;
/** A reservation is completed only while it is still reserved for the same upload. */
const COMPLETION_CONDITION = '#status = :reserved AND uploadId = :upload';

/** What completing a reservation writes: the content and metadata, `uploaded`, listed from `createdAt`. */
function completionFields(
  documentId: string,
  content: ContentFields,
  metadata: MetadataChanges,
  createdAt: string,
): Record<string, unknown> {
  return {
    ...content,
    ...metadata,
    status: 'uploaded',
    pendingKey: PENDING,
    createdAt,
    listKey: documentPosition({ createdAt, documentId }),
    reservedUntil: null,
    error: null,
  };
}
/** Tries of a write whose document changed between its read and its transaction. */
const MAX_WRITE_TRIES = 10;

const COUNTED: readonly DocumentStatus[] = ['uploaded', 'ready', 'failed'];

function counted(status: StoredStatus | undefined): DocumentStatus | undefined {
  return status !== undefined && status !== 'reserved' ? status : undefined;
}

/** What a document write changes in the counters: the status it leaves and the one it takes (reserved: none). */
interface StatusChange {
  readonly from: StoredStatus | undefined;
  readonly to: StoredStatus | undefined;
}

export { tenantKey };

/** The labels and custom metadata a document's chunks carry (core/processing chunkMetadataOf). */
const METADATA_FIELDS = ['label1', 'label2', 'customMeta1', 'customMeta2', 'customMeta3', 'customMeta4'] as const;

/** A condition that holds while the record's labels and custom metadata are those of `seen` (null: none). */
function sameMetadataCondition(seen: DocumentRecord) {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const checks = METADATA_FIELDS.map((field, i) => {
    names[`#m${i}`] = field;
    const value = seen[field];
    if (value === null || value === undefined) {
      values[':mnull'] = null;
      return `(attribute_not_exists(#m${i}) OR #m${i} = :mnull)`;
    }
    values[`:m${i}`] = value;
    return `#m${i} = :m${i}`;
  });
  return { expression: checks.join(' AND '), names, values };
}

function datasetOfKey(key: unknown): DatasetRef {
  const [agentId, environment, knowledgeBaseId] = String(key).split('#');
  return { agentId, environment: environment as Environment, knowledgeBaseId };
}

function withoutKeys(item: Record<string, unknown> | undefined): DocumentRecord | undefined {
  if (!item) return undefined;
  const { tenantKey: _key, listKey: _position, zipPendingKey: _zip, zipFailedKey: _failed, ...record } = item;
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

  /** The document's update: `parts` under `condition`, which may name `#status` (and `names`). */
  private conditionalUpdate(
    ref: DatasetRef,
    documentId: string,
    parts: UpdateParts,
    condition: string,
    names: Record<string, string> = {},
  ) {
    return {
      TableName: this.tableName,
      Key: this.key(ref, documentId),
      ...parts,
      ExpressionAttributeNames: { ...parts.ExpressionAttributeNames, '#status': 'status', ...names },
      ConditionExpression: condition,
    };
  }

  /** What completing a reservation writes (completeReservation, and each of completeReservations'). */
  private completionUpdate(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
    createdAt: string,
  ) {
    const fields = completionFields(documentId, content, metadata, createdAt);
    const parts = setExpression(fields, { ':reserved': 'reserved', ':upload': content.uploadId });
    return { Update: this.conditionalUpdate(ref, documentId, parts, COMPLETION_CONDITION) };
  }

  async get(ref: DatasetRef, documentId: string): Promise<DocumentRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: this.key(ref, documentId), ConsistentRead: true }),
    );
    return withoutKeys(Item);
  }

  async getMany(ref: DatasetRef, documentIds: readonly string[]): Promise<Map<string, DocumentRecord>> {
    const items = await batchGetDocuments(this.client, this.tableName, ref, documentIds);
    return new Map(items.map((item) => [String(item.documentId), withoutKeys(item) as DocumentRecord]));
  }

  /** The conditional Put of a reservation: unless the id is held by a document or an unexpired reservation. */
  private reservationPut(doc: DocumentRecord, now: string) {
    return {
      TableName: this.tableName,
      Item: { ...doc, tenantKey: tenantKey(doc), ...(doc.zipJobId ? { zipPendingKey: doc.zipJobId } : {}) },
      ConditionExpression: 'attribute_not_exists(documentId) OR (#status = :reserved AND reservedUntil < :now)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':reserved': 'reserved', ':now': now },
    };
  }

  async reserve(doc: DocumentRecord, now: string): Promise<boolean> {
    const written = await unlessConditionFails(() => this.client.send(new PutCommand(this.reservationPut(doc, now))));
    return written !== undefined;
  }

  /** One transaction of the reservations' Puts: a reservation is not counted, so nothing else goes with them. */
  async reserveAll(docs: readonly DocumentRecord[], now: string): Promise<boolean> {
    if (docs.length > MAX_TRANSACTION_ITEMS) throw new Error(`at most ${MAX_TRANSACTION_ITEMS} reservations at once`);
    if (docs.length === 0) return true;
    return transactAll(
      this.client,
      docs.map((doc) => ({ Put: this.reservationPut(doc, now) })),
    );
  }

  private countsKey(ref: DatasetRef) {
    return { tenantKey: tenantKey(ref), documentId: COUNTS_ID };
  }

  /**
   * Runs `write` (the document's conditional Update or Delete) with the counters' change in one transaction when the
   * counted status changes; false when the document's condition failed (nothing written).
   */
  private async writeCounted(
    ref: DatasetRef,
    write: { Update: Record<string, unknown> } | { Delete: Record<string, unknown> },
    change: StatusChange,
    alongside: readonly TransactItem[] = [],
  ): Promise<boolean> {
    const from = counted(change.from);
    const to = counted(change.to);
    const names: Record<string, string> = {};
    const values: Record<string, number> = {};
    const adds: string[] = [];
    if (from) {
      names['#from'] = from;
      values[':minus'] = -1;
      adds.push('#from :minus');
    }
    if (to) {
      names['#to'] = to;
      values[':one'] = 1;
      adds.push('#to :one');
    }
    const counters = {
      Update: {
        TableName: this.tableName,
        Key: this.countsKey(ref),
        UpdateExpression: `ADD ${adds.join(', ')}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    };
    return this.transact([write, ...(adds.length > 0 ? [counters] : []), ...alongside]);
  }

  /** One transaction, tried again when it meets another; false when its first item's condition failed. */
  private transact(items: readonly TransactItem[]): Promise<boolean> {
    return transactUnlessFirstFails(this.client, items);
  }

  /** The Put of an owed-work record (replacing an earlier debt of the same work: this one includes it). */
  private owedPut(ref: DatasetRef, documentId: string, work: OwedWork, since: string, objectKeys?: string[]) {
    return {
      Put: {
        TableName: this.tableName,
        Item: {
          tenantKey: tenantKey(ref),
          documentId: owedId(work, documentId),
          pendingKey: work,
          work,
          since,
          updatedAt: since,
          retries: 0,
          ...(objectKeys ? { objectKeys } : {}),
        },
      },
    };
  }

  private async update(
    ref: DatasetRef,
    documentId: string,
    fields: Record<string, unknown>,
    condition: string,
    values: Record<string, unknown>,
    remove: readonly string[] = [],
    change?: StatusChange,
  ): Promise<DocumentRecord | undefined> {
    if (change && counted(change.from) !== counted(change.to)) {
      const parts = setExpression(fields, values, remove);
      const written = await this.writeCounted(
        ref,
        { Update: this.conditionalUpdate(ref, documentId, parts, condition) },
        change,
      );
      // A transaction returns no attributes: the record is read back (a later write may already show in it).
      return written ? this.get(ref, documentId) : undefined;
    }
    return unlessConditionFails(async () => {
      const parts = setExpression(fields, values, remove);
      const { Attributes } = await this.client.send(
        new UpdateCommand({ ...this.conditionalUpdate(ref, documentId, parts, condition), ReturnValues: 'ALL_NEW' }),
      );
      return withoutKeys(Attributes);
    });
  }

  /** The document's conditional update and the counters' ADD in one transaction; not read back (the port's note). */
  completeReservation(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
    createdAt: string,
  ): Promise<boolean> {
    return this.writeCounted(ref, this.completionUpdate(ref, documentId, content, metadata, createdAt), {
      from: 'reserved',
      to: 'uploaded',
    });
  }

  /**
   * Each reservation's conditional Update as completeReservation writes it, and the counters' `ADD uploaded <n>`, in
   * one transaction: a ZIP import's window of files costs one write instead of a transaction and a read each.
   */
  async completeReservations(
    ref: DatasetRef,
    completions: readonly ReservationCompletion[],
    createdAt: string,
  ): Promise<boolean> {
    if (completions.length > MAX_TRANSACTION_ITEMS - 1) {
      throw new Error(`at most ${MAX_TRANSACTION_ITEMS - 1} reservations completed at once`);
    }
    if (completions.length === 0) return true;
    const updates = completions.map(({ documentId, content, metadata }) =>
      this.completionUpdate(ref, documentId, content, metadata, createdAt),
    );
    const counters = {
      Update: {
        TableName: this.tableName,
        Key: this.countsKey(ref),
        UpdateExpression: 'ADD #to :n',
        ExpressionAttributeNames: { '#to': 'uploaded' },
        ExpressionAttributeValues: { ':n': completions.length },
      },
    };
    return transactAll(this.client, [...updates, counters]);
  }

  async replaceContent(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
  ): Promise<DocumentRecord | undefined> {
    // The status it leaves is read first and made part of the condition, so the counters move from the right one.
    for (let attempt = 1; ; attempt++) {
      const current = await this.get(ref, documentId);
      if (!current || current.status === 'reserved' || current.uploadId === content.uploadId) return undefined;
      const updated = await this.update(
        ref,
        documentId,
        { ...content, ...metadata, status: 'uploaded', pendingKey: PENDING, watchdogRetries: 0, error: null },
        'attribute_exists(documentId) AND #status = :from AND uploadId <> :upload',
        { ':from': current.status, ':upload': content.uploadId },
        // The content is no longer the ZIP import's: the import is done with this document.
        ['zipPendingKey', 'zipFailedKey'],
        { from: current.status, to: 'uploaded' },
      );
      if (updated || attempt >= MAX_WRITE_TRIES) return updated;
    }
  }

  async patchMetadata(
    ref: DatasetRef,
    documentId: string,
    metadata: MetadataChanges,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined> {
    const parts = setExpression({ ...metadata, updatedAt }, { ':reserved': 'reserved' });
    const written = await this.transact([
      {
        Update: this.conditionalUpdate(ref, documentId, parts, 'attribute_exists(documentId) AND #status <> :reserved'),
      },
      this.owedPut(ref, documentId, 'sync-metadata', updatedAt),
    ]);
    // A transaction returns no attributes: the record is read back (a later write may already show in it).
    return written ? this.get(ref, documentId) : undefined;
  }

  async setStatus(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    status: DocumentStatus,
    error: DocumentError | null,
    updatedAt: string,
    options: { readonly indexedChunks?: readonly ChunkGeneration[]; readonly seen?: DocumentRecord } = {},
  ): Promise<DocumentRecord | undefined> {
    const { indexedChunks, seen } = options;
    const fields = {
      status,
      error,
      updatedAt,
      // A failed document is found by the upload it failed with: a ZIP import counts its failures (zipImportFailures).
      ...(status === 'failed' ? { zipFailedKey: uploadId } : {}),
      ...(indexedChunks ? { indexedChunks: indexedChunks.map(({ uploadId, count }) => ({ uploadId, count })) } : {}),
    };
    const condition = 'attribute_exists(documentId) AND #status = :uploaded AND uploadId = :upload';
    const values = { ':uploaded': 'uploaded', ':upload': uploadId };
    const remove = ['pendingKey', 'zipPendingKey'];
    const change = { from: 'uploaded', to: status } as const;
    if (seen) {
      // The same write, holding also while the metadata is as seen: then the record is `seen` plus this write, and
      // the transaction (which returns no attributes) needs no read back.
      const same = sameMetadataCondition(seen);
      const parts = setExpression(fields, { ...values, ...same.values }, remove);
      const written = await this.writeCounted(
        ref,
        {
          Update: this.conditionalUpdate(ref, documentId, parts, `${condition} AND ${same.expression}`, same.names),
        },
        change,
      );
      if (written) {
        const { pendingKey: _pending, ...record } = { ...seen, ...fields } as DocumentRecord & { pendingKey?: unknown };
        return withoutKeys(record);
      }
    }
    return this.update(ref, documentId, fields, condition, values, remove, change);
  }

  async listPending(updatedBefore: string, limit: number): Promise<(DatasetRef & { documentId: string })[]> {
    const items = await waitingBefore(this.client, {
      table: this.tableName,
      index: 'pending',
      key: ['pendingKey', PENDING],
      sortKey: 'updatedAt',
      before: updatedBefore,
      limit,
    });
    return items.map((item) => ({ ...datasetOfKey(item.tenantKey), documentId: String(item.documentId) }));
  }

  async retryFailed(ref: DatasetRef, documentId: string, uploadId: string, updatedAt: string) {
    // A document of a ZIP import that still holds the import's content makes the import unfinished again.
    const zip = (await this.get(ref, documentId))?.zipJobId === uploadId ? { zipPendingKey: uploadId } : {};
    return this.update(
      ref,
      documentId,
      { status: 'uploaded', pendingKey: PENDING, watchdogRetries: 0, error: null, updatedAt, ...zip },
      'attribute_exists(documentId) AND #status = :failed AND uploadId = :upload',
      { ':failed': 'failed', ':upload': uploadId },
      ['zipFailedKey'],
      { from: 'failed', to: 'uploaded' },
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

  recordIndexedChunks(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    indexedChunks: readonly ChunkGeneration[],
    whileUploaded: boolean,
  ): Promise<DocumentRecord | undefined> {
    return this.update(
      ref,
      documentId,
      { indexedChunks: indexedChunks.map(({ uploadId, count }) => ({ uploadId, count })) },
      `attribute_exists(documentId) AND uploadId = :upload AND #status ${whileUploaded ? '=' : '<>'} :status`,
      // A reservation is never indexed: it is not an upload of the document yet.
      { ':upload': uploadId, ':status': whileUploaded ? 'uploaded' : 'reserved' },
    );
  }

  async delete(
    ref: DatasetRef,
    documentId: string,
    options: { readonly erasureOwedSince?: string } = {},
  ): Promise<DocumentRecord | undefined> {
    // What is removed is read first; the delete holds only while the record is still that (status and upload).
    for (let attempt = 1; ; attempt++) {
      const current = await this.get(ref, documentId);
      if (!current) return undefined;
      const write = {
        TableName: this.tableName,
        Key: this.key(ref, documentId),
        ConditionExpression: '#status = :status AND uploadId = :upload',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': current.status, ':upload': current.uploadId },
      };
      const { erasureOwedSince } = options;
      const erasure =
        erasureOwedSince === undefined
          ? []
          : [
              this.owedPut(ref, documentId, 'delete-document', erasureOwedSince, [
                ...new Set([current.s3Key, current.objectKey]),
              ]),
            ];
      const removed =
        counted(current.status) === undefined && erasure.length === 0
          ? (await unlessConditionFails(() => this.client.send(new DeleteCommand(write)))) !== undefined
          : await this.writeCounted(ref, { Delete: write }, { from: current.status, to: undefined }, erasure);
      if (removed) return current;
      if (attempt >= MAX_WRITE_TRIES) throw new Error(`document ${documentId} changed too often to be deleted`);
    }
  }

  retrievable(ref: DatasetRef, documentIds: readonly string[]): Promise<Set<string>> {
    return retrievableDocuments(this.client, this.tableName, ref, documentIds);
  }

  async getOwed(ref: DatasetRef, documentId: string, work: OwedWork): Promise<OwedWorkRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: this.key(ref, owedId(work, documentId)), ConsistentRead: true }),
    );
    if (!Item) return undefined;
    return {
      ...ref,
      documentId,
      work,
      since: String(Item.since),
      updatedAt: String(Item.updatedAt),
      retries: Number(Item.retries ?? 0),
      ...(Item.objectKeys ? { objectKeys: Item.objectKeys as string[] } : {}),
    };
  }

  async settleOwed(ref: DatasetRef, documentId: string, work: OwedWork, since: string): Promise<boolean> {
    const removed = await unlessConditionFails(() =>
      this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: this.key(ref, owedId(work, documentId)),
          ConditionExpression: 'since = :since',
          ExpressionAttributeValues: { ':since': since },
        }),
      ),
    );
    return removed !== undefined;
  }

  async listOwed(updatedBefore: string, limit: number) {
    const found: (DatasetRef & { documentId: string; work: OwedWork })[] = [];
    for (const work of OWED_WORK) {
      const items = await waitingBefore(this.client, {
        table: this.tableName,
        index: 'pending',
        key: ['pendingKey', work],
        sortKey: 'updatedAt',
        before: updatedBefore,
        limit,
      });
      const prefix = owedId(work, '');
      for (const item of items) {
        const id = String(item.documentId);
        if (id.startsWith(prefix))
          found.push({ ...datasetOfKey(item.tenantKey), documentId: id.slice(prefix.length), work });
      }
    }
    return found;
  }

  async recordOwedRetry(
    ref: DatasetRef,
    documentId: string,
    work: OwedWork,
    seenUpdatedAt: string,
    updatedAt: string,
  ): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(ref, owedId(work, documentId)),
          UpdateExpression: 'SET updatedAt = :now ADD retries :one',
          ConditionExpression: 'updatedAt = :seen',
          ExpressionAttributeValues: { ':now': updatedAt, ':seen': seenUpdatedAt, ':one': 1 },
        }),
      ),
    );
    return written !== undefined;
  }

  async counts(ref: DatasetRef): Promise<DocumentCounts> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: this.countsKey(ref), ConsistentRead: true }),
    );
    const [uploaded, ready, failed] = COUNTED.map((status) => Number(Item?.[status] ?? 0));
    return { uploaded, ready, failed, total: uploaded + ready + failed };
  }

  async zipImportFinished(zipJobId: string): Promise<boolean> {
    return (await this.zipImportUnfinished(zipJobId, 1)).length === 0;
  }

  async zipImportUnfinished(zipJobId: string, limit: number): Promise<string[]> {
    const { Items } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: ZIP_PENDING,
        KeyConditionExpression: 'zipPendingKey = :job',
        ExpressionAttributeValues: { ':job': zipJobId },
        Limit: limit,
      }),
    );
    return (Items ?? []).map((item) => String(item.documentId));
  }

  async zipImportFailures(zipJobId: string): Promise<number> {
    let failures = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: ZIP_FAILED,
          KeyConditionExpression: 'zipFailedKey = :job',
          ExpressionAttributeValues: { ':job': zipJobId },
          Select: 'COUNT',
          ExclusiveStartKey: startKey,
        }),
      );
      failures += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return failures;
  }

  async forgetCounts(ref: DatasetRef): Promise<void> {
    await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: this.countsKey(ref) }));
  }

  async list(ref: DatasetRef, query: DocumentListQuery): Promise<{ documents: DocumentRecord[]; next: string | null }> {
    const documents: DocumentRecord[] = [];
    const values: Record<string, unknown> = { ':t': tenantKey(ref) };
    if (query.before !== undefined) values[':before'] = query.before;
    const matches = (doc: DocumentRecord) =>
      (query.status === undefined || doc.status === query.status) &&
      (query.label1 === undefined || doc.label1 === query.label1) &&
      (query.label2 === undefined || doc.label2 === query.label2) &&
      (query.fileNamePrefix === undefined || doc.fileName.startsWith(query.fileNamePrefix));
    // Without filters every document read is listed: one more than the page tells whether another follows.
    const filtered = [query.status, query.label1, query.label2, query.fileNamePrefix].some((f) => f !== undefined);
    const pageSize = filtered ? LIST_PAGE : query.limit + 1;
    let read = 0;
    let startKey: Record<string, unknown> | undefined;
    for (;;) {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: BY_CREATION,
          KeyConditionExpression:
            query.before === undefined ? 'tenantKey = :t' : 'tenantKey = :t AND listKey < :before',
          ExpressionAttributeValues: values,
          ScanIndexForward: false,
          Limit: Math.min(pageSize, DOCUMENT_LIST_SCAN - read),
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      const items = page.Items ?? [];
      for (let i = 0; i < items.length; i++) {
        read++;
        const { listKey, ...rest } = items[i];
        const doc = withoutKeys(rest) as DocumentRecord;
        // Filtered here, not by a FilterExpression: a read stops at exactly `limit` matches.
        if (!matches(doc)) continue;
        documents.push(doc);
        if (documents.length === query.limit) {
          const more = i < items.length - 1 || page.LastEvaluatedKey !== undefined;
          return { documents, next: more ? String(listKey) : null };
        }
      }
      startKey = page.LastEvaluatedKey;
      if (!startKey) return { documents, next: null };
      // Read as much as a call may: go on from the last document read, whatever it holds.
      if (read >= DOCUMENT_LIST_SCAN) return { documents, next: String(startKey.listKey) };
    }
  }

  async *listDataset(
    ref: DatasetRef,
    options: { pageSize?: number; after?: string } = {},
  ): AsyncIterable<DocumentRecord> {
    const after = options.after !== undefined;
    for await (const item of queryAll<Record<string, unknown>>(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: after ? 'tenantKey = :t AND documentId > :after' : 'tenantKey = :t',
      ExpressionAttributeValues: { ':t': tenantKey(ref), ...(after ? { ':after': options.after } : {}) },
      ...(options.pageSize ? { Limit: options.pageSize } : {}),
    })) {
      // The counters and the records of owed work are no documents.
      if (String(item.documentId).startsWith('#')) continue;
      yield withoutKeys(item) as DocumentRecord;
    }
  }
}
