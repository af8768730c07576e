/**
 * Lambda handlers invoked as API Gateway invokes them, in a child process (handler-child.ts): the whole chain of
 * middy, the middlewares, the composition root and the adapters, with the environment a test gives it. Their answers
 * are checked against the OpenAPI document (openapi-check.ts).
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { callerContext } from '#core/auth/tokens';
import type { Caller } from '#core/tenancy/tenancy';
import { checkHandlerAnswers } from './openapi-check';

const ROOT = resolve(__dirname, '..', '..');

/** What separates the handler's own output from the results on the child's stdout. */
export const RESULT_MARKER = '\n--handler-results--\n';

/** `handlerFile` (relative to the project, as lib/routes.ts names them) run on each event in turn. */
export function invokeHandler(
  handlerFile: string,
  events: readonly APIGatewayProxyEvent[],
  env: Record<string, string>,
): Promise<APIGatewayProxyResult[]> {
  return new Promise((resolveResults, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'handler-child.ts')], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const at = stdout.lastIndexOf(RESULT_MARKER);
      if (code !== 0 || at < 0) {
        reject(new Error(`the handler process failed (exit ${code}):\n${stderr}\n${stdout}`));
        return;
      }
      const results = JSON.parse(stdout.slice(at + RESULT_MARKER.length)) as APIGatewayProxyResult[];
      // Every answer against the OpenAPI document, as the local runtime's (test/helpers/openapi-check.ts).
      try {
        checkHandlerAnswers(handlerFile, events, results);
      } catch (error) {
        reject(error);
        return;
      }
      resolveResults(results);
    });
    child.stdin.end(JSON.stringify({ handlerFile, events }));
  });
}

/** A REST API (v1) proxy event, with the request context API Gateway's authorizer gives an authorized caller. */
export function proxyEvent(options: {
  method: string;
  path: string;
  headers?: Record<string, string>;
  caller?: Caller;
  body?: string;
}): APIGatewayProxyEvent {
  return {
    resource: options.path,
    path: options.path,
    httpMethod: options.method,
    headers: options.headers ?? {},
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    body: options.body ?? null,
    isBase64Encoded: false,
    requestContext: {
      authorizer: options.caller ? callerContext(options.caller) : null,
    },
  } as unknown as APIGatewayProxyEvent;
}
