/**
 * Embedder on any OpenAI-compatible `/embeddings` endpoint (Ollama, LM Studio, vLLM, text-embeddings-inference, a
 * hosted API): gives the embedded index vectors, and so hybrid retrieval, when EMBEDDER=openai-compatible. The
 * endpoint is the operator's configuration, never a tenant's, so it may be loopback; the API key goes to it alone.
 */
import * as z from 'zod';
import { describeFetchFailure, parseJsonOrUndefined, withoutTrailingSlashes } from '#adapters/network/http-client-text';
import { type Embedder, EmbedderError } from '#ports/processing';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';

export const DEFAULT_EMBEDDER_TIMEOUT_MS = 30_000;
/**
 * text-embeddings-inference refuses more than 32 inputs a request by default (`--max-client-batch-size`); Ollama,
 * vLLM and OpenAI take more, and gain little from it on one machine.
 */
export const DEFAULT_MAX_BATCH_INPUTS = 32;
/** 32 chunks of 1,000 characters, about 8k tokens: inside TEI's default `--max-batch-tokens` (16,384). */
export const DEFAULT_MAX_BATCH_CHARACTERS = 32_000;
/** How much of an error body goes into `EmbedderError.detail` (for the log, never the caller). */
const ERROR_BODY_EXCERPT = 500;
const DIMENSION_PROBE_TEXT = 'dimension probe';

export interface OpenAiCompatibleEmbedderOptions {
  /** Up to and including the API version, without `/embeddings`: `http://127.0.0.1:11434/v1`. */
  readonly baseUrl: string;
  readonly model: string;
  /** Sent as `Authorization: Bearer <apiKey>` to the base URL only; local servers usually need none. */
  readonly apiKey?: string;
  /** Per request (one batch), from sending to the last byte of the answer. */
  readonly timeoutMs?: number;
  readonly maxBatchInputs?: number;
  readonly maxBatchCharacters?: number;
}

const embeddingsSchema = z.object({
  data: z.array(z.object({ embedding: z.array(z.number()), index: z.number().int().nonnegative().optional() })),
});

export class OpenAiCompatibleEmbedder implements Embedder {
  readonly name: string;
  readonly vectorSpace: string;
  private readonly url: string;
  private readonly timeoutMs: number;
  private readonly maxBatchInputs: number;
  private readonly maxBatchCharacters: number;

  constructor(
    private readonly options: OpenAiCompatibleEmbedderOptions,
    readonly dimensions: number,
  ) {
    if (!(Number.isInteger(dimensions) && dimensions > 0)) {
      throw new Error(`Embedder dimensions must be a positive integer, got ${dimensions}`);
    }
    this.name = `openai-compatible:${options.model}`;
    this.vectorSpace = this.name;
    this.url = `${withoutTrailingSlashes(options.baseUrl)}/embeddings`;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_EMBEDDER_TIMEOUT_MS;
    this.maxBatchInputs = options.maxBatchInputs ?? DEFAULT_MAX_BATCH_INPUTS;
    this.maxBatchCharacters = options.maxBatchCharacters ?? DEFAULT_MAX_BATCH_CHARACTERS;
  }

  /**
   * The embedder with `dimensions`, or, without them, with the length of the vector the model gives a probe text:
   * the one request that learns it, at start, so the index knows its table before the first document.
   */
  static async create(
    options: OpenAiCompatibleEmbedderOptions,
    dimensions?: number,
  ): Promise<OpenAiCompatibleEmbedder> {
    if (dimensions !== undefined) return new OpenAiCompatibleEmbedder(options, dimensions);
    const probe = new OpenAiCompatibleEmbedder(options, 1);
    const [vector] = await probe.request([DIMENSION_PROBE_TEXT]);
    if (vector.length === 0) {
      throw new EmbedderError(`The embedder ${probe.name} answered an empty vector`, `POST ${probe.url}`);
    }
    return new OpenAiCompatibleEmbedder(options, vector.length);
  }

  async embed(texts: readonly string[]): Promise<number[][]> {
    const vectors: number[][] = [];
    // One batch at a time: a local server computes one at a time anyway, and parallel requests would only wait in
    // its queue, with their timeouts running.
    for (const batch of this.batches(texts)) {
      for (const vector of await this.request(batch)) {
        if (vector.length !== this.dimensions) {
          throw new EmbedderError(
            `The embedder ${this.name} answered ${vector.length}-dimension vectors; ${this.dimensions} were expected`,
            `POST ${this.url}: vector of ${vector.length} dimensions, expected ${this.dimensions} (EMBEDDER_DIMENSIONS or the first answer)`,
          );
        }
        vectors.push(vector);
      }
    }
    return vectors;
  }

  /** Consecutive runs of at most maxBatchInputs texts and maxBatchCharacters characters (a longer text alone). */
  batches(texts: readonly string[]): string[][] {
    const batches: string[][] = [];
    let current: string[] = [];
    let characters = 0;
    for (const text of texts) {
      if (
        current.length > 0 &&
        (current.length >= this.maxBatchInputs || characters + text.length > this.maxBatchCharacters)
      ) {
        batches.push(current);
        current = [];
        characters = 0;
      }
      current.push(text);
      characters += text.length;
    }
    if (current.length > 0) batches.push(current);
    return batches;
  }

