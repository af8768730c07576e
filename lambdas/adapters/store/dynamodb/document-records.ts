/**
 * The reads of the documents table that retrieval makes, apart from DynamoDocumentStore so the functions that only
 * retrieve (the query routes, webhooks, the flow runner) do not bundle the whole store.
 */
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DatasetRef } from '#core/knowledge/document';

/** Keys one BatchGetItem reads at most. */
const BATCH_GET_KEYS = 100;
/** BatchGetItem calls for the keys DynamoDB left unprocessed, before giving up. */
const MAX_TRIES = 10;

/** `<agentId>#<environment>#<knowledgeBaseId>`: the partition of one dataset. */
export function tenantKey(ref: DatasetRef): string {
  return `${ref.agentId}#${ref.environment}#${ref.knowledgeBaseId}`;
}

/**
 * The records of `documentIds` in the dataset `ref` that exist, read consistently in BatchGetItem calls of 100 keys
 * (the keys DynamoDB leaves unprocessed asked again, with a jittered wait); `projection`, when given, names the only
 * attributes read. Items as the table holds them, keys included.
 */
export async function batchGetDocuments(
  client: DynamoDBDocumentClient,
  tableName: string,
  ref: DatasetRef,
  documentIds: readonly string[],
  projection?: readonly string[],
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  const ids = [...new Set(documentIds)];
  const projected = projection && {
    ProjectionExpression: projection.map((_, i) => `#p${i}`).join(', '),
    ExpressionAttributeNames: Object.fromEntries(projection.map((name, i) => [`#p${i}`, name])),
  };
  for (let start = 0; start < ids.length; start += BATCH_GET_KEYS) {
    let keys: Record<string, unknown>[] = ids
      .slice(start, start + BATCH_GET_KEYS)
      .map((documentId) => ({ tenantKey: tenantKey(ref), documentId }));
    for (let attempt = 1; keys.length > 0; attempt++) {
      if (attempt > MAX_TRIES) throw new Error(`documents: ${keys.length} keys still unprocessed`);
      // 50 ms doubling, with full jitter, before a call for what the last one left.
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, Math.random() * 25 * 2 ** attempt));
      const { Responses, UnprocessedKeys } = await client.send(
        new BatchGetCommand({ RequestItems: { [tableName]: { Keys: keys, ConsistentRead: true, ...projected } } }),
      );
      items.push(...(Responses?.[tableName] ?? []));
      keys = (UnprocessedKeys?.[tableName]?.Keys ?? []) as Record<string, unknown>[];
    }
  }
  return items;
}

/** The ids among `documentIds` whose record exists and is `uploaded` or `ready`, read consistently (DocumentStore). */
export async function retrievableDocuments(
  client: DynamoDBDocumentClient,
  tableName: string,
  ref: DatasetRef,
  documentIds: readonly string[],
): Promise<Set<string>> {
  const items = await batchGetDocuments(client, tableName, ref, documentIds, ['documentId', 'status']);
  return new Set(
    items
      .filter((item) => item.status === 'uploaded' || item.status === 'ready')
      .map((item) => String(item.documentId)),
  );
}
