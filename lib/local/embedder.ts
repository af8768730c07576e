/**
 * The embedder of the local index, chosen by EMBEDDER (docs/retrieval.md, "Embedders").
 */

import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { TitanEmbedder } from '#adapters/embedding/bedrock-titan';
import { openAiCompatibleEmbedderFromEnv } from '#adapters/embedding/openai-compatible';
import type { Embedder } from '#ports/processing';

/**
 * EMBEDDER=openai-compatible (any `/v1/embeddings` server) or bedrock-titan gives the embedded index vectors (hybrid
 * retrieval); unset, retrieval is lexical (BM25). Async: without EMBEDDER_DIMENSIONS the server is asked at start.
 */
export async function embedderFromEnv(): Promise<Embedder | null> {
  const name = process.env.EMBEDDER;
  if (!name) return null;
  if (name === 'openai-compatible') return openAiCompatibleEmbedderFromEnv(process.env);
  if (name !== 'bedrock-titan') {
    throw new Error(`EMBEDDER must be openai-compatible, bedrock-titan or unset, not ${name}`);
  }
  const dimensions = Number(process.env.EMBEDDER_DIMENSIONS ?? 1024);
  if (dimensions !== 256 && dimensions !== 512 && dimensions !== 1024) {
    throw new Error('EMBEDDER_DIMENSIONS must be 256, 512 or 1024');
  }
  // Bedrock is reached with the user's own AWS credentials from the process environment (the handlers get the
  // engines' keys instead, through configureHandlers, which leaves process.env alone).
  const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN } = process.env;
  if (!AWS_ACCESS_KEY_ID || !AWS_SECRET_ACCESS_KEY) {
    throw new Error('EMBEDDER=bedrock-titan needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment');
  }
  const client = new BedrockRuntimeClient({
    region: process.env.EMBEDDER_REGION ?? process.env.AWS_REGION ?? 'us-east-1',
    credentials: {
      accessKeyId: AWS_ACCESS_KEY_ID,
      secretAccessKey: AWS_SECRET_ACCESS_KEY,
      sessionToken: AWS_SESSION_TOKEN,
    },
  });
  return new TitanEmbedder(client, dimensions);
}
