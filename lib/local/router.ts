/**
 * The local API Gateway: matches a request against lib/routes.ts, runs the same Lambda authorizer, turns the request
 * into an API Gateway (REST, v1) proxy event, invokes the route's handler and writes its result. It answers CORS
 * preflights as API Gateway's preflight methods do, and its own answers (404, 405, 413, 401, 500) carry the CORS
 * headers as the handlers' do (CORS_ALLOWED_ORIGINS, lambdas/shared/cors.ts).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import type { Duplex } from 'node:stream';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
} from 'aws-lambda';
import { personFromContext } from '#core/auth/people';
import { callerFromContext, requireScope } from '#core/auth/tokens';
import { AppError, type ErrorDetail, ValidationError } from '#core/errors';
import { METRIC } from '#ports/metrics';
import { positiveInteger } from '#shared/config';
import {
  type CorsPolicy,
  corsAllowMethods,
  corsPolicyFromEnv,
  corsPreflightHeaders,
  corsResponseHeaders,
} from '#shared/cors';
import { errorResponse, jsonResponse } from '#shared/http';
import { AUTHORIZER, type HttpRoute, ROUTES, SIGN_UP_ROUTES } from '../routes';
import { type ClientLimitSettings, clientLimits, DEFAULT_CLIENT_LIMITS } from './client-limits';
import type { MetricsCollector } from './metrics-collector';
import type { Answer, AnswerTarget } from './openapi-check';

/** API Gateway's own limit on a request payload. */
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;
/** What a route that takes no credential reads at most, unless it names its own limit (maxBodyBytes). */
const MAX_PUBLIC_REQUEST_BYTES = 16 * 1024;

type LambdaHandler<E, R> = (event: E, context: Context) => Promise<R>;

interface CompiledRoute {
  readonly route: HttpRoute;
  readonly pattern: RegExp;
  readonly parameterNames: string[];
}

function compile(route: HttpRoute): CompiledRoute {
  const parameterNames: string[] = [];
  const source = route.path
    .split('/')
    .map((segment) => {
      const match = /^\{([^}]+)\}$/.exec(segment);
      if (!match) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      parameterNames.push(match[1]);
      return '([^/]+)';
    })
    .join('/');
  return { route, pattern: new RegExp(`^${source}/?$`), parameterNames };
}

function lambdaContext(functionName: string): Context {
  const awsRequestId = randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 29_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

function gatewayError(statusCode: number, code: string, message: string): APIGatewayProxyResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify({ success: false, error: { code, message, details: [] } }),
  };
}

/**
 * A request Node's HTTP parser refuses before any route sees it (bytes that are not HTTP, headers over 16 KB, a
 * request that never finished arriving) gets the service's error body too, instead of Node's bare status line. In
 * AWS such requests stop at API Gateway's front. Register with `server.on('clientError', answerClientError)`.
 */
export function answerClientError(
  error: Error & { code?: string },
  socket: Duplex,
  observe?: (answer: Answer) => void,
): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'HEADERS_TOO_LARGE', 'The request headers exceed 16 KB']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'REQUEST_TIMEOUT', 'The request did not arrive in time']
        : [400, 'Bad Request', 'BAD_REQUEST', 'The request is not valid HTTP'];
  const body = JSON.stringify({ success: false, error: { code, message, details: [] } });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  observe?.({
    target: { router: 'unparsed' },
    method: '',
    path: '',
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body,
  });
}

/**
 * The body, or `too-large` past API Gateway's limit. An oversized body is still read to its end (and dropped): a
 * request left half-read would leave its remaining bytes on a keep-alive connection, where they would be parsed as
 * the next request's and stall it until the server's header timeout.
 */
async function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer | 'too-large'> {
  let chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) chunks = [];
    else chunks.push(chunk as Buffer);
  }
  return size > maxBytes ? 'too-large' : Buffer.concat(chunks);
}

/**
 * Groups name/value pairs into the single- and multi-value maps of an API Gateway event. Object.fromEntries makes
 * every name an own property, so a query key or header named `__proto__`, `constructor` or `toString` is a
 * parameter like any other, as it is in the JSON event API Gateway sends, not a lookup on Object.prototype.
 */
