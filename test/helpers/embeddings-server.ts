/**
 * A scripted OpenAI-compatible embeddings server on 127.0.0.1 (`POST /v1/embeddings`), for the embedder's tests. By
 * default it answers like Ollama or text-embeddings-inference would, with deterministic vectors: a bag of concepts
 * over a small fixed vocabulary in which synonyms share a dimension, so a test can build a query whose words are not
 * in a document but whose vector is nearest to it. A test can script any other answer (errors, stalls, redirects).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One dimension per concept; every word of a concept adds 1 to it. Other words add nothing. */
export const CONCEPTS: readonly (readonly string[])[] = [
  ['refund', 'refunds', 'refunded', 'reimbursement', 'reimbursed', 'repay', 'repayment', 'money'],
  ['router', 'routers', 'modem', 'gateway', 'wifi'],
  ['reset', 'resets', 'restart', 'reboot', 'rebooted'],
  ['ship', 'ships', 'shipping', 'delivery', 'deliver', 'parcel', 'courier'],
  ['cable', 'cables', 'cord', 'wire', 'charger'],
  ['billing', 'invoice', 'invoices', 'payment', 'charge', 'charged'],
  ['support', 'help', 'helpdesk', 'assistance'],
  ['day', 'days', 'week', 'weeks', 'hour', 'hours'],
  ['password', 'passwords', 'credentials', 'login', 'passphrase'],
  ['privacy', 'logs', 'data', 'confidential'],
];
/** A small constant component, so a text without a known word still has a direction (cosine needs one). */
const BIAS = 0.1;
export const SCRIPTED_DIMENSIONS = CONCEPTS.length + 1;

const conceptOf = new Map(CONCEPTS.flatMap((words, dimension) => words.map((word) => [word, dimension] as const)));

/** The vector the scripted server gives `text`. */
export function scriptedVector(text: string): number[] {
  const vector = new Array<number>(SCRIPTED_DIMENSIONS).fill(0);
  vector[CONCEPTS.length] = BIAS;
  for (const word of text.toLowerCase().split(/[^a-z0-9]+/)) {
    const dimension = conceptOf.get(word);
    if (dimension !== undefined) vector[dimension] += 1;
  }
  return vector;
}

export interface RecordedEmbeddingsRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: { model?: unknown; input?: unknown } | undefined;
}

/** Answers one request; `respond` gives the default answer (the scripted vectors). */
export type EmbeddingsAnswer = (
  request: RecordedEmbeddingsRequest,
  response: ServerResponse,
  respond: () => void,
) => void;

export interface ScriptedEmbeddingsServer {
  /** `http://127.0.0.1:<port>/v1`: what EMBEDDER_BASE_URL is set to. */
  readonly baseUrl: string;
  readonly requests: RecordedEmbeddingsRequest[];
  /** Answers the next requests with `answer`; null goes back to the scripted vectors. */
  script(answer: EmbeddingsAnswer | null): void;
  close(): Promise<void>;
}

export function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * Starts the server. `model` is the one model it serves (others get Ollama's 404); with `apiKey` a request without
 * `Authorization: Bearer <apiKey>` gets a 401.
 */
export async function startEmbeddingsServer(
  options: { model?: string; apiKey?: string } = {},
): Promise<ScriptedEmbeddingsServer> {
  const model = options.model ?? 'scripted-embed';
  const requests: RecordedEmbeddingsRequest[] = [];
  let scripted: EmbeddingsAnswer | null = null;

  const respond = (request: RecordedEmbeddingsRequest, response: ServerResponse) => {
    if (request.method !== 'POST' || request.url !== '/v1/embeddings') {
      return json(response, 404, { error: { message: `no route ${request.method} ${request.url}` } });
    }
    if (options.apiKey && request.headers.authorization !== `Bearer ${options.apiKey}`) {
      return json(response, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } });
    }
    const body = request.body;
    if (body?.model !== model) {
      return json(response, 404, {
        error: { message: `model "${String(body?.model)}" not found, try pulling it first` },
      });
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(input) || input.some((text) => typeof text !== 'string')) {
      return json(response, 400, { error: { message: 'input must be a string or an array of strings' } });
    }
    json(response, 200, {
      object: 'list',
      model,
      data: input.map((text: string, index) => ({ object: 'embedding', index, embedding: scriptedVector(text) })),
      usage: { prompt_tokens: 0, total_tokens: 0 },
    });
  };

  const server: Server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      let body: RecordedEmbeddingsRequest['body'];
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        body = undefined;
      }
      const recorded = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body };
      requests.push(recorded);
      const answer = () => respond(recorded, response);
      if (scripted) scripted(recorded, response, answer);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    script(answer) {
      scripted = answer;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
