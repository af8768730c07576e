/**
 * Composition root of the chunk view (GET …/documents/chunks): the document records and, to list a document's chunks,
 * the index that holds them. Locally the runtime's embedded index; on LocalStack the DynamoDB chunk table; in AWS the
 * chunk manifests the Bedrock index keeps in the documents bucket (Bedrock itself lists no chunks), read without any
 * Bedrock client.
 */
import { ChunkManifests } from '#adapters/index/chunk-manifests';
import { CHUNK_INDEX_TABLE_VARIABLE, DynamoChunkIndex } from '#adapters/index/dynamodb-chunks';
import type { ChunkListDeps } from '#core/knowledge/list-document-chunks';
import type { KnowledgeChunkListing } from '#ports/processing';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';
import { dynamoDocumentClient } from './clients/dynamodb';
import { blobsStore, readContainer } from './container';
import { installedKnowledgeIndex } from './installed-index';

/** The listing of a deployed function: the chunk table when the stack named one, else the Bedrock chunk manifests. */
export function deployedChunkListing(env: EnvironmentValues = handlerEnvironment()): KnowledgeChunkListing {
  const chunkTable = env[CHUNK_INDEX_TABLE_VARIABLE];
  if (chunkTable) return new DynamoChunkIndex(dynamoDocumentClient(), chunkTable);
  return new ChunkManifests(blobsStore());
}

let index: KnowledgeChunkListing | undefined;

/** Agents and knowledge bases through the 5 s read cache, as the other reads of the Knowledge API. */
export const chunkListContainer: ChunkListDeps = {
  get agents() {
    return readContainer.agents;
  },
  get knowledgeBases() {
    return readContainer.knowledgeBases;
  },
  get documents() {
    return readContainer.documents;
  },
  get index(): KnowledgeChunkListing {
    index ??= installedKnowledgeIndex()?.index ?? deployedChunkListing();
    return index;
  },
};
