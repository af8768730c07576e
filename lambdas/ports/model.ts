/**
 * Port of the language model behind "generate with citations" when it runs outside Bedrock RetrieveAndGenerate:
 * any OpenAI-compatible endpoint (a local model server) or Bedrock Converse. No model configured means the
 * extractive answer of `core/retrieval/generate.ts`, which needs no network. Flow prompt nodes ask it too
 * (adapters/model/prompted-flow-model.ts), with the tools they scope.
 */
import { AppError } from '#core/errors';

/** `tool`: an earlier tool node's call and result, in a flow's transcript (`toolStep` holds them). */
export type ModelRole = 'user' | 'assistant' | 'system' | 'tool';

/** The image formats a message may carry (docs/flows.md, "Attachments"): what OpenAI and Converse both read. */
export const IMAGE_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

/** An image the user attached to a message, as the model gets it: the bytes themselves, never a URL to fetch. */
export interface ModelImage {
  readonly mediaType: ImageMediaType;
  readonly data: Uint8Array;
}

export interface ModelMessage {
  readonly role: ModelRole;
  readonly content: string;
  /**
   * Images of a user message (OpenAI `image_url` parts with a data URL, Converse `image` blocks). A provider without
   * image input (`imageInput` false) never gets them: PromptedFlowModel says in the text that they were there.
   */
  readonly images?: readonly ModelImage[];
  /**
   * Role `tool` only: the call an earlier tool node made and what it answered. OpenAI-compatible servers get it as an
   * assistant `tool_calls` message and its `tool` message; Converse, which takes tool blocks only beside a
   * `toolConfig`, as the user-turn text `content` (which says the same in words).
   */
  readonly toolStep?: { readonly call: ModelToolCall; readonly result: unknown };
}

export interface ModelRequest {
  /** Instructions ahead of the conversation; a provider without a system field sends it as the first message. */
  readonly system?: string;
  readonly messages: readonly ModelMessage[];
  readonly maxTokens?: number;
  readonly temperature?: number;
  /** Nucleus sampling (OpenAI `top_p`, Converse `topP`). */
  readonly topP?: number;
  /** Sequences that end the answer (OpenAI `stop`, Converse `stopSequences`). */
  readonly stopSequences?: readonly string[];
  /** Tools the model may call (OpenAI `tools`, Converse `toolConfig`); with them it may answer tool calls. */
  readonly tools?: readonly ModelTool[];
  /** After `messages`: the tool calls the model asked for in this turn so far, each round with its results. */
  readonly toolRounds?: readonly ModelToolRound[];
}

/** A tool as a model sees it: its name, what it does, and a JSON schema (type `object`) of its input. */
export interface ModelTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
}

/** One call the model asked for. `input` is what it sent: an object, or its text when that was not JSON. */
export interface ModelToolCall {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

/** The model's calls of one answer (and any text it said with them), and the result of each, in the same order. */
export interface ModelToolRound {
  readonly text?: string;
  readonly calls: readonly ModelToolCall[];
  readonly results: readonly { readonly callId: string; readonly content: unknown }[];
}

export interface ModelResponse {
  /** The answer; may be empty when the model answered with tool calls only. */
  readonly text: string;
  /** Present and not empty when the model asks for tool calls instead of (or besides) answering. */
  readonly toolCalls?: readonly ModelToolCall[];
  /** The tokens the provider counted for this call, when it reports them (OpenAI `usage`, Converse `usage`). */
  readonly usage?: ModelUsage;
}

export interface ModelUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export interface ModelProvider {
  /** Which provider and model answered (`openai-compatible:llama3.1`), for logs and `explain`. */
  readonly name: string;
  /** Whether the model reads images (MODEL_IMAGE_INPUT, BEDROCK_IMAGE_INPUT); absent: it does not. */
  readonly imageInput?: boolean;
  /** Rejects with ModelError when the model cannot be reached, fails, times out or answers neither text nor tool calls. */
  generate(request: ModelRequest): Promise<ModelResponse>;
}

/**
 * The model failed: 502 when it answered badly or could not be reached, 504 when it did not answer in time. The
 * message names the provider and the HTTP status, never the endpoint or the body; `detail` holds those for the log.
 */
export class ModelError extends AppError {
  constructor(
    message: string,
    readonly detail: string,
    kind: 'unavailable' | 'timeout' = 'unavailable',
    /** The provider's own HTTP status when it answered one (a 4xx is the provider refusing the request itself). */
    readonly providerStatus?: number,
  ) {
    super(kind === 'timeout' ? 504 : 502, kind === 'timeout' ? 'MODEL_TIMEOUT' : 'MODEL_ERROR', message);
  }
}
