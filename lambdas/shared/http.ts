/**
 * The shape of every HTTP handler: parse the request (JSON body or query, plus path parameters) with the route's zod
 * schema, check the route's scope against the caller the authorizer resolved, run one use case, answer JSON.
 * Errors become `{ success: false, error: { code, message, details } }` in one middleware; every answer, error or not,
 * carries the CORS headers of CORS_ALLOWED_ORIGINS (shared/cors.ts) for the request's Origin.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { z } from 'zod';
import { isThrottledByAws } from '#adapters/errors/aws-throttling';
import { rateLimit } from '#composition/rate-limiter';
import { callerOfPerson, isPerson, ORGANIZATION_HEADER, type Person, personFromContext } from '#core/auth/people';
import { RateLimitedError, type RateLimitVerdict } from '#core/auth/rate-limit';
import { callerFromContext, requireScope } from '#core/auth/tokens';
import {
  AppError,
  ForbiddenError,
  SERVICE_BUSY_RETRY_AFTER_SECONDS,
  ServiceBusyError,
  UnauthorizedError,
} from '#core/errors';
import type { Caller } from '#core/tenancy/tenancy';
import { parseInput } from '#core/validation';
import type { RouteFacts } from '../../lib/routes';
import { config } from './config';
import { corsResponseHeaders } from './cors';
import { MAX_JSON_DEPTH, nestingDepthOver } from './json-depth';
import { logger } from './logger';
import { metrics } from './metrics';

export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/**
 * The routes of lib/routes.ts this code may serve. In a function's bundle the variable is replaced by the facts of
 * its own routes (lib/routes.ts, bundledRoutesDefine), and esbuild leaves the table out; run from source (the local
 * runtime, the tests) the table is read.
 */
const KNOWN_ROUTES: readonly RouteFacts[] = process.env.AGENT_PLATFORM_BUNDLED_ROUTES
  ? JSON.parse(process.env.AGENT_PLATFORM_BUNDLED_ROUTES)
  : // A require, not an import: the bundle's define makes it dead code, and esbuild leaves the table out.
    (require('../../lib/routes') as typeof import('../../lib/routes')).ROUTES;

function routeById(id: string): RouteFacts {
  const route = KNOWN_ROUTES.find((r) => r.id === id);
  if (!route) throw new Error(`no route with id ${id}`);
  return route;
}

/**
 * Retry-After of a 503 SERVICE_BUSY. The SDK has already spent its own retries (up to 3 s of backoff, 7 s for
 * DynamoDB); DynamoDB adapts its capacity, S3 its partitions and Bedrock refills per-minute quotas over seconds to
 * minutes, so an immediate retry would only be throttled again; 5 s spreads the callers' retries without making one
 * who was merely unlucky wait long.
 */

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

export function jsonResponse(statusCode: number, body: unknown): APIGatewayProxyResult {
  return { statusCode, headers: { ...JSON_HEADERS }, body: JSON.stringify(body) };
}

export function errorResponse(error: AppError): APIGatewayProxyResult {
  const response = jsonResponse(error.status, {
    success: false,
    error: { code: error.code, message: error.message, details: error.details },
  });
  if (error instanceof ServiceBusyError) {
    return { ...response, headers: { ...response.headers, 'retry-after': String(error.retryAfterSeconds) } };
  }
  // The request's own limit sets it too (rateLimitHeaders); a limit met later, the flow work budget's, only here.
  if (error instanceof RateLimitedError) {
    return { ...response, headers: { ...response.headers, 'retry-after': String(error.verdict.resetSeconds) } };
  }
  return response;
}

