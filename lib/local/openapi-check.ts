/**
 * The answer check of the tests (docs/testing.md, "Every answer against the document"): every HTTP answer the
 * integration suites receive is validated against the OpenAPI document the service serves (ajv, JSON Schema 2020-12
 * as OpenAPI 3.1 writes it). An answer whose status the route does not list, or whose body its schema for that status
 * does not admit, is a violation.
 *
 * The local runtime records its answers here when OPENAPI_CHECK_DIR is set (test/helpers/service.ts sets it for every
 * runtime a suite starts); it is imported only then, so `npm start` never loads ajv or builds the document.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument } from '#handlers/http/openapi-document';

/**
 * What answered: a route of lib/routes.ts (its id), or the router itself for a request no route took: `unmatched` (no
 * route has the path), `preflight` (a CORS preflight, answered as API Gateway's OPTIONS methods), `metrics` (GET
 * /dashboard/metrics, local only), `unparsed` (a request Node's HTTP parser refused: 400, 408, 431).
 */
export type AnswerTarget =
  | { readonly routeId: string }
  | { readonly router: 'unmatched' | 'preflight' | 'metrics' | 'unparsed' };

export interface Answer {
  readonly target: AnswerTarget;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly body: string;
}

export interface Violation {
  readonly route: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly errors: readonly string[];
  readonly body: string;
}

type Schema = Record<string, unknown>;
interface ResponseObject {
  readonly description?: string;
  readonly content?: Record<string, { schema?: Schema }>;
}
type Responses = Record<string, ResponseObject>;

const BODY_EXCERPT = 600;

/** The router's own error answer: the service's error shape with one of `codes`. */
function errorBody(codes: readonly string[]): ResponseObject {
  return {
    content: {
      'application/json': {
        schema: {
          type: 'object',
          additionalProperties: false,
          required: ['success', 'error'],
          properties: {
            success: { const: false },
            error: {
              type: 'object',
              additionalProperties: false,
              required: ['code', 'message', 'details'],
              properties: {
                code: { enum: codes },
                message: { type: 'string' },
                details: { type: 'array', maxItems: 0 },
              },
            },
          },
        },
      },
    },
  };
}

/** What the router answers where no route of the document does (they are not routes, so not in the document). */
const ROUTER_RULES: Record<string, Responses> = {
  unmatched: { '404': errorBody(['ROUTE_NOT_FOUND']), '500': errorBody(['INTERNAL_ERROR']) },
  // An empty body, whatever the origin; a disallowed origin only misses its Allow-Origin.
  preflight: { '204': { content: { '': { schema: { const: '' } } } } },
  metrics: {
    '200': {
      content: {
        'application/json': {
          schema: {
            type: 'object',
            additionalProperties: false,
            required: ['success', 'namespace', 'since', 'metrics'],
            properties: {
              success: { const: true },
              namespace: { type: 'string' },
              since: { type: 'string', format: 'date-time' },
              metrics: { type: 'object' },
            },
          },
        },
      },
    },
    '204': { content: { '': { schema: { const: '' } } } },
    '400': errorBody(['VALIDATION_ERROR']),
    '401': errorBody(['UNAUTHORIZED']),
    '403': errorBody(['FORBIDDEN', 'INSUFFICIENT_SCOPE']),
    '405': errorBody(['METHOD_NOT_ALLOWED']),
  },
  unparsed: {
    '400': errorBody(['BAD_REQUEST']),
    '408': errorBody(['REQUEST_TIMEOUT']),
    '431': errorBody(['HEADERS_TOO_LARGE']),
  },
};

function targetName(target: AnswerTarget): string {
  return 'routeId' in target ? target.routeId : `(router: ${target.router})`;
}

function headerValue(headers: Readonly<Record<string, unknown>>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? String(value[0]) : String(value);
  }
  return undefined;
}

export interface AnswerChecker {
  /** The violation of `answer`, or null when the document admits it. */
  check(answer: Answer): Violation | null;
}

