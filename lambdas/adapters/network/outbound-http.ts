/**
 * OutboundHttp for HTTP tools and AI-message callbacks: one JSON request through the outbound guard. Built on
 * node:http(s) rather than fetch because their `lookup` option lets the connection use the very addresses the guard
 * checked (fetch's own resolver would leave a DNS-rebinding window between check and connect).
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { OutboundError, type OutboundHttp, type OutboundRequest, type OutboundResponse } from '#ports/flows';
import { checkTarget, guardedLookup, type TargetGuardOptions } from './url-guard';

export const DEFAULT_OUTBOUND_TIMEOUT_MS = 10_000;
export const MAX_OUTBOUND_ANSWER_BYTES = 1024 * 1024;
export const MAX_OUTBOUND_REDIRECTS = 3;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const JSON_MEDIA_TYPE = /^[^;]*[/+]json\s*(;|$)/i;
/** Headers that must not follow a redirect to another origin (as fetch drops Authorization). */
const ORIGIN_BOUND_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
const BODY_HEADERS = ['content-type', 'content-length'];

export interface GuardedOutboundHttpOptions extends TargetGuardOptions {
  /** For the whole request, redirects and reading the answer included; a request's own `timeoutMs` wins. */
  readonly timeoutMs?: number;
}

export class GuardedOutboundHttp implements OutboundHttp {
  private readonly lookup;

  constructor(private readonly options: GuardedOutboundHttpOptions) {
    this.lookup = guardedLookup(options);
  }

  async request(request: OutboundRequest): Promise<OutboundResponse> {
    const timeoutMs = request.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_OUTBOUND_TIMEOUT_MS;
    // The only abort is this timeout, so an aborted signal tells a timeout from any other failure.
    const signal = AbortSignal.timeout(timeoutMs);
    let host = parseUrl(request.url)?.host ?? 'the outbound target';
    // Raced with the exchange, so a lookup that hangs times out too (the sockets themselves close on the signal).
    const timedOut = new Promise<never>((_, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });

    const exchange = async (): Promise<OutboundResponse> => {
      let url = request.url;
      let method: string = request.method;
      let body = request.serializedBody ?? (request.body === undefined ? undefined : JSON.stringify(request.body));
      let headers = requestHeaders(request.headers, body);
      for (let redirects = 0; ; redirects++) {
        const target = await checkTarget(url, this.options);
        host = target.host;
        const answer = await this.send(target, method, headers, body, signal);
        const location = answer.headers.location;
        if (!REDIRECTS.has(answer.statusCode ?? 0) || location === undefined) {
          const { body, truncated } = await readAnswer(answer, host);
          return {
            status: answer.statusCode ?? 0,
            body,
            ...(request.answerHeaders ? { headers: headersOf(answer) } : {}),
            ...(truncated ? { truncated } : {}),
          };
        }
        answer.resume();
        if (redirects === MAX_OUTBOUND_REDIRECTS) {
          throw new OutboundError(
            'OUTBOUND_FAILED',
            `The request to ${host} was redirected more than ${MAX_OUTBOUND_REDIRECTS} times`,
          );
        }
        const next = parseUrl(location, target);
        if (next === null) throw new OutboundError('OUTBOUND_FAILED', `${host} redirected to an invalid URL`);
        // As fetch does: 303, and 301/302 after a POST, turn into a GET without the body.
        if (
          answer.statusCode === 303 ||
          (answer.statusCode !== 307 && answer.statusCode !== 308 && method === 'POST')
        ) {
          method = 'GET';
          body = undefined;
          headers = without(headers, BODY_HEADERS);
        }
        if (next.origin !== target.origin) headers = without(headers, ORIGIN_BOUND_HEADERS);
        url = next.href;
      }
    };

    try {
      return await Promise.race([exchange(), timedOut]);
    } catch (error) {
      if (signal.aborted) {
        throw new OutboundError('OUTBOUND_FAILED', `The request to ${host} timed out after ${timeoutMs} ms`, {
          timedOut: true,
        });
      }
      if (error instanceof OutboundError) throw error;
      // Never the error's message: it names the resolved address.
      const code = (error as NodeJS.ErrnoException).code ?? 'connection error';
      throw new OutboundError('OUTBOUND_FAILED', `The request to ${host} failed (${code})`);
    }
  }

  private send(
    target: URL,
    method: string,
    headers: OutgoingHttpHeaders,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      // agent: false, so no pooled socket made under other guard options is ever reused.
      const outgoing = send(target, { method, headers, signal, lookup: this.lookup, agent: false }, resolve);
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }
}

function requestHeaders(given: Readonly<Record<string, string>> | undefined, body: string | undefined) {
  const headers: OutgoingHttpHeaders = { accept: 'application/json, text/*;q=0.9, */*;q=0.8' };
  for (const [name, value] of Object.entries(given ?? {})) headers[name.toLowerCase()] = value;
  if (body === undefined) return without(headers, BODY_HEADERS);
  headers['content-type'] = 'application/json';
  headers['content-length'] = Buffer.byteLength(body);
  return headers;
}

function without(headers: OutgoingHttpHeaders, names: readonly string[]): OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !names.includes(name)));
}

function headersOf(answer: IncomingMessage): Record<string, string> {
  return Object.fromEntries(
    Object.entries(answer.headers).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value]],
    ),
  );
}

/** Parsed JSON when the answer says it is JSON, else its text; at most MAX_OUTBOUND_ANSWER_BYTES are read. */
async function readAnswer(answer: IncomingMessage, host: string): Promise<{ body: unknown; truncated: boolean }> {
  const parts: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of answer as AsyncIterable<Buffer>) {
    const room = MAX_OUTBOUND_ANSWER_BYTES - size;
    if (chunk.length > room) {
      parts.push(chunk.subarray(0, room));
      truncated = true;
      break; // ends the stream: the rest is never read
    }
    parts.push(chunk);
    size += chunk.length;
  }
  const text = Buffer.concat(parts).toString('utf8');
  if (!JSON_MEDIA_TYPE.test(answer.headers['content-type'] ?? '')) return { body: text, truncated };
  if (truncated) {
    throw new OutboundError(
      'OUTBOUND_FAILED',
      `The JSON answer of ${host} is larger than ${MAX_OUTBOUND_ANSWER_BYTES} bytes`,
    );
  }
  if (text.trim() === '') return { body: null, truncated };
  try {
    return { body: JSON.parse(text), truncated };
  } catch {
    throw new OutboundError('OUTBOUND_FAILED', `The answer of ${host} is not valid JSON`);
  }
}

/** `URL.parse` of Node 22, which Node 20 lacks. */
function parseUrl(url: string, base?: URL): URL | null {
  try {
    return new URL(url, base);
  } catch {
    return null;
  }
}
