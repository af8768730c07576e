/**
 * The shape of every HTTP handler: parse the request (JSON body or query, plus path parameters) with the route's zod
 * schema, check the route's scope against the caller the authorizer resolved, run one use case, answer JSON.
 * Errors become `{ success: false, error: { code, message, details } }` in one middleware.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { z } from 'zod';
import { type HttpRoute, routeById } from '../../lib/routes';
import { callerFromContext, requireScope } from '../core/auth/tokens';
import { AppError, UnauthorizedError } from '../core/errors';
import type { Caller } from '../core/tenancy/tenancy';
import { parseInput } from '../core/validation';
import { MAX_JSON_DEPTH, nestingDepthOver } from './json-depth';
import { logger } from './logger';

export const MAX_JSON_BODY_BYTES = 1024 * 1024;

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

export function jsonResponse(statusCode: number, body: unknown): APIGatewayProxyResult {
  return { statusCode, headers: JSON_HEADERS, body: JSON.stringify(body) };
}

export function errorResponse(error: AppError): APIGatewayProxyResult {
  return jsonResponse(error.status, {
    success: false,
    error: { code: error.code, message: error.message, details: error.details },
  });
}

/** What the authorizer put in the request context (core/auth/tokens.ts, callerContext). */
export function callerFromEvent(event: APIGatewayProxyEvent): Caller | undefined {
  return callerFromContext(event.requestContext?.authorizer);
}

function header(event: APIGatewayProxyEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

function readJsonBody(event: APIGatewayProxyEvent): Record<string, unknown> | undefined {
  if (event.body === null || event.body === undefined || event.body === '') return undefined;
  const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if (Buffer.byteLength(text, 'utf8') > MAX_JSON_BODY_BYTES) {
    throw new AppError(413, 'PAYLOAD_TOO_LARGE', `The request body must be at most ${MAX_JSON_BODY_BYTES} bytes`);
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
function requestInput(route: HttpRoute, event: APIGatewayProxyEvent): Record<string, unknown> {
  let fields: Record<string, unknown> | undefined;
  if (route.method === 'GET') fields = queryObject(event);
  else if (route.method === 'DELETE') fields = readJsonBody(event) ?? queryObject(event);
  else fields = readJsonBody(event);
  return { ...(fields ?? {}), ...(event.pathParameters ?? {}) };
}

export interface HttpResult {
  readonly status?: number;
  readonly body: Record<string, unknown>;
  /** Send `body` as it is, without the `success: true` envelope (documents such as the OpenAPI document). */
  readonly raw?: boolean;
}

/** Maps AppErrors to their status and body; anything else is logged and answered as a 500 that reveals nothing. */
const httpErrors = (): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> => ({
  onError: async (request) => {
    const { error } = request;
    if (error instanceof AppError) {
      if (error.status >= 500) logger.error('request failed', { error });
      request.response = errorResponse(error);
      return;
    }
    logger.error('unexpected error', { error: error as Error });
    request.response = errorResponse(new AppError(500, 'INTERNAL_ERROR', 'Internal error'));
  },
});

/**
 * A handler for the route `routeId` of lib/routes.ts. `schema` validates the merged request fields; `run` gets the
 * parsed input and the authenticated caller and returns the success body (wrapped as `{ success: true, ...body }`).
 */
export function httpHandler<S extends z.ZodType>(
  routeId: string,
  schema: S,
  run: (input: z.output<S>, caller: Caller) => Promise<HttpResult>,
) {
  const route = routeById(routeId);
  const base = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => {
    const caller = callerFromEvent(event);
    if (route.scope !== null) {
      if (!caller) throw new UnauthorizedError();
      requireScope(caller, route.scope);
    }
    const input = parseInput(schema, requestInput(route, event));
    const result = await run(input, caller ?? { organizationId: '', tokenId: '', scopes: [] });
    return jsonResponse(result.status ?? 200, result.raw ? result.body : { success: true, ...result.body });
  };
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>(base)
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(httpErrors());
}
