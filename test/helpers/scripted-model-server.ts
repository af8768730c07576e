/**
 * A model server for tests that speaks the OpenAI chat completions protocol over real HTTP on 127.0.0.1: each
 * request is recorded as sent and answered by the test's script (a text answer, tool calls, or an HTTP error), so a
 * test asserts what the service sent a model (its tools' JSON schemas, its tool results as `tool` messages) and
 * drives what the model does. Point MODEL_BASE_URL at `baseUrl`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string | null;
  readonly tool_calls?: {
    readonly id: string;
    readonly type: 'function';
    readonly function: { readonly name: string; readonly arguments: string };
  }[];
  readonly tool_call_id?: string;
}

export interface ChatTool {
  readonly type: 'function';
  readonly function: { readonly name: string; readonly description?: string; readonly parameters: unknown };
}

/** A request body as the service sent it. */
export interface ChatRequest {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  readonly tools?: readonly ChatTool[];
  readonly temperature?: number;
  readonly max_tokens?: number;
  readonly top_p?: number;
  readonly stop?: readonly string[];
}

export interface ScriptedToolCall {
  readonly name: string;
  /** An object is sent as its JSON text, as the protocol wants; a string as it is (to send broken JSON). */
  readonly arguments: Record<string, unknown> | string;
  readonly id?: string;
}

export type ScriptedReply =
  | { readonly content: string }
  | { readonly toolCalls: readonly ScriptedToolCall[]; readonly content?: string }
  | { readonly status: number; readonly body: unknown };

/** Decides each answer; `index` counts the requests since the script was set, from 0. */
export type Script = (request: ChatRequest, index: number) => ScriptedReply;

export interface ScriptedModelServer {
  /** Up to and including `/v1`: what MODEL_BASE_URL takes. */
  readonly baseUrl: string;
  /** Every request since the script was last set, oldest first. */
  readonly requests: ChatRequest[];
  /** The Authorization header of each of those requests (undefined: none was sent). */
  readonly authorizations: (string | undefined)[];
  /** Replaces the script and forgets the requests recorded so far. */
  script(next: Script): void;
  close(): Promise<void>;
}

export async function startScriptedModelServer(
  initial: Script = () => ({ content: 'ok' }),
): Promise<ScriptedModelServer> {
  let current = initial;
  let counter = 0;
  const requests: ChatRequest[] = [];
  const authorizations: (string | undefined)[] = [];
  const server: Server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const send = (status: number, body: unknown) =>
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (request.method !== 'POST' || !request.url?.endsWith('/v1/chat/completions')) {
        send(404, { error: { message: `no route ${request.method} ${request.url}` } });
        return;
      }
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as ChatRequest;
      requests.push(body);
      authorizations.push(request.headers.authorization);
      let reply: ScriptedReply;
      try {
        reply = current(body, counter++);
      } catch (error) {
        send(500, { error: { message: `the script threw: ${(error as Error).message}` } });
        return;
      }
      if ('status' in reply) send(reply.status, reply.body);
      else send(200, completion(reply, counter, body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    authorizations,
    script(next) {
      current = next;
      counter = 0;
      requests.length = 0;
      authorizations.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The usage the server reports, as a tokenizer would roughly count it (a token per 4 characters): the request's
 * messages as JSON in, the answer and its calls out. Tests read the counts back from the trace.
 */
export function scriptedUsage(request: ChatRequest, reply: Exclude<ScriptedReply, { status: number }>) {
  const out = (reply.content ?? '').length + JSON.stringify('toolCalls' in reply ? reply.toolCalls : []).length - 2;
  return {
    prompt_tokens: Math.ceil(JSON.stringify(request.messages).length / 4),
    completion_tokens: Math.max(1, Math.ceil(out / 4)),
  };
}

function completion(reply: Exclude<ScriptedReply, { status: number }>, sequence: number, request: ChatRequest) {
  const calls = 'toolCalls' in reply ? reply.toolCalls : [];
  const message =
    calls.length > 0
      ? {
          role: 'assistant',
          content: reply.content ?? null,
          tool_calls: calls.map((call, i) => ({
            id: call.id ?? `call_${sequence}_${i}`,
            type: 'function',
            function: {
              name: call.name,
              arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
            },
          })),
        }
      : { role: 'assistant', content: reply.content ?? '' };
  return {
    id: `chatcmpl-${sequence}`,
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'scripted',
    choices: [{ index: 0, message, finish_reason: calls.length > 0 ? 'tool_calls' : 'stop' }],
    usage: (() => {
      const usage = scriptedUsage(request, reply);
      return { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
    })(),
  };
}

/** The `tool` messages of a request, each with its result parsed from its JSON text. */
export function toolResults(request: ChatRequest): { callId: string; content: unknown }[] {
  return request.messages
    .filter((m) => m.role === 'tool')
    .map((m) => ({ callId: m.tool_call_id ?? '', content: JSON.parse(m.content ?? 'null') }));
}

/** Whether the request is a prompt node's turn with scoped tools (routing and parameter questions carry none). */
export function offersTools(request: ChatRequest): boolean {
  return (request.tools ?? []).length > 0;
}
