/**
 * The answer check of the tests (README, "Tests": "Every answer against the document"): every HTTP answer the
 * integration suites receive is validated against the OpenAPI document the service serves (ajv, JSON Schema 2020-12
 * as OpenAPI 3.1 writes it). An answer whose status the route does not list, or whose body its schema for that status
 * does not admit, is a violation.
 *
 * The local runtime records its answers here when OPENAPI_CHECK_DIR is set (test/helpers/service.ts sets it for every
 * runtime a suite starts); it is imported only then, so `npm start` never loads ajv or builds the document.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument } from '#handlers/http/openapi-document';
import { type HttpRoute, ROUTES } from '../routes';

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
function errorBody(codes: readonly string[], withDetails = false): ResponseObject {
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
                details: withDetails
                  ? {
                      type: 'array',
                      items: {
                        type: 'object',
                        required: ['field', 'rule'],
                        properties: {
                          field: { type: 'string' },
                          rule: { type: 'string' },
                          message: { type: 'string' },
                        },
                      },
                    }
                  : { type: 'array', maxItems: 0 },
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
  preflight: {
    '204': { content: { '': { schema: { const: '' } } } },
    // A stack deployed without CORS origins has no OPTIONS methods: API Gateway knows no route for the preflight.
    '404': errorBody(['ROUTE_NOT_FOUND']),
  },
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
              metrics: { type: 'array', items: { type: 'object', required: ['name', 'unit'] } },
            },
          },
        },
      },
    },
    '204': { content: { '': { schema: { const: '' } } } },
    // The parameter it does not take, or a metric name it does not know, named in details.
    '400': errorBody(['VALIDATION_ERROR'], true),
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

type OpenApiDocument = {
  paths: Record<string, Record<string, unknown>>;
  components?: { responses?: Record<string, unknown> };
};

/** A status a route lists: its answer, and where that is in the document ('' for the router's own rules). */
interface Listed {
  readonly response: ResponseObject;
  readonly pointer: string;
}

const DOCUMENT_ID = 'openapi:document';

/** A JSON pointer's escaping of one key. */
const pointerKey = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** A checker of answers against `document` (default: the service's own, buildOpenApiDocument). */
export function createAnswerChecker(document: OpenApiDocument = buildOpenApiDocument()): AnswerChecker {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  // The whole document, so a schema's `#/components/...` references resolve as they do in the document.
  ajv.addSchema(document, DOCUMENT_ID);
  /** Per route: each status's answer, and where its schema is in the document (a shared answer's, if it is one). */
  const operations = new Map<string, Record<string, Listed>>();
  for (const [path, pathItem] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(pathItem) as [
      string,
      { operationId?: string; responses?: Responses },
    ][]) {
      if (!operation?.operationId || !operation.responses) continue;
      const statuses: Record<string, Listed> = {};
      for (const [status, listed] of Object.entries(operation.responses)) {
        const ref = (listed as { $ref?: string }).$ref;
        const name = ref?.replace('#/components/responses/', '');
        const response = (name ? document.components?.responses?.[name] : listed) as ResponseObject | undefined;
        if (!response) throw new Error(`${operation.operationId} ${status}: ${ref} is not in the document`);
        const pointer = name
          ? `/components/responses/${pointerKey(name)}`
          : `/paths/${pointerKey(path)}/${method}/responses/${status}`;
        statuses[status] = { response, pointer };
      }
      operations.set(operation.operationId, statuses);
    }
  }
  const routerRules = new Map<string, Record<string, Listed>>(
    Object.entries(ROUTER_RULES).map(([name, responses]) => [
      name,
      Object.fromEntries(Object.entries(responses).map(([status, response]) => [status, { response, pointer: '' }])),
    ]),
  );
  const compiled = new Map<string, ValidateFunction>();
  const validatorOf = (key: string, pointer: string, mediaType: string, schema: Schema) => {
    let validate = compiled.get(key);
    if (!validate) {
      // A schema of the document by its place in it (its references resolve there); the router's rules as they are.
      validate = pointer
        ? ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}/content/${pointerKey(mediaType)}/schema` })
        : ajv.compile(schema);
      compiled.set(key, validate);
    }
    return validate;
  };

  return {
    check(answer) {
      const name = targetName(answer.target);
      const responses =
        'routeId' in answer.target ? operations.get(answer.target.routeId) : routerRules.get(answer.target.router);
      const violation = (errors: string[]): Violation => ({
        route: name,
        method: answer.method,
        path: answer.path,
        status: answer.status,
        errors,
        body: answer.body.slice(0, BODY_EXCERPT),
      });
      if (!responses) return violation([`${name} is not in the document`]);
      const listed = responses[String(answer.status)] ?? responses.default;
      if (!listed) {
        return violation([
          `status ${answer.status} is not listed for ${name} (listed: ${Object.keys(responses).join(', ')})`,
        ]);
      }
      // A status listed without a body schema (a success whose schema is not written yet): the status is all.
      const [mediaType, media] = Object.entries(listed.response.content ?? {})[0] ?? [];
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
      const validate = validatorOf(`${name} ${answer.status}`, listed.pointer, mediaType, media.schema);
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

/**
 * What answers `method` `path` in API Gateway (the stack check's gateway, lib/stack-check/stack-runner.ts): the route
 * of that method and path; a CORS preflight on a route's path; else no route (API Gateway's 404 ROUTE_NOT_FOUND,
 * which it answers for a method the path lacks too).
 */
export function gatewayTargetOf(method: string, path: string, routes: readonly HttpRoute[] = ROUTES): AnswerTarget {
  // Exactly the route's path: API Gateway (as the stack check's gateway) routes no path with a trailing slash.
  const matching = routes.filter((route) =>
    new RegExp(`^${route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^/]+\}/g, '[^/]+')}$`).test(path),
  );
  const route = matching.find((r) => r.method === method);
  if (route) return { routeId: route.id };
  return method === 'OPTIONS' && matching.length > 0 ? { router: 'preflight' } : { router: 'unmatched' };
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
  // Whole or not at all: a runtime killed mid-write (a test's SIGKILL) leaves the last whole count, never half of one.
  const writeCounts = () => {
    writeFileSync(`${countFile}.tmp`, JSON.stringify({ checked, violations }));
    renameSync(`${countFile}.tmp`, countFile);
  };
  writeCounts();
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
      writeCounts();
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
