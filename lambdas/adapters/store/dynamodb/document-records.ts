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

/** The ids among `documentIds` whose record exists and is `uploaded` or `ready`, read consistently (DocumentStore). */
export async function retrievableDocuments(
  client: DynamoDBDocumentClient,
  tableName: string,
  ref: DatasetRef,
  documentIds: readonly string[],
): Promise<Set<string>> {
  const found = new Set<string>();
  const ids = [...new Set(documentIds)];
  for (let start = 0; start < ids.length; start += BATCH_GET_KEYS) {
    let keys: Record<string, unknown>[] = ids
      .slice(start, start + BATCH_GET_KEYS)
      .map((documentId) => ({ tenantKey: tenantKey(ref), documentId }));
    for (let attempt = 1; keys.length > 0; attempt++) {
      if (attempt > MAX_TRIES) throw new Error(`documents: ${keys.length} keys still unprocessed`);
      // 50 ms doubling, with full jitter, before a call for what the last one left.
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, Math.random() * 25 * 2 ** attempt));
      const { Responses, UnprocessedKeys } = await client.send(
        new BatchGetCommand({
          RequestItems: {
            [tableName]: {
              Keys: keys,
              ConsistentRead: true,
              ProjectionExpression: '#id, #status',
              ExpressionAttributeNames: { '#id': 'documentId', '#status': 'status' },
            },
          },
        }),
      );
      for (const item of Responses?.[tableName] ?? []) {
        if (item.status === 'uploaded' || item.status === 'ready') found.add(String(item.documentId));
      }
      keys = (UnprocessedKeys?.[tableName]?.Keys ?? []) as Record<string, unknown>[];
    }
  }
  return found;
}
