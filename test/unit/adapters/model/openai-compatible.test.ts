/**
 * The OpenAI-compatible model adapter against a real HTTP server on 127.0.0.1 that records each request and answers
 * as a chat completions endpoint would (or fails, or stalls), so fetch, headers, timeouts and errors are the real ones.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { modelProviderFromEnv, OpenAiCompatibleModel } from '#adapters/model/openai-compatible';
import { generateWithCitations } from '#core/retrieval/generate';
import { ModelError } from '#ports/model';
import type { IndexHit } from '#ports/processing';
import { NO_METADATA } from '../../../helpers/chunks';

interface Recorded {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
}

type Answer = (request: Recorded, response: ServerResponse) => void;

let server: Server;
let baseUrl: string;
let recorded: Recorded[];
let answer: Answer;

const completion = (content: string | null) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'local-model',
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
});

function json(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

beforeAll(async () => {
  server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      const entry = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: text === '' ? undefined : JSON.parse(text),
      };
      recorded.push(entry);
      answer(entry, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

beforeEach(() => {
  recorded = [];
  answer = (_, response) => json(response, 200, completion('Hello from the model.'));
});

afterEach(() => {
  // A stalled answer would otherwise hold its socket open past the test.
  server.closeAllConnections();
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('OpenAiCompatibleModel', () => {
  it('posts the system text and messages to {baseUrl}/chat/completions and returns the completion', async () => {
    const model = new OpenAiCompatibleModel({ baseUrl: `${baseUrl}/`, apiKey: 'sk-local', model: 'local-model' });
    const response = await model.generate({
      system: 'Be brief.',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'And now?' },
      ],
      maxTokens: 64,
      temperature: 0,
    });

    // The usage the server reported, under the port's names.
    expect(response).toEqual({ text: 'Hello from the model.', usage: { inputTokens: 10, outputTokens: 5 } });
    expect(recorded).toHaveLength(1);
    const [request] = recorded;
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/v1/chat/completions');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers.authorization).toBe('Bearer sk-local');
    expect(request.body).toEqual({
      model: 'local-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'And now?' },
      ],
      max_tokens: 64,
      temperature: 0,
    });
    expect(model.name).toBe('openai-compatible:local-model');
  });

  it('sends no Authorization header and no unset options when there is no API key', async () => {
    await new OpenAiCompatibleModel({ baseUrl, model: 'm' }).generate({ messages: [{ role: 'user', content: 'Hi' }] });

    expect(recorded[0].headers.authorization).toBeUndefined();
    expect(recorded[0].body).toEqual({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
  });

  it('fails with a 502 ModelError naming the status, keeping the body for the log only, on an HTTP 500', async () => {
    answer = (_, response) => json(response, 500, { error: { message: 'CUDA out of memory at 0xdeadbeef' } });
    const error = await new OpenAiCompatibleModel({ baseUrl, model: 'm' })
      .generate({ messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({
      status: 502,
      code: 'MODEL_ERROR',
      message: 'The model openai-compatible:m answered HTTP 500',
    });
    expect((error as ModelError).message).not.toContain('127.0.0.1');
    expect((error as ModelError).detail).toContain('CUDA out of memory');
  });

  it('fails with a 504 ModelError when the server does not answer within the timeout', async () => {
    let stalled = 0;
    answer = () => {
      stalled++;
    };
    const model = new OpenAiCompatibleModel({ baseUrl, model: 'm', timeoutMs: 200 });
    const started = Date.now();
    const error = await model.generate({ messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);

    expect(stalled).toBe(1);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ status: 504, code: 'MODEL_TIMEOUT', message: expect.stringContaining('200 ms') });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('fails with a ModelError when the answer holds no completion text', async () => {
    answer = (_, response) => json(response, 200, completion(null));
    await expect(
      new OpenAiCompatibleModel({ baseUrl, model: 'm' }).generate({ messages: [{ role: 'user', content: 'Hi' }] }),
    ).rejects.toMatchObject({ status: 502, message: expect.stringContaining('without a completion') });

    answer = (_, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy</html>');
    await expect(
      new OpenAiCompatibleModel({ baseUrl, model: 'm' }).generate({ messages: [{ role: 'user', content: 'Hi' }] }),
    ).rejects.toBeInstanceOf(ModelError);
  });

  it('fails with a 502 ModelError when nothing listens at the base URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    await expect(
      new OpenAiCompatibleModel({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' }).generate({
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    ).rejects.toMatchObject({ status: 502, message: 'The model openai-compatible:m could not be reached' });
  });

  it('answers generate-with-citations end to end, its [n] markers becoming citations', async () => {
    answer = (_, response) => json(response, 200, completion('Refunds are accepted for 30 days [2].'));
    const hits: IndexHit[] = ['Shipping takes five days.', 'Refunds are accepted within 30 days.'].map((text, i) => ({
      chunk: {
        agentId: 'agent-1',
        environment: 'production',
        knowledgeBaseId: 'kb-1',
        documentId: `doc-${i}`,
        chunkId: `doc-${i}#0#0`,
        s3Key: `agent-1/production/kb-1/doc-${i}/f.txt`,
        position: 0,
        text,
        ...NO_METADATA,
      },
      score: 0.5,
    }));
    const model = new OpenAiCompatibleModel({ baseUrl, model: 'm' });
    const result = await generateWithCitations(model, 'How long can I ask for a refund?', hits);

    expect(result.answer).toBe('Refunds are accepted for 30 days [2].');
    expect(result.citations).toEqual([
      { resultIndex: 1, documentId: 'doc-1', s3Key: 'agent-1/production/kb-1/doc-1/f.txt', chunkId: 'doc-1#0#0' },
    ]);
    const body = recorded[0].body as { messages: { role: string; content: string }[] };
    expect(body.messages[0].role).toBe('system');
    expect(body.messages[1].content).toContain(
      '[1] Shipping takes five days.\n\n[2] Refunds are accepted within 30 days.',
    );
  });
});

describe('modelProviderFromEnv', () => {
  it('is null (the extractive default) when MODEL_BASE_URL is unset or empty', () => {
    expect(modelProviderFromEnv({})).toBeNull();
    expect(modelProviderFromEnv({ MODEL_BASE_URL: '', MODEL_NAME: 'm' })).toBeNull();
  });

  it('builds a model that calls the configured endpoint with the configured key', async () => {
    const model = modelProviderFromEnv({ MODEL_BASE_URL: baseUrl, MODEL_NAME: 'llama3.1', MODEL_API_KEY: 'k' });

    expect(model).toBeInstanceOf(OpenAiCompatibleModel);
    await model?.generate({ messages: [{ role: 'user', content: 'Hi' }] });
    expect(recorded[0].headers.authorization).toBe('Bearer k');
    expect(recorded[0].body).toMatchObject({ model: 'llama3.1' });
  });

  it('fails loudly on a base URL without a model name, a base URL that is not http(s), or a bad timeout', () => {
    expect(() => modelProviderFromEnv({ MODEL_BASE_URL: baseUrl })).toThrow(/MODEL_NAME/);
    expect(() => modelProviderFromEnv({ MODEL_BASE_URL: 'localhost:8080', MODEL_NAME: 'm' })).toThrow(/MODEL_BASE_URL/);
    expect(() => modelProviderFromEnv({ MODEL_BASE_URL: baseUrl, MODEL_NAME: 'm', MODEL_TIMEOUT_MS: '5s' })).toThrow(
      /MODEL_TIMEOUT_MS/,
    );
  });
});