/** A checker of answers against `document` (default: the service's own, buildOpenApiDocument). */
export function createAnswerChecker(
  document: { paths: Record<string, Record<string, unknown>> } = buildOpenApiDocument(),
): AnswerChecker {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  const operations = new Map<string, Responses>();
  for (const pathItem of Object.values(document.paths)) {
    for (const operation of Object.values(pathItem) as { operationId?: string; responses?: Responses }[]) {
      if (operation?.operationId && operation.responses) operations.set(operation.operationId, operation.responses);
    }
  }
  const compiled = new Map<string, ValidateFunction>();
  const validatorOf = (key: string, schema: Schema) => {
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile(schema);
      compiled.set(key, validate);
    }
    return validate;
  };

  return {
    check(answer) {
      const name = targetName(answer.target);
      const responses =
        'routeId' in answer.target ? operations.get(answer.target.routeId) : ROUTER_RULES[answer.target.router];
      const violation = (errors: string[]): Violation => ({
        route: name,
        method: answer.method,
        path: answer.path,
        status: answer.status,
        errors,
        body: answer.body.slice(0, BODY_EXCERPT),
      });
      if (!responses) return violation([`${name} is not in the document`]);
      const response = responses[String(answer.status)] ?? responses.default;
      if (!response) {
        return violation([
          `status ${answer.status} is not listed for ${name} (listed: ${Object.keys(responses).join(', ')})`,
        ]);
      }
      // A status listed without a body schema (a success whose schema is not written yet): the status is all.
      const [mediaType, media] = Object.entries(response.content ?? {})[0] ?? [];
      if (mediaType === undefined || !media?.schema) return null;
      let body: unknown = answer.body;
      if (mediaType === 'application/json') {
        const contentType = headerValue(answer.headers, 'content-type') ?? '';
        if (!/^application\/json\b/i.test(contentType)) {
          return violation([`content-type is ${contentType || 'missing'}, the document says application/json`]);
        }
        try {
          body = JSON.parse(answer.body);
        } catch {
          return violation(['the body is not JSON']);
        }
      }
      const validate = validatorOf(`${name} ${answer.status}`, media.schema);
      if (validate(body)) return null;
      return violation(
        (validate.errors ?? []).map((error) => {
          const extra = error.params && Object.keys(error.params).length ? ` ${JSON.stringify(error.params)}` : '';
          return `${error.instancePath || '/'} ${error.message ?? error.keyword}${extra}`;
        }),
      );
    },
  };
}

/** The files an answer recorder writes in its folder: one count file and one violations file per recorder. */
export const CHECK_FILES = { counts: /^checked-.+\.json$/, violations: /^violations-.+\.jsonl$/ } as const;

export interface AnswerRecorder {
  /** Checks `answer`, counts it, and keeps its violation (returned) in the folder. */
  record(answer: Answer): Violation | null;
}

/**
 * Checks answers and keeps the outcome in `dir`: `checked-<id>.json` (`{ checked, violations }`, rewritten at every
 * answer, so a process killed mid-work leaves its count) and `violations-<id>.jsonl` (one JSON line per violation).
 */
export function createAnswerRecorder(dir: string, checker: AnswerChecker = createAnswerChecker()): AnswerRecorder {
  mkdirSync(dir, { recursive: true });
  const id = `${process.pid}-${randomUUID().slice(0, 8)}`;
  const countFile = join(dir, `checked-${id}.json`);
  const violationsFile = join(dir, `violations-${id}.jsonl`);
  let checked = 0;
  let violations = 0;
  writeFileSync(countFile, JSON.stringify({ checked, violations }));
  return {
    record(answer) {
      let violation: Violation | null;
      try {
        violation = checker.check(answer);
      } catch (error) {
        // A checker that cannot check (a schema ajv refuses) is a violation too, never a silent pass.
        violation = {
          route: targetName(answer.target),
          method: answer.method,
          path: answer.path,
          status: answer.status,
          errors: [`the check failed: ${(error as Error).message}`],
          body: answer.body.slice(0, BODY_EXCERPT),
        };
      }
      checked += 1;
      if (violation) {
        violations += 1;
        appendFileSync(violationsFile, `${JSON.stringify(violation)}\n`);
      }
      writeFileSync(countFile, JSON.stringify({ checked, violations }));
      return violation;
    },
  };
}

/** Violations as a test failure's message lists them. */
export function describeViolations(violations: readonly Violation[]): string {
  return violations
    .map(
      (v) => `- ${v.method} ${v.path} (${v.route}) answered ${v.status}: ${v.errors.join('; ')}\n    body: ${v.body}`,
    )
    .join('\n');
}
