/**
 * ModelProvider on any OpenAI-compatible chat completions endpoint (llama.cpp server, Ollama, vLLM, LM Studio, a
 * hosted API). Configured by MODEL_BASE_URL and MODEL_NAME; without them generate is extractive and offline.
 */
import * as z from 'zod';
import { ModelError, type ModelProvider, type ModelRequest, type ModelResponse } from '../../ports/model';

export const DEFAULT_MODEL_TIMEOUT_MS = 60_000;
/** How much of an error body goes into `ModelError.detail` (for the log, never the caller). */
const ERROR_BODY_EXCERPT = 500;

export interface OpenAiCompatibleOptions {
  /** Up to and including the API version, without `/chat/completions`: `http://127.0.0.1:11434/v1`. */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; local servers usually need none. */
  readonly apiKey?: string;
  readonly model: string;
  readonly timeoutMs?: number;
}

const completionSchema = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string().nullish() }).nullish() })).min(1),
});

export class OpenAiCompatibleModel implements ModelProvider {
  readonly name: string;
  private readonly url: string;
  private readonly timeoutMs: number;

  constructor(private readonly options: OpenAiCompatibleOptions) {
    this.name = `openai-compatible:${options.model}`;
    this.url = `${withoutTrailingSlashes(options.baseUrl)}/chat/completions`;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    const messages = [
      ...(request.system === undefined ? [] : [{ role: 'system' as const, content: request.system }]),
      ...request.messages.map(({ role, content }) => ({ role, content })),
    ];
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;

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
      );
    }
    const parsed = completionSchema.safeParse(parseJson(body));
    const text = parsed.success ? parsed.data.choices[0].message?.content : undefined;
    if (typeof text !== 'string') {
      throw new ModelError(
        `The model ${this.name} answered without a completion`,
        `POST ${this.url} answered HTTP ${response.status} without choices[0].message.content: ${body.slice(0, ERROR_BODY_EXCERPT)}`,
      );
    }
    return { text };
  }

  private failure(error: unknown, timedOut: boolean): ModelError {
    if (timedOut) {
      return new ModelError(
        `The model ${this.name} did not answer within ${this.timeoutMs} ms`,
        `POST ${this.url}: no answer within ${this.timeoutMs} ms`,
        'timeout',
      );
    }
    return new ModelError(`The model ${this.name} could not be reached`, `POST ${this.url}: ${describe(error)}`);
  }
}

/** `fetch failed (connect ECONNREFUSED 127.0.0.1:8080)`: undici puts the useful part in `cause`. */
function describe(error: unknown): string {
  const { message, cause } = (error ?? {}) as { message?: unknown; cause?: { message?: unknown } };
  const text = typeof message === 'string' ? message : String(error);
  return typeof cause?.message === 'string' ? `${text} (${cause.message})` : text;
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** The environment variables `modelProviderFromEnv` reads. */
export const MODEL_ENV = {
  baseUrl: 'MODEL_BASE_URL',
  model: 'MODEL_NAME',
  apiKey: 'MODEL_API_KEY',
  timeoutMs: 'MODEL_TIMEOUT_MS',
} as const;

/**
 * The configured model, or null for the extractive default when MODEL_BASE_URL is unset. A base URL without
 * MODEL_NAME, a base URL that is not http(s), or a timeout that is not a positive integer fails loudly.
 */
export function modelProviderFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
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
  const apiKey = env[MODEL_ENV.apiKey] || undefined;
  return new OpenAiCompatibleModel({ baseUrl, model, apiKey, timeoutMs });
}

/** `http://host/v1///` → `http://host/v1`, with a loop: `/\/+$/` is quadratic on a long run of slashes. */
function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}
