/**
 * The one structured log line an HTTP handler writes per request (shared/http.ts): the route, method, status and
 * duration with the request's correlation ids, for an answer and for an error; nothing the caller sent.
 */
import { join } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { configureHandlerEnvironment } from '#shared/environment';
import { logger } from '#shared/logger';
import { routeById } from '../../../lib/routes';
import { TABLES } from '../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../helpers/dynalite';
import { proxyEvent } from '../../helpers/handlers';

const ROOT = join(__dirname, '..', '..', '..');
const context = { awsRequestId: 'request-7', functionName: 'UploadLink' } as Context;
type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

async function logLinesOf(run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const written: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(chunk.toString());
    return true;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return written
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

let dynamo: LocalDynamo;

beforeAll(async () => {
  logger.setLogLevel('INFO');
  // The request is counted against its token's rate limit before it is read: the counters in a dynalite.
  dynamo = await startDynalite();
  const table = await dynamo.createTable('rateLimits', TABLES.rateLimits);
  configureHandlerEnvironment({
    RATE_LIMITS_TABLE: table,
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  });
});
afterAll(async () => {
  configureHandlerEnvironment({});
  await dynamo.stop();
});

it('logs a refused request once, with its status, route, duration and ids, and nothing of its body', async () => {
  const route = routeById('UploadLink');
  const { handler } = (await import(join(ROOT, route.handler))) as { handler: Handler };
  const caller = { organizationId: 'org-42', tokenId: 'token-1', scopes: ['knowledge-management' as const] };
  const body = JSON.stringify({
    agentId: '0f0e0d0c-0b0a-4908-8706-050403020100',
    environment: 'production',
    fileName: 'SECRET-FILE-NAME.exe',
    label1: 'SECRET-LABEL-VALUE',
  });
  let answer: APIGatewayProxyResult | undefined;
  const lines = await logLinesOf(async () => {
    answer = await handler(
      proxyEvent({
        method: route.method,
        path: route.path,
        caller,
        body,
        headers: { 'content-type': 'application/json' },
      }),
      context,
    );
  });
  expect(answer?.statusCode).toBe(400);
  const requestLines = lines.filter((line) => line.message === 'request');
  expect(requestLines).toHaveLength(1);
  expect(requestLines[0]).toMatchObject({
    level: 'INFO',
    route: 'UploadLink',
    method: 'POST',
    status: 400,
    function_request_id: 'request-7',
    organizationId: 'org-42',
  });
  expect(requestLines[0].durationMs).toEqual(expect.any(Number));
  expect(JSON.stringify(lines)).not.toMatch(/SECRET-/);
});

it('logs an answered request with its 200', async () => {
  const route = routeById('OpenApi');
  const { handler } = (await import(join(ROOT, route.handler))) as { handler: Handler };
  const lines = await logLinesOf(() => handler(proxyEvent({ method: route.method, path: route.path }), context));
  expect(lines.filter((line) => line.message === 'request')).toEqual([
    expect.objectContaining({ route: 'OpenApi', method: 'GET', status: 200 }),
  ]);
});
