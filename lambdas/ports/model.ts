/**
 * Port of the language model behind "generate with citations" when it runs outside Bedrock RetrieveAndGenerate:
 * any OpenAI-compatible endpoint (a local model server) or Bedrock Converse. No model configured means the
 * extractive answer of `core/retrieval/generate.ts`, which needs no network.
 */
import { AppError } from '../core/errors';

export type ModelRole = 'user' | 'assistant' | 'system';

export interface ModelMessage {
  readonly role: ModelRole;
  readonly content: string;
}

export interface ModelRequest {
  /** Instructions ahead of the conversation; a provider without a system field sends it as the first message. */
  readonly system?: string;
  readonly messages: readonly ModelMessage[];
  readonly maxTokens?: number;
  readonly temperature?: number;
}

export interface ModelResponse {
  readonly text: string;
}

export interface ModelProvider {
  /** Which provider and model answered (`openai-compatible:llama3.1`), for logs and `explain`. */
  readonly name: string;
  /** Rejects with ModelError when the model cannot be reached, fails, times out or answers without text. */
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
  ) {
    super(kind === 'timeout' ? 504 : 502, kind === 'timeout' ? 'MODEL_TIMEOUT' : 'MODEL_ERROR', message);
  }
}
