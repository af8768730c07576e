/**
 * The OpenAI-compatible embedder against a scripted `/v1/embeddings` server on 127.0.0.1 (real HTTP), so batching,
 * headers, redirects, timeouts and errors are the real ones.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  EMBEDDER_ENV,
  OpenAiCompatibleEmbedder,
  openAiCompatibleEmbedderFromEnv,
} from '#adapters/embedding/openai-compatible';
import { EmbedderError } from '#ports/processing';
import {
  json,
  SCRIPTED_DIMENSIONS,
  type ScriptedEmbeddingsServer,
  scriptedVector,
  startEmbeddingsServer,
} from '../../../helpers/embeddings-server';

const MODEL = 'scripted-embed';
const KEY = 'sk-test-embedder-secret-0123456789';

let server: ScriptedEmbeddingsServer;

beforeAll(async () => {
  server = await startEmbeddingsServer({ model: MODEL, apiKey: KEY });
});
beforeEach(() => {
  server.requests.length = 0;
  server.script(null);
});
afterAll(() => server.close());

function embedder(options: Partial<ConstructorParameters<typeof OpenAiCompatibleEmbedder>[0]> = {}) {
  return new OpenAiCompatibleEmbedder(
    { baseUrl: server.baseUrl, model: MODEL, apiKey: KEY, ...options },
    SCRIPTED_DIMENSIONS,
  );
}

async function failureOf(promise: Promise<unknown>): Promise<EmbedderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EmbedderError);
  return error as EmbedderError;
}

describe('OpenAiCompatibleEmbedder', () => {
  it('posts the model and an array input to {baseUrl}/embeddings with the key, and returns one vector per text', async () => {
    const texts = ['Refunds are paid in ten days.', 'The modem ships with a cord.'];
    const vectors = await embedder({ baseUrl: `${server.baseUrl}//` }).embed(texts);
    expect(vectors).toEqual(texts.map(scriptedVector));
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      url: '/v1/embeddings',
      body: { model: MODEL, input: texts },
    });
    expect(server.requests[0].headers.authorization).toBe(`Bearer ${KEY}`);
    expect(server.requests[0].headers['content-type']).toBe('application/json');
  });

  it('sends no Authorization header without a key', async () => {
    const open = await startEmbeddingsServer({ model: MODEL });
    try {
      await new OpenAiCompatibleEmbedder({ baseUrl: open.baseUrl, model: MODEL }, SCRIPTED_DIMENSIONS).embed(['x']);
      expect(open.requests[0].headers.authorization).toBeUndefined();
    } finally {
      await open.close();
    }
  });

  it('splits the texts into batches of at most maxBatchInputs, in order', async () => {
    const texts = Array.from({ length: 70 }, (_, i) => `router ${'day '.repeat(i % 5)}${i}`);
    const inputs = (i: number) => server.requests[i].body?.input as string[];
    const vectors = await embedder({ maxBatchInputs: 32 }).embed(texts);
    expect(server.requests.map((_, i) => inputs(i).length)).toEqual([32, 32, 6]);
    expect(server.requests.flatMap((_, i) => inputs(i))).toEqual(texts);
    expect(vectors).toEqual(texts.map(scriptedVector));
  });

  it('splits by characters too, and sends a text longer than the cap alone', async () => {
    const texts = ['a'.repeat(1000), 'b'.repeat(1000), 'c'.repeat(1000), 'd'.repeat(5000), 'e'.repeat(10)];
    await embedder({ maxBatchCharacters: 2500 }).embed(texts);
    const firstLetters = (input: unknown) => (input as string[]).map((t) => t[0]).join('');
    expect(server.requests.map((r) => firstLetters(r.body?.input))).toEqual(['ab', 'c', 'd', 'e']);
  });

  it('makes no request for no texts', async () => {
    await expect(embedder().embed([])).resolves.toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it('puts the vectors in input order by their index when the server answers them out of order', async () => {
    server.script((request, response) => {
      const input = request.body?.input as string[];
      const data = input.map((text, index) => ({ index, embedding: scriptedVector(text) })).reverse();
      json(response, 200, { data });
    });
    const texts = ['refund', 'router', 'reset'];
    await expect(embedder().embed(texts)).resolves.toEqual(texts.map(scriptedVector));
  });

  it('answers 502 EMBEDDER_ERROR naming the model and status, never the URL or key; the log detail has the URL', async () => {
    server.script((_, response) => json(response, 500, { error: `boom; Authorization: Bearer ${KEY}` }));
    const error = await failureOf(embedder().embed(['refund']));
    expect(error).toMatchObject({ status: 502, code: 'EMBEDDER_ERROR' });
    expect(error.message).toBe(`The embedder openai-compatible:${MODEL} answered HTTP 500`);
    expect(error.detail).toContain(`${server.baseUrl}/embeddings answered HTTP 500`);
    expect(error.detail).toContain('boom');
    expect(`${error.message} ${error.detail}`).not.toContain(KEY);
  });

  it('reports a wrong key and an unknown model as the server said, by status', async () => {
    const wrongKey = await failureOf(embedder({ apiKey: 'sk-wrong-key-0000000000' }).embed(['x']));
    expect(wrongKey.message).toMatch(/answered HTTP 401$/);
    const wrongModel = await failureOf(embedder({ model: 'nomic-embed-text' }).embed(['x']));
    expect(wrongModel.message).toBe('The embedder openai-compatible:nomic-embed-text answered HTTP 404');
    expect(wrongModel.detail).toContain('not found');
  });

  it('answers 504 EMBEDDER_TIMEOUT when the server does not answer in time', async () => {
    server.script(() => undefined);
    const error = await failureOf(embedder({ timeoutMs: 300 }).embed(['refund']));
    expect(error).toMatchObject({ status: 504, code: 'EMBEDDER_TIMEOUT' });
    expect(error.message).toBe(`The embedder openai-compatible:${MODEL} did not answer within 300 ms`);
  });

  it('answers 502 when the server cannot be reached', async () => {
    const closed = await startEmbeddingsServer();
    const baseUrl = closed.baseUrl;
    await closed.close();
    const error = await failureOf(embedder({ baseUrl }).embed(['refund']));
    expect(error).toMatchObject({
      status: 502,
      message: `The embedder openai-compatible:${MODEL} could not be reached`,
    });
    expect(error.detail).toMatch(/ECONNREFUSED/);
  });

  it.each([
    ['no data', { object: 'list' }, /without one embedding per input/],
    ['fewer embeddings than inputs', { data: [{ index: 0, embedding: scriptedVector('a') }] }, /one embedding per/],
    ['a vector of strings', { data: [0, 1].map((index) => ({ index, embedding: ['1'] })) }, /one embedding per/],
    ['a repeated index', { data: [0, 0].map((index) => ({ index, embedding: scriptedVector('a') })) }, /one to one/],
    ['vectors of another size', { data: [0, 1].map((index) => ({ index, embedding: [1, 2, 3] })) }, /3-dimension/],
  ])('answers 502 for an answer with %s', async (_, body, message) => {
    server.script((__, response) => json(response, 200, body));
    const error = await failureOf(embedder().embed(['a', 'b']));
    expect(error).toMatchObject({ status: 502, code: 'EMBEDDER_ERROR', message: expect.stringMatching(message) });
  });

  it('answers 502 for a body that is not JSON', async () => {
    server.script((_, response) => response.writeHead(200).end('<html>proxy error</html>'));
    const error = await failureOf(embedder().embed(['a']));
    expect(error.detail).toContain('<html>proxy error</html>');
  });

  it('does not follow a redirect, so the key never reaches another host', async () => {
    let reached = 0;
    const elsewhere: Server = createServer((_, response) => {
      reached++;
      json(response, 200, { data: [{ index: 0, embedding: scriptedVector('a') }] });
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    try {
      const target = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/v1/embeddings`;
      server.script((_, response) => response.writeHead(307, { location: target }).end());
      const error = await failureOf(embedder().embed(['a']));
      expect(error.status).toBe(502);
      expect(reached).toBe(0);
    } finally {
      await new Promise<void>((resolve) => elsewhere.close(() => resolve()));
    }
  });
});

describe('openAiCompatibleEmbedderFromEnv', () => {
  const env = (extra: Record<string, string> = {}) => ({
    [EMBEDDER_ENV.baseUrl]: server.baseUrl,
    [EMBEDDER_ENV.model]: MODEL,
    [EMBEDDER_ENV.apiKey]: KEY,
    ...extra,
  });

  it('learns the dimensions from the answer to one probe when EMBEDDER_DIMENSIONS is unset', async () => {
    const configured = await openAiCompatibleEmbedderFromEnv(env());
    expect(configured.dimensions).toBe(SCRIPTED_DIMENSIONS);
    expect(configured.vectorSpace).toBe(`openai-compatible:${MODEL}`);
    expect(server.requests).toHaveLength(1);
  });

  it('makes no request at start with EMBEDDER_DIMENSIONS, and refuses answers of another size', async () => {
    const configured = await openAiCompatibleEmbedderFromEnv(env({ [EMBEDDER_ENV.dimensions]: '768' }));
    expect(configured.dimensions).toBe(768);
    expect(server.requests).toHaveLength(0);
    const error = await failureOf(configured.embed(['refund']));
    expect(error.message).toBe(
      `The embedder openai-compatible:${MODEL} answered ${SCRIPTED_DIMENSIONS}-dimension vectors; 768 were expected`,
    );
  });

  it('fails at start, naming the way out, when the server is down and the dimensions unknown', async () => {
    const closed = await startEmbeddingsServer();
    await closed.close();
    await expect(openAiCompatibleEmbedderFromEnv(env({ [EMBEDDER_ENV.baseUrl]: closed.baseUrl }))).rejects.toThrow(
      /could not be reached while learning its dimensions .*ECONNREFUSED.*set EMBEDDER_DIMENSIONS/,
    );
  });

  it.each([
    [{ [EMBEDDER_ENV.baseUrl]: '' }, /needs EMBEDDER_BASE_URL/],
    [{ [EMBEDDER_ENV.baseUrl]: 'file:///etc/passwd' }, /EMBEDDER_BASE_URL must be an http\(s\) URL/],
    [
      { [EMBEDDER_ENV.baseUrl]: 'http://user:secret@127.0.0.1:1/v1' },
      /must not hold credentials: set EMBEDDER_API_KEY/,
    ],
    [{ [EMBEDDER_ENV.model]: '' }, /needs EMBEDDER_MODEL/],
    [{ [EMBEDDER_ENV.timeoutMs]: '5s' }, /EMBEDDER_TIMEOUT_MS must be a positive integer, got 5s/],
    [{ [EMBEDDER_ENV.dimensions]: '0' }, /EMBEDDER_DIMENSIONS must be a positive integer, got 0/],
  ])('refuses %j', async (extra, message) => {
    await expect(openAiCompatibleEmbedderFromEnv(env(extra))).rejects.toThrow(message);
    expect(server.requests).toHaveLength(0);
  });
});
