/**
 * A table that throttles, through the whole handler chain: the ListAgents Lambda handler as API Gateway invokes it
 * (middy, the error and CORS middlewares, the composition root, DynamoAgentStore, the SDK's DynamoDB client with its
 * default retries), with DynamoDB's endpoint pointed at a loopback server that answers every request as DynamoDB
 * answers for a table over its throughput. No engine is faked: dynalite never throttles, and throttling is the one
 * condition sent here, as DynamoDB's own bytes, which the SDK parses into its own exception class and retries by its
 * own strategy before the handler sees it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { routeById } from '../../lib/routes';
import { invokeHandler, proxyEvent } from '../helpers/handlers';

const CONSOLE = 'https://console.example.com';
const THROUGHPUT_EXCEEDED = 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException';
const NO_SUCH_TABLE = 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException';
const COUNTERS = 'rate-limits';

let server: Server;
let endpoint: string;
/** The error type each table answers with, by table name. */
const answers: Record<string, string> = { throttled: THROUGHPUT_EXCEEDED, missing: NO_SUCH_TABLE };
const requests: Record<string, number> = {};

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const { TableName } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { TableName: string };
      requests[TableName] = (requests[TableName] ?? 0) + 1;
      if (TableName === COUNTERS) {
        // The rate limit counters count the request (DynamoDB's answer to the UpdateItem), so it reaches the agents.
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'r-0' });
        response.end(JSON.stringify({ Attributes: { count: { N: '1' } } }));
        return;
      }
      response.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'r-1' });
      response.end(JSON.stringify({ __type: answers[TableName], message: 'answered by the test endpoint' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

/** GET /dashboard/agents from the console's origin, its agents in `table`. */
async function listAgents(table: string) {
  const event = proxyEvent({
    method: 'GET',
    path: '/dashboard/agents',
    headers: { Origin: CONSOLE, Authorization: 'Bearer t' },
    caller: { organizationId: 'org-1', tokenId: 'token-1', scopes: ['dashboard'] },
  });
  const [answer] = await invokeHandler(routeById('ListAgents').handler, [event], {
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'secret',
    AGENTS_TABLE: table,
    RATE_LIMITS_TABLE: COUNTERS,
    CORS_ALLOWED_ORIGINS: CONSOLE,
  });
  return answer;
}

it('answers 503 SERVICE_BUSY with Retry-After, readable by a listed console, after the SDK retried the table', async () => {
  const answer = await listAgents('throttled');
  expect(answer.statusCode).toBe(503);
  expect(JSON.parse(answer.body)).toEqual({
    success: false,
    error: { code: 'SERVICE_BUSY', message: 'The service is busy; retry in 5 seconds', details: [] },
  });
  expect(answer.headers).toMatchObject({
    'retry-after': '5',
    'access-control-allow-origin': CONSOLE,
    'access-control-expose-headers': 'Retry-After,RateLimit-Limit,RateLimit-Remaining,RateLimit-Reset,RateLimit-Policy',
    vary: 'Origin',
  });
  // The SDK's standard retry mode gives DynamoDB 4 attempts: only the last failure reached the handler.
  expect(requests.throttled).toBe(4);
});

it('still answers 500 INTERNAL_ERROR, revealing nothing, for a DynamoDB error that is not throttling', async () => {
  const answer = await listAgents('missing');
  expect(answer.statusCode).toBe(500);
  expect(JSON.parse(answer.body).error).toEqual({ code: 'INTERNAL_ERROR', message: 'Internal error', details: [] });
  expect(answer.headers?.['retry-after']).toBeUndefined();
  expect(answer.headers?.['access-control-allow-origin']).toBe(CONSOLE);
  expect(requests.missing).toBe(1); // not an error the SDK retries
});
