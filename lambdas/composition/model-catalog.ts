/**
 * The models this deployment may call, from the environment (README, "Models"): the Bedrock models and inference
 * profiles of `-c models` (BEDROCK_MODELS, the default first), the OpenAI-compatible server's model (MODEL_BASE_URL
 * and MODEL_NAME), and the offline model, which is always there. GET /dashboard/models lists them, so the console
 * offers only what will work; the definition endpoints refuse a Bedrock model outside the list.
 */
import { MODEL_ENV } from '#adapters/model/openai-compatible';
import type { LlmClassName } from '#core/flows/llm-config';
import { bedrockModel } from '#shared/bedrock-models';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';

export interface ModelInfo {
  /** What `llmConfig.properties.model` names (`offline` for the offline model, which takes no model name). */
  readonly id: string;
  readonly provider: 'bedrock' | 'openai-compatible' | 'offline';
  /** The `llmConfig.name` that calls it. */
  readonly llmConfigName: LlmClassName;
  /** Bedrock only: a foundation model, or a cross-Region inference profile (its id starts with a geography). */
  readonly kind?: 'foundation-model' | 'inference-profile';
  /** The model a node without llmConfig (and generate) uses. */
  readonly default: boolean;
  /** Whether the user's attached images reach it (MODEL_IMAGE_INPUT, BEDROCK_IMAGE_INPUT). */
  readonly imageInput: boolean;
  /** Whether a prompt node's `tools` may be offered to it (every class calls tools; the offline model by name). */
  readonly tools: boolean;
  /** The offline model is not a language model: it answers with its prompt's text and routes by shared words. */
  readonly languageModel: boolean;
}

/** The Bedrock models of BEDROCK_MODELS; undefined where the variable is not set (a local run: not checked). */
export function bedrockModelsFromEnv(env: EnvironmentValues = handlerEnvironment()): string[] | undefined {
  return commaList(env.BEDROCK_MODELS);
}

function commaList(raw: string | undefined): string[] | undefined {
  return raw
    ?.split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** The Lambda functions of AGENT_CODE_FUNCTIONS a definition may name as agent code; undefined where it is not set. */
export function agentCodeFunctionsFromEnv(env: EnvironmentValues = handlerEnvironment()): string[] | undefined {
  return commaList(env.AGENT_CODE_FUNCTIONS);
}

export function modelCatalogFromEnv(env: EnvironmentValues = handlerEnvironment()): ModelInfo[] {
  const bedrock = bedrockModelsFromEnv(env) ?? [];
  const openAiName = env[MODEL_ENV.baseUrl] ? env[MODEL_ENV.model] : undefined;
  const bedrockImages = env.BEDROCK_IMAGE_INPUT !== 'false';
  const openAiImages = env[MODEL_ENV.imageInput] !== 'false';
  // The default's order is the flow model resolver's (flow-model.ts): the OpenAI-compatible server, then Bedrock.
  const models: ModelInfo[] = [];
  if (openAiName) {
    models.push({
      id: openAiName,
      provider: 'openai-compatible',
      llmConfigName: 'ChatOpenAICompatible',
      default: true,
      imageInput: openAiImages,
      tools: true,
      languageModel: true,
    });
  }
  bedrock.forEach((id, index) => {
    models.push({
      id,
      provider: 'bedrock',
      llmConfigName: 'ChatBedrockConverse',
      kind: bedrockModel(id).kind,
      default: !openAiName && index === 0,
      imageInput: bedrockImages,
      tools: true,
      languageModel: true,
    });
  });
  models.push({
    id: 'offline',
    provider: 'offline',
    llmConfigName: 'ChatOffline',
    default: models.length === 0,
    imageInput: false,
    tools: true,
    languageModel: false,
  });
  return models;
}
