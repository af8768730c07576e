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
  };
}