function header(event: APIGatewayProxyEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

/** `maxBytes`: the route's own limit (RouteFacts.maxBodyBytes), else MAX_JSON_BODY_BYTES. */
function readJsonBody(
  event: APIGatewayProxyEvent,
  maxBytes = MAX_JSON_BODY_BYTES,
): Record<string, unknown> | undefined {
  if (event.body === null || event.body === undefined || event.body === '') return undefined;
  const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if (Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw new AppError(413, 'PAYLOAD_TOO_LARGE', `The request body must be at most ${maxBytes} bytes`);
  }
  const contentType = header(event, 'content-type') ?? '';
  if (!/^application\/([a-z0-9.+-]*\+)?json\b/i.test(contentType.trim())) {
    throw new AppError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'The request body must be JSON sent with Content-Type: application/json',
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AppError(400, 'INVALID_JSON', 'The request body is not valid JSON');
  }
  if (nestingDepthOver(text, MAX_JSON_DEPTH)) {
    throw new AppError(400, 'VALIDATION_ERROR', `The request body nests deeper than ${MAX_JSON_DEPTH} levels`, [
      { field: '', rule: 'maxDepth', message: `objects and arrays may nest at most ${MAX_JSON_DEPTH} levels deep` },
    ]);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new AppError(400, 'VALIDATION_ERROR', 'The request body must be a JSON object', [
      { field: '', rule: 'type', message: 'request body must be an object' },
    ]);
  }
  return parsed as Record<string, unknown>;
}

function queryObject(event: APIGatewayProxyEvent): Record<string, unknown> | undefined {
  const query = event.queryStringParameters;
  return query && Object.keys(query).length > 0 ? { ...query } : undefined;
}

/** GET reads the query; POST and PATCH the JSON body; DELETE the body, or the query when it has no body. */
function requestInput(route: RouteFacts, event: APIGatewayProxyEvent): Record<string, unknown> {
  let fields: Record<string, unknown> | undefined;
  if (route.method === 'GET') fields = queryObject(event);
  else if (route.method === 'DELETE') fields = readJsonBody(event) ?? queryObject(event);
  else fields = readJsonBody(event, route.maxBodyBytes);
  return { ...(fields ?? {}), ...(event.pathParameters ?? {}) };
}

export interface HttpResult {
  readonly status?: number;
  /** `null`: an answer without a body (a raw 202, as the MCP server gives a notification). */
  readonly body: Record<string, unknown> | null;
  /**
   * Send `body` as it is, without the `success: true` envelope (documents such as the OpenAPI document, the MCP
   * server's JSON-RPC messages).
   */
  readonly raw?: boolean;
}

/** What a handler may read of its request besides the parsed input: a header (case-insensitive). */
export interface RequestView {
  header(name: string): string | undefined;
}

/**
 * Maps AppErrors to their status and body; an AWS service that still throttles after the SDK's retries to 503
 * SERVICE_BUSY with Retry-After; anything else is logged and answered as a 500 that reveals nothing.
 */
const httpErrors = (): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> => ({
  onError: async (request) => {
    const { error } = request;
    if (error instanceof AppError) {
      if (error.status >= 500) logger.error('request failed', { error });
      request.response = errorResponse(error);
      return;
    }
    if (isThrottledByAws(error)) {
      // A warning, not an error: the service is working as configured and the caller is told to come back.
      logger.warn('dependency throttled', { error: error as Error });
      request.response = errorResponse(new ServiceBusyError(SERVICE_BUSY_RETRY_AFTER_SECONDS));
      return;
    }
    logger.error('unexpected error', { error: error as Error });
    request.response = errorResponse(new AppError(500, 'INTERNAL_ERROR', 'Internal error'));
  },
});

/** Adds the CORS headers to whatever answer was made, the error middleware's included (it runs before this one). */
const httpCors = (): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> => {
  const withCors = async (request: middy.Request<APIGatewayProxyEvent, APIGatewayProxyResult>) => {
    if (!request.response) return;
    const cors = corsResponseHeaders(config.cors(), header(request.event, 'origin'));
    request.response = { ...request.response, headers: { ...request.response.headers, ...cors } };
  };
  return { after: withCors, onError: withCors };
};

/** The rate limit verdict of each request that was counted (per event: the local runtime runs requests concurrently). */
const rateLimits = new WeakMap<APIGatewayProxyEvent, RateLimitVerdict>();

/**
 * RateLimit-Limit, -Remaining, -Reset and -Policy (the IETF draft's fields) on every answer of a counted request, the
 * error middleware's included; Retry-After on a 429.
 */
const rateLimitHeaders = (): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> => {
  const withHeaders = async (request: middy.Request<APIGatewayProxyEvent, APIGatewayProxyResult>) => {
    const verdict = rateLimits.get(request.event);
    if (!request.response || !verdict) return;
    const headers: Record<string, string> = {
      'ratelimit-limit': String(verdict.limit),
      'ratelimit-remaining': String(verdict.remaining),
      'ratelimit-reset': String(verdict.resetSeconds),
      'ratelimit-policy': `${verdict.limit};w=${verdict.windowSeconds}`,
    };
    if (!verdict.allowed) headers['retry-after'] = String(verdict.resetSeconds);
    request.response = { ...request.response, headers: { ...request.response.headers, ...headers } };
  };
  return { after: withHeaders, onError: withHeaders };
};

/**
 * The route of lib/routes.ts an event came by: the only one of `routes`, or, for a handler that serves several
 * routes, the one whose path template API Gateway (and the local router) put in `event.resource`.
 */
function matchingRoute(routes: readonly RouteFacts[], event: APIGatewayProxyEvent): RouteFacts | undefined {
  if (routes.length === 1) return routes[0];
  return routes.find((r) => r.path === event.resource && r.method === event.httpMethod);
}

function routeOf(routes: readonly RouteFacts[], event: APIGatewayProxyEvent): RouteFacts {
  const route = matchingRoute(routes, event);
  if (!route) throw new Error(`no route of this handler for ${event.httpMethod} ${event.resource}`);
  return route;
}

/** Ids of the validated request that become log keys (correlation ids); never free text. */
const CORRELATION_FIELDS = ['agentId', 'environment', 'knowledgeBaseId', 'sessionId', 'uploadId', 'zipJobId'] as const;

/**
 * Log keys of the request besides its organization: the ids it concerns (agent, environment, knowledge base, session,
 * upload, ZIP job). The logger's keys are reset per request (injectLambdaContext `resetKeys`).
 */
function annotateRequest(input: unknown): void {
  // Taken from the validated input, so an annotation is a well-formed id or environment name, never free text.
  const fields = (input ?? {}) as Record<string, unknown>;
  const keys: Record<string, string> = {};
  for (const field of CORRELATION_FIELDS) {
    if (typeof fields[field] === 'string') keys[field] = fields[field];
  }
  logger.appendKeys(keys);
}

/**
 * One structured line per request, once its answer is made (the error middleware's included): the route, the
 * method, the status, the time it took, with the request's log keys (request id, organization, the ids above).
 * Nothing of the request's body, query or headers.
 */
const requestLog = (
  routes: readonly RouteFacts[],
): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> => {
  // Per request, not per handler: the local runtime runs one handler's requests concurrently.
  const started = new WeakMap<object, number>();
  const line = async (request: middy.Request<APIGatewayProxyEvent, APIGatewayProxyResult>) => {
    logger.info('request', {
      // A request no route of the handler matches (which routeOf refuses) is still logged, under the first.
      route: (matchingRoute(routes, request.event) ?? routes[0]).id,
      method: request.event.httpMethod,
      status: request.response?.statusCode ?? 500,
      durationMs: Date.now() - (started.get(request) ?? Date.now()),
    });
  };
  return {
    before: async (request) => {
      started.set(request, Date.now());
    },
    after: line,
    onError: line,
  };
};

/**
 * Who a request of `route` comes from: the caller (a token, or a person in the organization their X-Organization-Id
 * header names: core/auth/people.ts), or, for a person's own routes (RouteFacts.personal), the person. Refusals are errors:
 * no valid credential 401, a person outside the dashboard 401, a token on a person's route 403, the scope 403.
 */
function whoCalls(
  route: RouteFacts,
  event: APIGatewayProxyEvent,
): { caller?: Caller; person?: Person; counted: Pick<Caller, 'tokenId'> & { organizationId?: string } } | undefined {
  if (route.scope === null) return undefined;
  const context = event.requestContext?.authorizer;
  const person = personFromContext(context);
  const token = person ? undefined : callerFromContext(context);
  if (!person && !token) throw new UnauthorizedError();
  // A person's ID token opens the dashboard only (the authorizer's policy says so too; this holds wherever the
  // policy is not applied, as in the local router).
  if ((person || (token && isPerson(token))) && !route.path.startsWith('/dashboard')) throw new UnauthorizedError();
  if (route.personal) {
    if (!person) {
      throw new ForbiddenError('This route is a person’s own: sign in to the dashboard', [
        { field: '', rule: 'person.required', message: 'a token is no person; use a person’s ID token' },
      ]);
    }
    return { person, counted: { tokenId: `person:${person.sub}` } };
  }
  const caller = person ? callerOfPerson(person, header(event, ORGANIZATION_HEADER)) : (token as Caller);
  requireScope(caller, route.scope);
  return { caller, counted: caller };
}

function handlerFor<S extends z.ZodType, W>(
  routeId: string | readonly string[],
  schema: S,
  personal: boolean,
  run: (input: z.output<S>, who: W, request: RequestView) => Promise<HttpResult>,
) {
  // The routes named, and the dashboard's routes to the same handler (lib/routes.ts, DASHBOARD_MIRRORS).
  const routes = (typeof routeId === 'string' ? [routeId] : routeId).flatMap((id) => {
    // Its dashboard mirrors (lib/routes.ts, DASHBOARD_MIRRORS) are named after it.
    return [routeById(id), ...KNOWN_ROUTES.filter((route) => route.id === `Dashboard${id}`)];
  });
  for (const route of routes) {
    if (Boolean(route.personal) !== personal) {
      throw new Error(
        `${route.id}: a ${route.personal ? 'personal' : 'caller'} route needs a ${route.personal ? 'personHandler' : 'httpHandler'}`,
      );
    }
  }
  const base = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => {
    const route = routeOf(routes, event);
    const who = whoCalls(route, event);
    // The organization as soon as it is known, so a refused request's log line names it too.
    if (who?.caller?.organizationId) logger.appendKeys({ organizationId: who.caller.organizationId });
    if (who) {
      // Before anything of the request is read or done: a refused request changes nothing.
      const verdict = await rateLimit(who.counted);
      rateLimits.set(event, verdict);
      if (!verdict.allowed) throw new RateLimitedError(verdict);
    }
    const input = parseInput(schema, requestInput(route, event));
    annotateRequest(input);
    const caller = who?.person ?? who?.caller ?? { organizationId: '', tokenId: '', scopes: [] };
    const result = await run(input, caller as W, { header: (name) => header(event, name) });
    if (result.body === null)
      return { statusCode: result.status ?? 204, headers: { 'cache-control': 'no-store' }, body: '' };
    return jsonResponse(result.status ?? 200, result.raw ? result.body : { success: true, ...result.body });
  };
  // The anchor's order: metrics flushed last (after the error middleware has made its answer), then the log context.
  // No Powertools Tracer here: see composition/clients/capture.ts for the bundle sizes.
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>(base)
    .use(logMetrics(metrics))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(requestLog(routes))
    .use(httpCors())
    .use(rateLimitHeaders())
    .use(httpErrors());
}

/**
 * A handler for the route `routeId` of lib/routes.ts (or for each of several routes that share it, such as a list
 * both the customer API and the dashboard offer). `schema` validates the merged request fields; `run` gets the
 * parsed input and the authenticated caller and returns the success body (wrapped as `{ success: true, ...body }`).
 */
export function httpHandler<S extends z.ZodType>(
  routeId: string | readonly string[],
  schema: S,
  run: (input: z.output<S>, caller: Caller, request: RequestView) => Promise<HttpResult>,
) {
  return handlerFor(routeId, schema, false, run);
}

/** A handler for a person's own route (core/dashboard/my-account.ts): `run` gets the person, in no organization. */
export function personHandler<S extends z.ZodType>(
  routeId: string | readonly string[],
  schema: S,
  run: (input: z.output<S>, person: Person) => Promise<HttpResult>,
) {
  return handlerFor(routeId, schema, true, run);
}

type EventHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

/**
 * One function for several routes of lib/routes.ts (`functionOf`), each with its own handler: the request goes to the
 * handler of the route whose path template and method it came by (`event.resource`, as API Gateway and the local
 * router give it).
 */
export function handlerPerRoute(handlers: Readonly<Record<string, EventHandler>>): EventHandler {
  const routes = Object.keys(handlers).map(routeById);
  return async (event, context) => {
    const route = routeOf(routes, event);
    return (handlers[route.id] as EventHandler)(event, context);
  };
}