function valueMaps(pairs: Iterable<[string, string]>): {
  single: Record<string, string>;
  multi: Record<string, string[]>;
} {
  const grouped = new Map<string, string[]>();
  for (const [name, value] of pairs) grouped.set(name, [...(grouped.get(name) ?? []), value]);
  return {
    single: Object.fromEntries([...grouped].map(([name, values]) => [name, values[values.length - 1]])),
    multi: Object.fromEntries(grouped),
  };
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

export interface Router {
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
}

function originOf(request: IncomingMessage): string | undefined {
  const origin = request.headers.origin;
  return Array.isArray(origin) ? origin[0] : origin;
}

export interface RouterOptions {
  /** Default: CORS_ALLOWED_ORIGINS of the environment, read once here, so that a bad value stops the start. */
  readonly cors?: CorsPolicy;
  /** Serves GET /dashboard/metrics from this collector (the local runtime's; not a route of the stack). */
  readonly metrics?: { readonly namespace: string; readonly collector: MetricsCollector };
  /** Per-client limits of sign-ups and of requests without a valid credential (default DEFAULT_CLIENT_LIMITS). */
  readonly clientLimits?: ClientLimitSettings;
  /**
   * Sees every answer after it went out, unchanged, with what answered it (the tests' check against the OpenAPI
   * document, OPENAPI_CHECK_DIR: lib/local/openapi-check.ts).
   */
  readonly observe?: (answer: Answer) => void;
  /**
   * At most this many invocations of one function at once (default LOCAL_FUNCTION_CONCURRENCY, else 8); the rest wait
   * in that function's queue, first come first served. In AWS every route is a function of its own that scales on
   * its own, so a burst of uploads does not delay a query; here they share one event loop, and without this a query
   * waited behind every upload sent before it (bench/RESULTS.md, "Load").
   */
  readonly functionConcurrency?: number;
}

/** Runs at most `limit` tasks at once; the others wait in arrival order. */
export class Slots {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new Error(`a concurrency must be a whole number ≥ 1, got ${limit}`);
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) await new Promise<void>((start) => this.#waiting.push(start));
    else this.#running += 1;
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      // The slot passes straight to the next in line (the count stays), so no newcomer can take it first.
      if (next) next();
      else this.#running -= 1;
    }
  }
}

/** Local only: the operational metrics the runtime collected (README, "Operating it"). */
export const LOCAL_METRICS_PATH = '/dashboard/metrics';
const METRIC_NAMES: readonly string[] = Object.values(METRIC);

/** The request's headers as API Gateway gives them to a Lambda: each name's values, and joined with commas. */
function headersOf(request: IncomingMessage): {
  headers: Record<string, string>;
  multiValueHeaders: Record<string, string[]>;
} {
  const headerPairs: [string, string][] = [];
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headerPairs.push([name, item]);
  }
  const multiValueHeaders = valueMaps(headerPairs).multi;
  const headers = Object.fromEntries(
    Object.entries(multiValueHeaders).map(([name, values]) => [name, values.join(',')]),
  );
  return { headers, multiValueHeaders };
}

