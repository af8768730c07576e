/**
 * The knowledge index of a deployment without Bedrock (LocalStack, which emulates no Bedrock knowledge bases): the
 * chunks of every dataset in one DynamoDB table, one partition per dataset (`tenantKey`, as in the documents table),
 * sorted by chunkId (`<documentId>#<position>#<hash>`, so a document's chunks share a key prefix). A query reads the
 * dataset's partition and ranks every chunk by the embedded index's lexical score (lexical-score.ts), the term
 * statistics counted from the chunks it read: the same scores the embedded index gives, without its candidate step.
 * That is a fair stand-in for tests of a few hundred chunks, not an engine for production: a query costs a read of the
 * whole dataset, there is no vector search, and a document's chunks are replaced by batches rather than in one commit
 * (a reader can see old and new chunks together for a moment).
 */
import {
  BatchWriteCommand,
  type BatchWriteCommandInput,
  type DynamoDBDocumentClient,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { tenantKey } from '#adapters/store/dynamodb/document-store';
import { collect, queryAll } from '#adapters/store/dynamodb/queries';
import type { DatasetRef } from '#core/knowledge/document';
import {
  assertChunksOfDocument,
  CHUNK_METADATA_KEYS,
  type ChunkMetadata,
  type DocumentChunkPage,
  type DocumentChunkRange,
  type DocumentRef,
  FILTERABLE_KEYS,
  type IndexedChunk,
  type IndexFilter,
  type IndexHit,
  type IndexQuery,
  type KnowledgeIndex,
} from '#ports/processing';
import { byScoreThenPosition } from './lancedb-scores';
import { analyze, analyzeChunk } from './lexical-analyzer';
import { lexicalScoreOf, weightedQuery } from './lexical-score';

/** The variable a function finds the table in; set by the stack when it is deployed with `-c knowledgeIndex=dynamodb`. */
export const CHUNK_INDEX_TABLE_VARIABLE = 'CHUNK_INDEX_TABLE';

const BATCH_SIZE = 25;
const MAX_BATCH_ATTEMPTS = 8;

type ChunkItem = Omit<IndexedChunk, 'vector'> & { readonly tenantKey: string };

/** Whether a chunk passes one filter, with the embedded index's semantics (filterClause in index/lancedb.ts). */
export function passes(chunk: ChunkMetadata, filter: IndexFilter): boolean {
  if (!(FILTERABLE_KEYS as readonly string[]).includes(filter.key)) {
    throw new Error(`Cannot filter on "${filter.key}": only ${FILTERABLE_KEYS.join(', ')} are filterable`);
  }
  const value = chunk[filter.key];
  switch (filter.operator) {
    case 'equals':
      return value === filter.value;
    case 'notEquals':
      return value === null || value !== filter.value;
    // Byte-wise, as SQL compares strings: JavaScript's < compares UTF-16 code units, Buffer.compare bytes.
    case 'greaterThan':
      return value !== null && Buffer.compare(Buffer.from(value), Buffer.from(filter.value)) > 0;
    case 'lessThan':
      return value !== null && Buffer.compare(Buffer.from(value), Buffer.from(filter.value)) < 0;
    default:
      throw new Error(`Unknown filter operator "${String(filter.operator)}"`);
  }
}

export class DynamoChunkIndex implements KnowledgeIndex {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async replaceDocument(ref: DocumentRef, chunks: readonly IndexedChunk[]): Promise<void> {
    assertChunksOfDocument(ref, chunks);
    const key = tenantKey(ref);
    const wanted = new Set(chunks.map((chunk) => chunk.chunkId));
    // Puts first, deletes after: a reader sees the new chunks (and for a moment some old ones), never none.
    await this.batchWrite(
      chunks.map(({ vector: _vector, ...chunk }) => ({ PutRequest: { Item: { ...chunk, tenantKey: key } } })),
    );
    const stale = (await this.chunkIds(ref)).filter((chunkId) => !wanted.has(chunkId));
    await this.batchWrite(stale.map((chunkId) => ({ DeleteRequest: { Key: { tenantKey: key, chunkId } } })));
  }

  async deleteDocument(ref: DocumentRef): Promise<void> {
    const key = tenantKey(ref);
    const ids = await this.chunkIds(ref);
    await this.batchWrite(ids.map((chunkId) => ({ DeleteRequest: { Key: { tenantKey: key, chunkId } } })));
  }

  async updateDocumentMetadata(ref: DocumentRef, metadata: ChunkMetadata): Promise<void> {
    const key = tenantKey(ref);
    const names = Object.fromEntries(CHUNK_METADATA_KEYS.map((name, i) => [`#m${i}`, name]));
    const values = Object.fromEntries(CHUNK_METADATA_KEYS.map((name, i) => [`:m${i}`, metadata[name]]));
    for (const chunkId of await this.chunkIds(ref)) {
      await this.client
        .send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { tenantKey: key, chunkId },
            UpdateExpression: `SET ${CHUNK_METADATA_KEYS.map((_, i) => `#m${i} = :m${i}`).join(', ')}`,
            // A chunk removed by a concurrent replace is not brought back as a bare item.
            ConditionExpression: 'attribute_exists(chunkId)',
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          }),
        )
        .catch((error: unknown) => {
          if ((error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
        });
    }
  }

  async countDocumentChunks(ref: DocumentRef): Promise<number> {
    let count = 0;
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({ ...this.documentQuery(ref), Select: 'COUNT', ExclusiveStartKey }),
      );
      count += page.Count ?? 0;
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return count;
  }

  /**
   * A page of the document's chunks in position order. The sort key orders them as strings (`…#10#` before `…#2#`), so
   * the document's chunks are read whole and sorted: a stand-in's cost, as its queries are.
   */
  async listDocumentChunks(ref: DocumentRef, range: DocumentChunkRange): Promise<DocumentChunkPage> {
    const items = await collect(queryAll<ChunkItem>(this.client, this.documentQuery(ref)));
    const chunks = items
      .map(({ tenantKey: _key, ...chunk }) => chunk)
      .sort((a, b) => a.position - b.position)
      .filter((chunk) => range.afterPosition === null || chunk.position > range.afterPosition);
    return { chunks: chunks.slice(0, range.limit), total: items.length };
  }

  async query(query: IndexQuery): Promise<IndexHit[]> {
    const queryTerms = analyze(query.text);
    if (queryTerms.length === 0 || query.limit <= 0) return [];
    const chunks = await collect(
      queryAll<ChunkItem>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'tenantKey = :t',
        ExpressionAttributeValues: { ':t': tenantKey(query.scope) },
      }),
    );
    // Each chunk analyzed once: for the statistics over the whole dataset (as the embedded index keeps them, whatever
    // the filters) and for its own score.
    const analyzed = chunks.map(({ tenantKey: _key, ...chunk }) => ({ chunk, ...analyzeChunk(chunk.text) }));
    const documentFrequency = new Map<string, number>();
    for (const { terms } of analyzed) {
      for (const term of new Set(terms)) documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1);
    }
    const weighted = weightedQuery(queryTerms, { chunks: chunks.length, documentFrequency });
    const wanted = new Set(weighted.terms);
    const hits: IndexHit[] = [];
    for (const { chunk, terms, length } of analyzed) {
      if (!query.filters.every((filter) => passes(chunk, filter))) continue;
      const counts = new Map<string, number>();
      for (const term of terms) if (wanted.has(term)) counts.set(term, (counts.get(term) ?? 0) + 1);
      const score = lexicalScoreOf(weighted, { counts, length }, chunk.position);
      if (score > 0) hits.push({ chunk, score });
    }
    return hits.sort(byScoreThenPosition).slice(0, query.limit);
  }

  describeFilter(scope: DatasetRef, filters: readonly IndexFilter[]): unknown {
    return { partition: tenantKey(scope), filters: filters.map((f) => ({ ...f })) };
  }

  private documentQuery(ref: DocumentRef) {
    return {
      TableName: this.tableName,
      KeyConditionExpression: 'tenantKey = :t AND begins_with(chunkId, :d)',
      ExpressionAttributeValues: { ':t': tenantKey(ref), ':d': `${ref.documentId}#` },
    };
  }

  private async chunkIds(ref: DocumentRef): Promise<string[]> {
    const items = await collect(
      queryAll<{ chunkId: string }>(this.client, { ...this.documentQuery(ref), ProjectionExpression: 'chunkId' }),
    );
    return items.map((item) => item.chunkId);
  }

  /** BatchWriteItem in groups of 25, retrying what DynamoDB leaves unprocessed. */
  private async batchWrite(requests: NonNullable<BatchWriteCommandInput['RequestItems']>[string]): Promise<void> {
    for (let start = 0; start < requests.length; start += BATCH_SIZE) {
      let pending = requests.slice(start, start + BATCH_SIZE);
      for (let attempt = 1; pending.length > 0; attempt += 1) {
        if (attempt > MAX_BATCH_ATTEMPTS) throw new Error(`chunk index: ${pending.length} writes left unprocessed`);
        const result = await this.client.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }));
        pending = result.UnprocessedItems?.[this.tableName] ?? [];
        if (pending.length) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
      }
    }
  }
}
