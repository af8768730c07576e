/** Which chat model a prompt node or browser task uses: part of an agent's definition. */

/** A prompt node's `llmConfig`: one of three chat-model classes and its optional properties (docs/flows.md). */
export const LLM_CLASS_NAMES = ['ChatBedrockConverse', 'ChatOpenAICompatible', 'ChatOffline'] as const;
export type LlmClassName = (typeof LLM_CLASS_NAMES)[number];

export interface LlmConfig {
  readonly name: LlmClassName;
  readonly properties?: {
    /** Model id (Bedrock model or inference profile id; the OpenAI-compatible server's model name). */
    readonly model?: string;
    readonly temperature?: number;
    readonly maxTokens?: number;
    readonly topP?: number;
    readonly stopSequences?: readonly string[];
  };
}

export interface LlmPropertyProblem {
  readonly property: string;
  readonly rule: string;
  readonly message: string;
}

/**
 * What one class does not take of the properties every class may be given (docs/flows.md, "Models"): the offline
 * model takes none (it is not a language model and would ignore them); Bedrock Converse takes a temperature from 0
 * to 1 (InferenceConfiguration), where OpenAI-compatible servers take 0 to 2.
 */
export function llmPropertyProblems(
  name: LlmClassName,
  properties: NonNullable<LlmConfig['properties']>,
): LlmPropertyProblem[] {
  if (name === 'ChatOffline') {
    return Object.keys(properties).map((property) => ({
      property,
      rule: 'llmConfig.unsupportedProperty',
      message: 'is not taken by ChatOffline: the offline model is not a language model and takes no properties',
    }));
  }
  if (name === 'ChatBedrockConverse' && properties.temperature !== undefined && properties.temperature > 1) {
    return [
      {
        property: 'temperature',
        rule: 'max',
        message: 'must be at most 1 for ChatBedrockConverse (Bedrock Converse takes 0 to 1)',
      },
    ];
  }
  return [];
}
