/**
 * The jest side of the answer check (lib/local/openapi-check.ts, README, "Tests"): every local runtime a suite starts
 * records its answers' violations of the OpenAPI document in a folder of the run (startService sets
 * OPENAPI_CHECK_DIR, after the suite's own environment, so no suite can turn it off); stopping or killing it throws
 * them, and the run's teardown (openapi-check-global.ts) throws those of a runtime never stopped. Handlers a test
 * invokes in a child (handlers.ts) are checked here, in the test process.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import {
  type AnswerRecorder,
  CHECK_FILES,
  createAnswerRecorder,
  describeViolations,
  type Violation,
} from '../../lib/local/openapi-check';
import { ROUTES } from '../../lib/routes';

/** Set by the run's global setup; a run without it (another jest configuration) gets a folder of its own. */
export const RUN_DIR_VARIABLE = 'OPENAPI_CHECK_RUN_DIR';

export function checkRunDir(): string {
  let dir = process.env[RUN_DIR_VARIABLE];
  if (!dir) {
    dir = mkdtempSync(join(tmpdir(), 'openapi-check-'));
    process.env[RUN_DIR_VARIABLE] = dir;
  }
  return dir;
}

/** A new folder of the run for one runtime's answers. */
export function serviceCheckDir(): string {
  const dir = join(checkRunDir(), `service-${randomUUID()}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The violations `dir` holds that nobody reported yet; they are marked reported (the teardown does not repeat them). */
export function takeViolations(dir: string): Violation[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => CHECK_FILES.violations.test(name));
  } catch {
    return [];
  }
  const violations: Violation[] = [];
  for (const name of names) {
    const text = readFileSync(join(dir, name), 'utf8');
    renameSync(join(dir, name), join(dir, `reported-${name}`));
    for (const line of text.split('\n')) if (line.trim()) violations.push(JSON.parse(line) as Violation);
  }
  return violations;
}

export class AnswerCheckError extends Error {
  constructor(
    readonly violations: readonly Violation[],
    where: string,
  ) {
    super(
      `${violations.length} answer(s) of ${where} do not match the OpenAPI document (lib/local/openapi-check.ts; ` +
        `the document: lambdas/handlers/http/openapi-document.ts, error-statuses.ts, */responses.ts):\n` +
        describeViolations(violations),
    );
  }
}

/** Throws the violations a runtime recorded in `dir`, if any. */
export function throwViolations(dir: string, where: string): void {
  const violations = takeViolations(dir);
  if (violations.length > 0) throw new AnswerCheckError(violations, where);
}

let handlerRecorder: AnswerRecorder | undefined;

/** The route `event` reached through `handlerFile`: by method, and by path where one handler serves several routes. */
function routeOf(handlerFile: string, event: APIGatewayProxyEvent): string | null {
  const candidates = ROUTES.filter((r) => r.handler === handlerFile && r.method === event.httpMethod);
  if (candidates.length === 1) return candidates[0].id;
  const byPath = candidates.find(
    (r) =>
      r.path === event.resource ||
      new RegExp(`^${r.path.replace(/\{[^}]+\}/g, '[^/]+')}/?$`).test(event.path ?? event.resource),
  );
  return byPath?.id ?? null;
}

/** Checks the answers of a handler invoked as API Gateway invokes it (invokeHandler); throws their violations. */
export function checkHandlerAnswers(
  handlerFile: string,
  events: readonly APIGatewayProxyEvent[],
  results: readonly APIGatewayProxyResult[],
): void {
  handlerRecorder ??= createAnswerRecorder(join(checkRunDir(), 'handlers'));
  const violations: Violation[] = [];
  events.forEach((event, index) => {
    const result = results[index];
    const routeId = routeOf(handlerFile, event);
    const answer = {
      target: { routeId: routeId ?? `(no route of ${handlerFile} for ${event.httpMethod})` },
      method: event.httpMethod,
      path: event.path,
      status: result.statusCode,
      headers: result.headers ?? {},
      body: result.isBase64Encoded ? Buffer.from(result.body, 'base64').toString('utf8') : (result.body ?? ''),
    };
    const violation = (handlerRecorder as AnswerRecorder).record(answer);
    if (violation) violations.push(violation);
  });
  // Reported here, in the test that invoked the handler.
  takeViolations(join(checkRunDir(), 'handlers'));
  if (violations.length > 0) throw new AnswerCheckError(violations, handlerFile);
}
