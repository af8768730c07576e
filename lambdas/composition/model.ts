/**
 * The model that generate answers with, read once per cold start:
 * - MODEL_BASE_URL (+ MODEL_NAME): any OpenAI-compatible server;
 * - BEDROCK_GENERATE_MODEL_ID: Amazon Bedrock Converse (in AWS; the stack sets it when a model is configured);
 * - neither: null, the extractive answer, which needs no network.
 * Generate retrieves first and then asks the model, in AWS too, rather than calling RetrieveAndGenerate: that API
 * returns no scores and cannot drop results under minScore before it generates, so minScore would mean something
 * else there than locally.
 */
import { BedrockConverseModel } from '#adapters/model/bedrock-converse';
import { modelProviderFromEnv } from '#adapters/model/openai-compatible';
import type { ModelProvider } from '#ports/model';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';
import { bedrockRuntimeClient } from './clients/bedrock-runtime';
import { modelApiKeyFromEnv } from './model-api-key';

export function generateModelFromEnv(env: EnvironmentValues = handlerEnvironment()): ModelProvider | null {
  const openAiCompatible = modelProviderFromEnv(env, modelApiKeyFromEnv(env));
  if (openAiCompatible) return openAiCompatible;
  const bedrockModelId = env.BEDROCK_GENERATE_MODEL_ID;
  return bedrockModelId ? new BedrockConverseModel(bedrockRuntimeClient(), bedrockModelId) : null;
}
