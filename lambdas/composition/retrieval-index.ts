/**
 * The index a deployed retrieval function reads (query, generate, default retrieval, the flow functions): the chunk
 * table when the stack named one, else the Bedrock knowledge bases through Retrieve alone (bedrock-retrieval.ts).
 * The processing worker builds the whole index (knowledge-index.ts); these functions never write to it.
 */
import { BedrockRetrieval, readKnowledgeBases } from '#adapters/index/bedrock-retrieval';
import { CHUNK_INDEX_TABLE_VARIABLE, DynamoChunkIndex } from '#adapters/index/dynamodb-chunks';
import type { KnowledgeRetrieval } from '#ports/processing';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';
import { bedrockAgentRuntimeClient } from './clients/bedrock-agent';
import { dynamoDocumentClient } from './clients/dynamodb';

export function deployedRetrievalIndex(env: EnvironmentValues = handlerEnvironment()): KnowledgeRetrieval {
  const chunkTable = env[CHUNK_INDEX_TABLE_VARIABLE];
  if (chunkTable) return new DynamoChunkIndex(dynamoDocumentClient(), chunkTable);
  return new BedrockRetrieval(bedrockAgentRuntimeClient(), readKnowledgeBases(env));
}
