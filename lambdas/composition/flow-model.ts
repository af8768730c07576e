/**
 * The models behind prompt nodes, routing and tool parameters, read from the environment once per cold start.
 * Default (a node without `llmConfig`):
 * - MODEL_BASE_URL (+ MODEL_NAME, MODEL_API_KEY or MODEL_API_KEY_SECRET_ARN, MODEL_TIMEOUT_MS): any
 *   OpenAI-compatible server;
 * - BEDROCK_FLOW_MODEL_ID (or BEDROCK_GENERATE_MODEL_ID, which the stack sets): Amazon Bedrock Converse;
 * - neither: the offline model, which needs no network and is not a language model (core/flows/offline-model.ts).
 * A node's `llmConfig` picks the class and may name the model, temperature and maxTokens. It can never name the
 * endpoint: definitions are written by tenants through the API, and an endpoint of theirs would make the service
 * POST the conversation (with MODEL_API_KEY) to any host it can reach, the instance metadata service and private
 * VPC addresses included (SSRF). The Bedrock model ids a definition may name are bounded by the function's IAM policy.
 */

import { BedrockConverseModel } from '#adapters/model/bedrock-converse';
import { imageInputFromEnv, MODEL_ENV, modelProviderFromEnv } from '#adapters/model/openai-compatible';
import { PromptedFlowModel } from '#adapters/model/prompted-flow-model';
import { AppError } from '#core/errors';
import { OfflineFlowModel } from '#core/flows/offline-model';
import type { FlowModel, FlowModelResolver, LlmConfig } from '#ports/flows';
import type { ModelProvider } from '#ports/model';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';
import { bedrockRuntimeClient } from './clients/bedrock-runtime';
import { modelApiKeyFromEnv } from './model-api-key';

export const BEDROCK_FLOW_MODEL_ENV = 'BEDROCK_FLOW_MODEL_ID';
/** `false` when the Bedrock models of the deployment read no images (docs/flows.md, "Attachments"). */
export const BEDROCK_IMAGE_INPUT_ENV = 'BEDROCK_IMAGE_INPUT';
/** Model names come from definitions, so the providers built for them are bounded (oldest dropped first). */
const MAX_CACHED_PROVIDERS = 64;

/**
 * Fails at once, as modelProviderFromEnv does, when MODEL_BASE_URL is set with no MODEL_NAME, is not http(s) or
 * comes with a bad MODEL_TIMEOUT_MS. A node asking for a class the deployment has no configuration for fails when
 * it runs, with a 503 MODEL_NOT_CONFIGURED naming the variable to set.
 */
export function flowModelResolverFromEnv(env: EnvironmentValues = handlerEnvironment()): FlowModelResolver {
  // Only the endpoint settings are kept: a node's model name replaces MODEL_NAME, nothing else.
  const endpoint = {
    [MODEL_ENV.baseUrl]: env[MODEL_ENV.baseUrl],
    [MODEL_ENV.apiKey]: env[MODEL_ENV.apiKey],
    [MODEL_ENV.timeoutMs]: env[MODEL_ENV.timeoutMs],
    [MODEL_ENV.imageInput]: env[MODEL_ENV.imageInput],
  };
  const apiKey = modelApiKeyFromEnv(env);
  const defaultOpenAiCompatible = modelProviderFromEnv(env, apiKey);
  const defaultOpenAiCompatibleName = env[MODEL_ENV.model];
  // In the stack, the default of `-c models` (DEFAULT_MODEL without it) is BEDROCK_GENERATE_MODEL_ID, granted with the list.
  const defaultBedrockModelId = env[BEDROCK_FLOW_MODEL_ENV] || env.BEDROCK_GENERATE_MODEL_ID || undefined;
  const bedrockImageInput = imageInputFromEnv(env, BEDROCK_IMAGE_INPUT_ENV);

  const providers = new Map<string, ModelProvider>();
  const cached = (key: string, build: () => ModelProvider): ModelProvider => {
    let provider = providers.get(key);
    if (provider === undefined) {
      if (providers.size >= MAX_CACHED_PROVIDERS) providers.delete(providers.keys().next().value as string);
      provider = build();
      providers.set(key, provider);
    }
    return provider;
  };
  if (defaultOpenAiCompatible) {
    providers.set(`ChatOpenAICompatible:${defaultOpenAiCompatibleName}`, defaultOpenAiCompatible);
  }

  const openAiCompatible = (model: string) =>
    cached(`ChatOpenAICompatible:${model}`, () => {
      const provider = modelProviderFromEnv({ ...endpoint, [MODEL_ENV.model]: model }, apiKey);
      if (provider === null) throw new Error('unreachable: MODEL_BASE_URL was checked before');
      return provider;
    });
  const bedrock = (modelId: string) =>
    cached(`ChatBedrockConverse:${modelId}`, () => {
      return new BedrockConverseModel(bedrockRuntimeClient(), modelId, { imageInput: bedrockImageInput });
    });

  const offline = new OfflineFlowModel();
  let defaultModel: FlowModel = offline;
  if (defaultOpenAiCompatible) defaultModel = new PromptedFlowModel(defaultOpenAiCompatible);
  else if (defaultBedrockModelId) defaultModel = new PromptedFlowModel(bedrock(defaultBedrockModelId));

  return (config: LlmConfig | undefined): FlowModel => {
    if (config === undefined) return defaultModel;
    const { model, ...parameters } = config.properties ?? {};
    switch (config.name) {
      case 'ChatOffline':
        return offline;
      case 'ChatOpenAICompatible': {
        if (!defaultOpenAiCompatible || !defaultOpenAiCompatibleName) {
          throw notConfigured(
            `ChatOpenAICompatible needs an OpenAI-compatible server: set ${MODEL_ENV.baseUrl} and ${MODEL_ENV.model}`,
          );
        }
        return new PromptedFlowModel(openAiCompatible(model || defaultOpenAiCompatibleName), parameters);
      }
      case 'ChatBedrockConverse': {
        const modelId = model || defaultBedrockModelId;
        if (!modelId) {
          throw notConfigured(
            `ChatBedrockConverse needs a model: set properties.model on the node or ${BEDROCK_FLOW_MODEL_ENV}`,
          );
        }
        return new PromptedFlowModel(bedrock(modelId), parameters);
      }
      default: {
        const unknown: never = config.name;
        throw new AppError(400, 'UNKNOWN_LLM_CLASS', `Unknown llmConfig class ${JSON.stringify(unknown)}`);
      }
    }
  };
}

function notConfigured(message: string): AppError {
  return new AppError(503, 'MODEL_NOT_CONFIGURED', message);
}
