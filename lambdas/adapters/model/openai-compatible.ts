/**
 * ModelProvider on any OpenAI-compatible chat completions endpoint (llama.cpp server, Ollama, vLLM, LM Studio, a
 * hosted API). Configured by MODEL_BASE_URL and MODEL_NAME; without them generate is extractive and offline.
 */
import * as z from 'zod';
import { describeFetchFailure, parseJsonOrUndefined, withoutTrailingSlashes } from '#adapters/network/http-client-text';
import {
  ModelError,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ModelToolCall,
  type ModelToolRound,
} from '#ports/model';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';
import type { ApiKeySource } from './secret-api-key';

export const DEFAULT_MODEL_TIMEOUT_MS = 60_000;
/** How much of an error body goes into `ModelError.detail` (for the log, never the caller). */
const ERROR_BODY_EXCERPT = 500;

export interface OpenAiCompatibleOptions {
  /** Up to and including the API version, without `/chat/completions`: `http://127.0.0.1:11434/v1`. */
  readonly baseUrl: string;
  /**
   * Sent as `Authorization: Bearer <apiKey>`; local servers usually need none. A source is asked at each call (in
   * AWS the secret's, which reads it once per container: secret-api-key.ts).
   */
  readonly apiKey?: string | ApiKeySource;
  readonly model: string;
  readonly timeoutMs?: number;
  /** Whether the model reads images (MODEL_IMAGE_INPUT); default true. */
  readonly imageInput?: boolean;
}

const toolCallSchema = z.object({
  // Some servers leave the id out; the adapter numbers such calls itself.
  id: z.string().min(1).nullish(),
  function: z.object({
    name: z.string().min(1),
    // The protocol says a JSON string; some servers send the object itself.
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  }),
});

const completionSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish(), tool_calls: z.array(toolCallSchema).nullish() }).nullish(),
      }),
    )
    .min(1),
  /** Optional in the protocol (and absent from some servers); a malformed one is ignored, not an error. */
  usage: z
    .object({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) })
    .nullish()
    .catch(undefined),
});

export class OpenAiCompatibleModel implements ModelProvider {
  readonly name: string;
  readonly imageInput: boolean;
  private readonly url: string;
  private readonly timeoutMs: number;

  constructor(private readonly options: OpenAiCompatibleOptions) {
    this.name = `openai-compatible:${options.model}`;
    this.url = `${withoutTrailingSlashes(options.baseUrl)}/chat/completions`;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
    this.imageInput = options.imageInput ?? true;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    const messages = [
      ...(request.system === undefined ? [] : [{ role: 'system' as const, content: request.system }]),
      ...request.messages.flatMap(chatMessagesOf),
      ...(request.toolRounds ?? []).flatMap(toolRoundMessages),
    ];
    const tools = request.tools?.length
      ? request.tools.map(({ name, description, inputSchema }) => ({
          type: 'function' as const,
          function: { name, description, parameters: inputSchema },
        }))
      : undefined;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    const { apiKey: configured } = this.options;
    const apiKey = typeof configured === 'function' ? await configured() : configured;
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;

    // The only abort is this timeout, so an aborted signal tells a timeout from any other failure.
    const signal = AbortSignal.timeout(this.timeoutMs);
    let response: Response;
    let body: string;
    try {
      response = await fetch(this.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          model: this.options.model,
          messages,
          max_tokens: request.maxTokens,
          temperature: request.temperature,
          top_p: request.topP,
          stop: request.stopSequences,
          tools,
        }),
        signal,
      });
      body = await response.text();
    } catch (error) {
      throw this.failure(error, signal.aborted);
    }

    if (!response.ok) {
      throw new ModelError(
        `The model ${this.name} answered HTTP ${response.status}`,
        `POST ${this.url} answered HTTP ${response.status}: ${body.slice(0, ERROR_BODY_EXCERPT)}`,
        'unavailable',
        response.status,
      );
    }
    const parsed = completionSchema.safeParse(parseJsonOrUndefined(body));
    const message = parsed.success ? parsed.data.choices[0].message : undefined;
    const text = message?.content;
    // Tool calls count only when tools were offered: a server that invents calls otherwise is answering nothing.
    const toolCalls = request.tools?.length ? (message?.tool_calls ?? []).map(toolCallOf) : [];
    const reported = parsed.success ? parsed.data.usage : undefined;
    const usage = reported
      ? { inputTokens: reported.prompt_tokens, outputTokens: reported.completion_tokens }
      : undefined;
    if (toolCalls.length > 0) return { text: text ?? '', toolCalls, ...(usage ? { usage } : {}) };
    if (typeof text !== 'string') {
      throw new ModelError(
        `The model ${this.name} answered without a completion`,
        `POST ${this.url} answered HTTP ${response.status} without choices[0].message.content: ${body.slice(0, ERROR_BODY_EXCERPT)}`,
      );
    }
    return { text, ...(usage ? { usage } : {}) };
  }

  private failure(error: unknown, timedOut: boolean): ModelError {
    if (timedOut) {
      return new ModelError(
        `The model ${this.name} did not answer within ${this.timeoutMs} ms`,
        `POST ${this.url}: no answer within ${this.timeoutMs} ms`,
        'timeout',
      );
    }
    return new ModelError(
      `The model ${this.name} could not be reached`,
      `POST ${this.url}: ${describeFetchFailure(error)}`,
    );
  }
}