export function createRouter(
  rootDir: string,
  routes: readonly HttpRoute[] = ROUTES,
  options: RouterOptions = {},
): Router {
  const compiled = routes.map(compile);
  const concurrency = options.functionConcurrency ?? positiveInteger('LOCAL_FUNCTION_CONCURRENCY', 8);
  /** One queue per function: a dashboard mirror shares its customer route's (`functionOf`), as in the stack. */
  const slots = new Map<string, Slots>();
  const slotsOf = (route: HttpRoute) => {
    const name = route.functionOf ?? route.id;
    let found = slots.get(name);
    if (!found) {
      found = new Slots(concurrency);
      slots.set(name, found);
    }
    return found;
  };
  const cors = options.cors ?? corsPolicyFromEnv();
  const limits = clientLimits(options.clientLimits ?? DEFAULT_CLIENT_LIMITS);
  /** A refusal of a client over one of its limits: 429 with Retry-After, before anything of the request is read. */
  const overLimit = (request: IncomingMessage, retryAfter: number, what: string): APIGatewayProxyResult => {
    const result = ownError(
      request,
      429,
      'RATE_LIMITED',
      `Too many ${what} from this address; retry in ${retryAfter} s`,
    );
    return { ...result, headers: { ...result.headers, 'retry-after': String(retryAfter) } };
  };
  const allowMethods = corsAllowMethods(routes);
  /** The router's own answers, in the handlers' error shape and with their CORS headers. */
  const ownError = (request: IncomingMessage, statusCode: number, code: string, message: string) => {
    const result = gatewayError(statusCode, code, message);
    return { ...result, headers: { ...result.headers, ...corsResponseHeaders(cors, originOf(request)) } };
  };
  const modules = new Map<string, Promise<{ handler: LambdaHandler<unknown, unknown> }>>();
  const load = <E, R>(file: string) => {
    if (!modules.has(file)) modules.set(file, import(resolve(rootDir, file)));
    return modules.get(file) as Promise<{ handler: LambdaHandler<E, R> }>;
  };

  async function authorize(
    route: Pick<HttpRoute, 'method' | 'path'>,
    headers: Record<string, string>,
  ): Promise<APIGatewayAuthorizerResult | undefined> {
    const { handler } = await load<APIGatewayRequestAuthorizerEvent, APIGatewayAuthorizerResult>(AUTHORIZER.handler);
    try {
      return await handler(
        {
          type: 'REQUEST',
          methodArn: `arn:aws:execute-api:local:000000000000:local/v1/${route.method}${route.path}`,
          headers,
        } as APIGatewayRequestAuthorizerEvent,
        lambdaContext('Authorizer'),
      );
    } catch {
      return undefined;
    }
  }

  /**
   * GET /dashboard/metrics: a token with the `dashboard` scope, as every dashboard route; `name` (optional) keeps
   * one metric. The metrics are the whole runtime's, not one organization's: locally one person runs the platform.
   */
  async function answerMetrics(
    request: IncomingMessage,
    url: URL,
    method: string,
    source: NonNullable<RouterOptions['metrics']>,
  ): Promise<APIGatewayProxyResult> {
    request.resume();
    const withCors = (result: APIGatewayProxyResult) => ({
      ...result,
      headers: { ...result.headers, ...corsResponseHeaders(cors, originOf(request)) },
    });
    if (method === 'OPTIONS' && cors.kind !== 'same-origin') {
      return { statusCode: 204, headers: corsPreflightHeaders(cors, originOf(request), ['GET']), body: '' };
    }
    if (method !== 'GET') {
      return ownError(request, 405, 'METHOD_NOT_ALLOWED', `${method} is not allowed here; use GET`);
    }
    const result = await authorize({ method: 'GET', path: LOCAL_METRICS_PATH }, headersOf(request).headers);
    // A person signed in (any organization: the metrics are the runtime's), or a token with `dashboard`.
    const person = personFromContext(result?.context);
    const caller = person ? { scopes: ['dashboard'] } : callerFromContext(result?.context);
    if (!caller) return ownError(request, 401, 'UNAUTHORIZED', 'A valid bearer token is required');
    const name = url.searchParams.get('name') ?? undefined;
    const unknown = [...url.searchParams.keys()].filter((key) => key !== 'name');
    try {
      requireScope(caller, 'dashboard');
      const details: ErrorDetail[] = unknown.map((field) => ({
        field,
        rule: 'unknownParameter',
        message: `${field} is not a parameter of ${LOCAL_METRICS_PATH}; only name is`,
      }));
      if (name !== undefined && !METRIC_NAMES.includes(name)) {
        details.push({ field: 'name', rule: 'enum', message: `name must be one of ${METRIC_NAMES.join(', ')}` });
      }
      if (details.length > 0) throw new ValidationError(details);
    } catch (error) {
      if (error instanceof AppError) return withCors(errorResponse(error));
      throw error;
    }
    return withCors(
      jsonResponse(200, {
        success: true,
        namespace: source.namespace,
        since: source.collector.since.toISOString(),
        metrics: source.collector.snapshot(name),
      }),
    );
  }

  /** What answers the request: `answered.target` is set as soon as that is known (for `observe`). */
  async function dispatch(
    request: IncomingMessage,
    answered: { target: AnswerTarget },
  ): Promise<APIGatewayProxyResult> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const method = (request.method ?? 'GET').toUpperCase();
    if (url.pathname === LOCAL_METRICS_PATH && options.metrics) {
      answered.target = { router: 'metrics' };
      return answerMetrics(request, url, method, options.metrics);
    }
    const matches = compiled
      .map((c) => ({ c, m: c.pattern.exec(url.pathname) }))
      .filter((x): x is { c: CompiledRoute; m: RegExpExecArray } => x.m !== null);
    if (matches.length === 0) {
      return ownError(request, 404, 'ROUTE_NOT_FOUND', `No route for ${method} ${url.pathname}`);
    }
    if (method === 'OPTIONS' && cors.kind !== 'same-origin') {
      answered.target = { router: 'preflight' };
      // As API Gateway's preflight methods: no token, no handler, the same answer for every path it knows; an origin
      // that is not allowed gets no Allow-Origin, and the browser stops there.
      request.resume();
      return { statusCode: 204, headers: corsPreflightHeaders(cors, originOf(request), allowMethods), body: '' };
    }
    const match = matches.find((x) => x.c.route.method === method);
    if (!match) {
      // Each route of the path lists 405 (the document's error statuses): checked against the first.
      answered.target = { routeId: matches[0].c.route.id };
      const allowed = matches.map((x) => x.c.route.method).join(', ');
      return ownError(request, 405, 'METHOD_NOT_ALLOWED', `${method} is not allowed here; use ${allowed}`);
    }
    answered.target = { routeId: match.c.route.id };
    return slotsOf(match.c.route).run(() => invoke(request, url, method, match));
  }

  /** Authorizer, body, event and handler of a matched route: one invocation of its function. */
  async function invoke(
    request: IncomingMessage,
    url: URL,
    method: string,
    match: { c: CompiledRoute; m: RegExpExecArray },
  ): Promise<APIGatewayProxyResult> {
    const { route, parameterNames } = match.c;
    const client = request.socket.remoteAddress ?? 'unknown';
    const { headers, multiValueHeaders } = headersOf(request);

    // Who calls is known before any body is read: a request without a valid credential costs its headers only.
    let authorizer: Record<string, unknown> | null = null;
    if (route.scope !== null) {
      const blocked = limits.failedAuth.blockedFor(client);
      if (blocked > 0) return overLimit(request, blocked, 'requests without a valid credential');
      const result = await authorize(route, headers);
      if (!result) {
        limits.failedAuth.hit(client);
        return ownError(request, 401, 'UNAUTHORIZED', 'A valid bearer token is required');
      }
      authorizer = { ...(result.context ?? {}), principalId: result.principalId };
    }
    if (SIGN_UP_ROUTES.includes(route.id)) {
      const blocked = limits.signUps.blockedFor(client);
      if (blocked > 0) return overLimit(request, blocked, 'sign-ups');
      limits.signUps.hit(client);
    }

    const maxBytes = route.scope === null ? (route.maxBodyBytes ?? MAX_PUBLIC_REQUEST_BYTES) : MAX_REQUEST_BYTES;
    const body = await readBody(request, maxBytes);
    if (body === 'too-large') return ownError(request, 413, 'PAYLOAD_TOO_LARGE', 'The request body is too large');

    const { single: query, multi: multiQuery } = valueMaps(url.searchParams);
    const pathParameters: Record<string, string> = {};
    parameterNames.forEach((name, index) => {
      pathParameters[name] = safeDecode(match.m[index + 1]);
    });

    const event: APIGatewayProxyEvent = {
      resource: route.path,
      path: url.pathname,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters: Object.keys(query).length ? query : null,
      multiValueQueryStringParameters: Object.keys(multiQuery).length ? multiQuery : null,
      pathParameters: parameterNames.length ? pathParameters : null,
      stageVariables: null,
      body: body.length ? body.toString('utf8') : null,
      isBase64Encoded: false,
      requestContext: {
        accountId: '000000000000',
        apiId: 'local',
        authorizer,
        httpMethod: method,
        path: url.pathname,
        protocol: 'HTTP/1.1',
        requestId: randomUUID(),
        requestTimeEpoch: Date.now(),
        resourceId: route.id,
        resourcePath: route.path,
        stage: 'local',
        identity: { sourceIp: request.socket.remoteAddress ?? '127.0.0.1' },
      } as APIGatewayProxyEvent['requestContext'],
    };
    const { handler } = await load<APIGatewayProxyEvent, APIGatewayProxyResult>(route.handler);
    return handler(event, lambdaContext(route.id));
  }

  return {
    async handle(request, response) {
      let result: APIGatewayProxyResult;
      const answered: { target: AnswerTarget } = { target: { router: 'unmatched' } };
      try {
        result = await dispatch(request, answered);
      } catch (error) {
        console.error('local router: handler failed', error);
        result = ownError(request, 500, 'INTERNAL_ERROR', 'Internal error');
      }
      const body = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : Buffer.from(result.body ?? '', 'utf8');
      // Answered before its body was read (refused at the door): the connection closes rather than read what is left.
      const unread = !request.complete;
      response.writeHead(result.statusCode, {
        ...(result.headers ?? {}),
        'content-length': body.length,
        ...(unread ? { connection: 'close' } : {}),
      });
      response.end(body);
      options.observe?.({
        target: answered.target,
        method: (request.method ?? 'GET').toUpperCase(),
        path: new URL(request.url ?? '/', 'http://localhost').pathname,
        status: result.statusCode,
        headers: result.headers ?? {},
        body: body.toString('utf8'),
      });
    },
  };
}