  private async request(input: readonly string[]): Promise<number[][]> {
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
        body: JSON.stringify({ model: this.options.model, input }),
        // A redirect would carry the request, and with it the key, to a host nobody configured.
        redirect: 'error',
        signal,
      });
      body = await response.text();
    } catch (error) {
      throw this.failure(error, signal.aborted);
    }
    if (!response.ok) {
      throw new EmbedderError(
        `The embedder ${this.name} answered HTTP ${response.status}`,
        `POST ${this.url} answered HTTP ${response.status}: ${this.excerpt(body)}`,
      );
    }
    const parsed = embeddingsSchema.safeParse(parseJsonOrUndefined(body));
    if (!parsed.success || parsed.data.data.length !== input.length) {
      const got = parsed.success ? `${parsed.data.data.length} embeddings` : 'no data[].embedding';
      throw new EmbedderError(
        `The embedder ${this.name} answered without one embedding per input`,
        `POST ${this.url} answered HTTP ${response.status} with ${got} for ${input.length} inputs: ${this.excerpt(body)}`,
      );
    }
    return inInputOrder(parsed.data.data, input.length) ?? this.unordered(response.status, body);
  }

  private unordered(status: number, body: string): never {
    throw new EmbedderError(
      `The embedder ${this.name} answered embeddings that do not map one to one onto the inputs`,
      `POST ${this.url} answered HTTP ${status} with repeated or missing data[].index: ${this.excerpt(body)}`,
    );
  }

  private failure(error: unknown, timedOut: boolean): EmbedderError {
    if (timedOut) {
      return new EmbedderError(
        `The embedder ${this.name} did not answer within ${this.timeoutMs} ms`,
        `POST ${this.url}: no answer within ${this.timeoutMs} ms`,
        'timeout',
      );
    }
    return new EmbedderError(
      `The embedder ${this.name} could not be reached`,
      `POST ${this.url}: ${this.redact(describeFetchFailure(error))}`,
    );
  }

  /** Servers quote the request in their errors (some a part of the key): the key never reaches a log. */
  private excerpt(body: string): string {
    return this.redact(body.slice(0, ERROR_BODY_EXCERPT));
  }

  private redact(text: string): string {
    const key = this.options.apiKey;
    return key ? text.split(key).join('[EMBEDDER_API_KEY]') : text;
  }
}

/** The vectors by `index` when every item has one (OpenAI's contract), else in the order given; null if inconsistent. */
function inInputOrder(data: readonly { embedding: number[]; index?: number }[], count: number): number[][] | null {
  if (data.every((item) => item.index === undefined)) return data.map((item) => item.embedding);
  const vectors: number[][] = new Array(count);
  for (const item of data) {
    if (item.index === undefined || item.index >= count || vectors[item.index] !== undefined) return null;
    vectors[item.index] = item.embedding;
  }
  return vectors;
}

/** The environment variables `openAiCompatibleEmbedderFromEnv` reads (with EMBEDDER=openai-compatible). */
export const EMBEDDER_ENV = {
  baseUrl: 'EMBEDDER_BASE_URL',
  model: 'EMBEDDER_MODEL',
  apiKey: 'EMBEDDER_API_KEY',
  timeoutMs: 'EMBEDDER_TIMEOUT_MS',
  dimensions: 'EMBEDDER_DIMENSIONS',
} as const;

/**
 * The embedder EMBEDDER=openai-compatible configures. Without EMBEDDER_DIMENSIONS the dimensions are learned from
 * the server's answer to one probe, so the server must answer at start; with it, no request is made until the
 * first document or query, and every answer is checked against it. Bad values fail loudly, naming the variable.
 */
export async function openAiCompatibleEmbedderFromEnv(
  env: EnvironmentValues = handlerEnvironment(),
): Promise<OpenAiCompatibleEmbedder> {
  const baseUrl = env[EMBEDDER_ENV.baseUrl];
  if (!baseUrl) throw new Error(`EMBEDDER=openai-compatible needs ${EMBEDDER_ENV.baseUrl} (http://host:port/v1)`);
  if (!/^https?:\/\/[^/]/.test(baseUrl) || !URL.canParse(baseUrl)) {
    throw new Error(`${EMBEDDER_ENV.baseUrl} must be an http(s) URL`);
  }
  const url = new URL(baseUrl);
  if (url.username || url.password) {
    // The URL is written to logs; a secret belongs in the variable that never is.
    throw new Error(`${EMBEDDER_ENV.baseUrl} must not hold credentials: set ${EMBEDDER_ENV.apiKey}`);
  }
  const model = env[EMBEDDER_ENV.model];
  if (!model) throw new Error(`EMBEDDER=openai-compatible needs ${EMBEDDER_ENV.model} (the server's model name)`);
  const timeoutMs = positiveInteger(env, EMBEDDER_ENV.timeoutMs);
  const dimensions = positiveInteger(env, EMBEDDER_ENV.dimensions);
  const options = { baseUrl, model, apiKey: env[EMBEDDER_ENV.apiKey] || undefined, timeoutMs };
  try {
    return await OpenAiCompatibleEmbedder.create(options, dimensions);
  } catch (error) {
    if (!(error instanceof EmbedderError)) throw error;
    throw new Error(
      `${error.message} while learning its dimensions (${error.detail}); start the server, or set ${EMBEDDER_ENV.dimensions}`,
    );
  }
}

function positiveInteger(env: Readonly<Record<string, string | undefined>>, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`);
  return value;
}
