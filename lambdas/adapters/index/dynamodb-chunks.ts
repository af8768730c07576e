/**
 * The knowledge index of a deployment without Bedrock (LocalStack, which emulates no Bedrock knowledge bases): the
 * chunks of every dataset in one DynamoDB table, one partition per dataset (`tenantKey`, as in the documents table),
 * sorted by chunkId (`<documentId>#<position>#<hash>`, so a document's chunks share a key prefix). A query reads the
 * dataset's partition and ranks it with BM25 in the function, on the same 0..1 scale as the embedded index
 * (`m / (m + k)`). That is a fair stand-in for tests of a few hundred chunks, not an engine for production: a query
 * costs a read of the whole dataset, there is no stemming and no vector search, and a document's chunks are replaced
 * by batches rather than in one commit (a reader can see old and new chunks together for a moment).
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
  type DocumentRef,
  FILTERABLE_KEYS,
  type IndexedChunk,
  type IndexFilter,
  type IndexHit,
  type IndexQuery,
  type KnowledgeIndex,
} from '#ports/processing';

/** The variable a function finds the table in; set by the stack when it is deployed with `-c knowledgeIndex=dynamodb`. */
export const CHUNK_INDEX_TABLE_VARIABLE = 'CHUNK_INDEX_TABLE';

/** Same saturation constant as the embedded index (LEXICAL_SATURATION_K in index/lancedb.ts). */
const SATURATION_K = 5;
const BM25_K1 = 1.2;
const BM25_B = 0.75;
const BATCH_SIZE = 25;
const MAX_BATCH_ATTEMPTS = 8;

/** English stop words, as the embedded index's analyzer removes them. */
const STOP_WORDS = new Set(
  (
    'a an and are as at be but by for if in into is it no not of on or such that the their then there these they ' +
    'this to was will with'
  ).split(' '),
);

/** Lower-cased, accent-folded words of letters and digits, without stop words. */
export function terms(text: string): string[] {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 0 && !STOP_WORDS.has(word));
}

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

  async query(query: IndexQuery): Promise<IndexHit[]> {
    const queryTerms = [...new Set(terms(query.text))];
    if (queryTerms.length === 0 || query.limit <= 0) return [];
    const chunks = await collect(
      queryAll<ChunkItem>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'tenantKey = :t',
        ExpressionAttributeValues: { ':t': tenantKey(query.scope) },
      }),
    );
    // Statistics over the whole dataset, as a BM25 index has them whatever the filters.
    const analyzed = chunks.map((chunk) => {
      const frequencies = new Map<string, number>();
      const words = terms(chunk.text);
      for (const word of words) frequencies.set(word, (frequencies.get(word) ?? 0) + 1);
      return { chunk, frequencies, length: words.length };
    });
    const averageLength = analyzed.reduce((sum, a) => sum + a.length, 0) / Math.max(1, analyzed.length);
    const idf = new Map(
      queryTerms.map((term) => {
        const n = analyzed.filter((a) => a.frequencies.has(term)).length;
        return [term, Math.log(1 + (analyzed.length - n + 0.5) / (n + 0.5))];
      }),
    );
    const hits: IndexHit[] = [];
    for (const { chunk, frequencies, length } of analyzed) {
      if (!query.filters.every((filter) => passes(chunk, filter))) continue;
      let bm25 = 0;
      for (const term of queryTerms) {
        const tf = frequencies.get(term) ?? 0;
        if (tf === 0) continue;
        const norm = BM25_K1 * (1 - BM25_B + (BM25_B * length) / (averageLength || 1));
        bm25 += ((idf.get(term) ?? 0) * tf * (BM25_K1 + 1)) / (tf + norm);
      }
      if (bm25 <= 0) continue;
      const m = bm25 / queryTerms.length;
      const { tenantKey: _key, ...rest } = chunk;
      hits.push({ chunk: rest, score: m / (m + SATURATION_K) });
    }
    hits.sort((a, b) => b.score - a.score || a.chunk.chunkId.localeCompare(b.chunk.chunkId));
    return hits.slice(0, query.limit);
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
