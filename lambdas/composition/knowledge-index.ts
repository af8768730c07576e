/**
 * Which knowledge index this process uses. In AWS: the Bedrock knowledge base of each environment
 * (BEDROCK_KNOWLEDGE_BASES), or, in a deployment without Bedrock such as LocalStack, the DynamoDB chunk table
 * (CHUNK_INDEX_TABLE). The local runtime installs its embedded index here at start, and the processing and retrieval
 * composition roots both read it.
 */

import {
  BedrockKnowledgeIndex,
  type ChunkTextSource,
  readKnowledgeBases,
} from '#adapters/index/bedrock-knowledge-base';
import { ChunkManifests } from '#adapters/index/chunk-manifests';
import { CHUNK_INDEX_TABLE_VARIABLE, DynamoChunkIndex } from '#adapters/index/dynamodb-chunks';
import type { KnowledgeIndex } from '#ports/processing';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';
import { bedrockAgentClient, bedrockAgentRuntimeClient } from './clients/bedrock-agent';
import { dynamoDocumentClient } from './clients/dynamodb';
import { blobsStore } from './container';

export { installedKnowledgeIndex, useKnowledgeIndex } from './installed-index';

/**
 * The index of a deployed function: the chunk table when the stack named one, else the Bedrock knowledge bases.
 * `chunkTexts` is what Bedrock, which cannot give chunk texts back, re-ingests from on a metadata change; the chunk
 * manifests in the documents bucket are what it lists a document's chunks from (chunk-manifests.ts).
 */
export function deployedKnowledgeIndex(
  chunkTexts: ChunkTextSource,
  env: EnvironmentValues = handlerEnvironment(),
): KnowledgeIndex {
  const chunkTable = env[CHUNK_INDEX_TABLE_VARIABLE];
  if (chunkTable) return new DynamoChunkIndex(dynamoDocumentClient(), chunkTable);
  return new BedrockKnowledgeIndex({
    agentClient: bedrockAgentClient(),
    runtimeClient: bedrockAgentRuntimeClient(),
    knowledgeBases: readKnowledgeBases(env),
    chunkTexts,
    // The bucket's client on first use: a function that never lists or writes chunks needs no DOCUMENTS_BUCKET.
    manifests: new ChunkManifests({
      get: (key) => blobsStore().get(key),
      put: (key, bytes, contentType) => blobsStore().put(key, bytes, contentType),
      delete: (keys) => blobsStore().delete(keys),
    }),
  });
}