/**
 * A message as chat completions carries it. A user message with images is a list of parts: its text (none when
 * empty: some servers refuse an empty text part), then each image as an `image_url` part holding a data URL, the
 * form every OpenAI-compatible server with vision reads (a URL to fetch would reach the model server's network).
 */
function chatMessagesOf({ role, content, images, toolStep }: ModelMessage): object[] {
  // An earlier tool node's step: its call as the assistant's, and its result, as a round of this node would be.
  if (role === 'tool') {
    const call = toolStep?.call ?? { id: 'tool_step', name: 'tool', input: {} };
    return toolRoundMessages({ calls: [call], results: [{ callId: call.id, content: toolStep?.result ?? content }] });
  }
  if (role !== 'user' || !images?.length) return [{ role, content }];
  return [
    {
      role,
      content: [
        ...(content === '' ? [] : [{ type: 'text' as const, text: content }]),
        ...images.map((image) => ({
          type: 'image_url' as const,
          image_url: {
            url: `data:${image.mediaType};base64,${Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength).toString('base64')}`,
          },
        })),
      ],
    },
  ];
}

/** A round as chat completions carries it: the assistant's `tool_calls`, then one `tool` message per result. */
function toolRoundMessages(round: ModelToolRound) {
  return [
    {
      role: 'assistant' as const,
      content: round.text || null,
      tool_calls: round.calls.map((call) => ({
        id: call.id,
        type: 'function' as const,
        // Arguments that were not JSON go back as the text the model sent.
        function: {
          name: call.name,
          arguments: typeof call.input === 'string' ? call.input : JSON.stringify(call.input),
        },
      })),
    },
    ...round.results.map((result) => ({
      role: 'tool' as const,
      tool_call_id: result.callId,
      content: JSON.stringify(result.content) ?? 'null',
    })),
  ];
}

function toolCallOf(call: z.output<typeof toolCallSchema>, index: number): ModelToolCall {
  const raw = call.function.arguments;
  let input: unknown = raw ?? {};
  if (typeof raw === 'string') input = raw.trim() === '' ? {} : (parseJsonOrUndefined(raw) ?? raw);
  return { id: call.id ?? `call_${index}`, name: call.function.name, input };
}

/** The environment variables `modelProviderFromEnv` reads. */
export const MODEL_ENV = {
  baseUrl: 'MODEL_BASE_URL',
  model: 'MODEL_NAME',
  apiKey: 'MODEL_API_KEY',
  timeoutMs: 'MODEL_TIMEOUT_MS',
  imageInput: 'MODEL_IMAGE_INPUT',
} as const;

/**
 * The configured model, or null for the extractive default when MODEL_BASE_URL is unset. A base URL without
 * MODEL_NAME, a base URL that is not http(s), or a timeout that is not a positive integer fails loudly.
 */
export function modelProviderFromEnv(
  env: EnvironmentValues = handlerEnvironment(),
  /** Where the key comes from when not MODEL_API_KEY (composition/model-api-key.ts: a secret in AWS). */
  apiKeySource?: ApiKeySource,
): OpenAiCompatibleModel | null {
  const baseUrl = env[MODEL_ENV.baseUrl];
  if (baseUrl === undefined || baseUrl === '') return null;
  if (!/^https?:\/\/[^/]/.test(baseUrl) || !URL.canParse(baseUrl)) {
    throw new Error(`Invalid configuration: ${MODEL_ENV.baseUrl} must be an http(s) URL`);
  }
  const model = env[MODEL_ENV.model];
  if (model === undefined || model === '') {
    throw new Error(
      `Missing configuration: environment variable ${MODEL_ENV.model} (required with ${MODEL_ENV.baseUrl})`,
    );
  }
  const rawTimeout = env[MODEL_ENV.timeoutMs];
  let timeoutMs: number | undefined;
  if (rawTimeout !== undefined && rawTimeout !== '') {
    timeoutMs = Number(rawTimeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
      throw new Error(`Invalid configuration: ${MODEL_ENV.timeoutMs} must be a positive integer`);
    }
  }
  const apiKey = apiKeySource ?? (env[MODEL_ENV.apiKey] || undefined);
  const imageInput = imageInputFromEnv(env, MODEL_ENV.imageInput);
  return new OpenAiCompatibleModel({ baseUrl, model, apiKey, timeoutMs, imageInput });
}

/**
 * MODEL_IMAGE_INPUT / BEDROCK_IMAGE_INPUT: `true` (the default: the models the service is meant for read images) or
 * `false` for a text-only model, whose prompt nodes are then told in words that images were attached. Anything else
 * fails loudly.
 */
export function imageInputFromEnv(env: Readonly<Record<string, string | undefined>>, variable: string): boolean {
  const value = env[variable];
  if (value === undefined || value === '' || value === 'true') return true;
  if (value === 'false') return false;
  throw new Error(`Invalid configuration: ${variable} must be 'true' or 'false'`);
}
