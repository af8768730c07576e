/**
 * The answer check itself (lib/local/openapi-check.ts): it must fail where an answer leaves the document, else the
 * suites' zero violations would prove nothing.
 */

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOpenApiDocument } from '#handlers/http/openapi-document';
import { type Answer, createAnswerChecker, createAnswerRecorder } from '../../../lib/local/openapi-check';
import { throwViolations } from '../../helpers/openapi-check';
import { teardown } from '../../helpers/openapi-check-global';

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };
const checker = createAnswerChecker(buildOpenApiDocument());

function answer(routeId: string, status: number, body: unknown, method = 'GET'): Answer {
  return {
    target: { routeId },
    method,
    path: '/somewhere',
    status,
    headers: JSON_HEADERS,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
}

const notFound = (code: string) => ({ success: false, error: { code, message: 'gone', details: [] } });

describe('the answer check', () => {
  it('admits an answer the document lists, with its schema', () => {
    expect(checker.check(answer('Health', 200, { success: true, status: 'ok' }))).toBeNull();
    expect(checker.check(answer('GetZipJob', 404, notFound('ZIP_JOB_NOT_FOUND')))).toBeNull();
  });

  it('reports a body with a field its schema does not have', () => {
    const violation = checker.check(answer('Health', 200, { success: true, status: 'ok', extra: 1 }));
    expect(violation?.errors.join(' ')).toMatch(/additional/i);
    expect(violation).toMatchObject({ route: 'Health', status: 200 });
  });

  it('reports a status the route does not list', () => {
    const violation = checker.check(answer('Health', 409, notFound('CONFLICT')));
    expect(violation?.errors[0]).toMatch(/status 409 is not listed for Health/);
  });

  it('reports an error code its status does not list', () => {
    const violation = checker.check(answer('GetZipJob', 404, notFound('DOCUMENT_NOT_FOUND')));
    expect(violation?.errors.join(' ')).toMatch(/\/error\/code must be equal to one of the allowed values/);
  });

  it('reports an error body that is not the service’s error shape', () => {
    const violation = checker.check(answer('GetZipJob', 404, { message: 'Not Found' }));
    expect(violation?.errors.join(' ')).toMatch(/must have required property 'success'/);
  });

  it('reports a body that is not JSON, or not sent as JSON', () => {
    expect(checker.check(answer('GetZipJob', 404, 'Not Found'))?.errors).toEqual(['the body is not JSON']);
    const asText = {
      ...answer('Health', 200, { success: true, status: 'ok' }),
      headers: { 'content-type': 'text/plain' },
    };
    expect(checker.check(asText)?.errors[0]).toMatch(/content-type is text\/plain/);
  });

  it('holds the router’s own answers to its rules', () => {
    const unmatched = { ...answer('x', 404, notFound('ROUTE_NOT_FOUND')), target: { router: 'unmatched' as const } };
    expect(checker.check(unmatched)).toBeNull();
    expect(checker.check({ ...unmatched, status: 200 })?.errors[0]).toMatch(/status 200 is not listed/);
    expect(checker.check({ ...unmatched, body: JSON.stringify(notFound('AGENT_NOT_FOUND')) })).not.toBeNull();
  });

  it('reports a route the document does not have', () => {
    expect(checker.check(answer('NoSuchRoute', 200, {}))?.errors[0]).toMatch(/NoSuchRoute is not in the document/);
  });

  it('keeps the count and the violations in its folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-check-unit-'));
    try {
      const recorder = createAnswerRecorder(dir, checker);
      recorder.record(answer('Health', 200, { success: true, status: 'ok' }));
      recorder.record(answer('Health', 418, notFound('TEAPOT')));
      const files = readdirSync(dir);
      const counts = JSON.parse(readFileSync(join(dir, files.find((f) => f.startsWith('checked-')) as string), 'utf8'));
      expect(counts).toEqual({ checked: 2, violations: 1 });
      const lines = readFileSync(join(dir, files.find((f) => f.startsWith('violations-')) as string), 'utf8')
        .trim()
        .split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0])).toMatchObject({ route: 'Health', status: 418 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the run around it', () => {
  it('a runtime’s violations fail its stop, and the teardown fails on those nobody reported', () => {
    const saved = process.env.OPENAPI_CHECK_RUN_DIR;
    // The teardown's count line is the run's; this test's teardowns keep theirs quiet.
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    const runDir = mkdtempSync(join(tmpdir(), 'openapi-check-run-'));
    process.env.OPENAPI_CHECK_RUN_DIR = runDir;
    try {
      const stopped = createAnswerRecorder(join(runDir, 'service-stopped'), checker);
      stopped.record(answer('Health', 418, notFound('TEAPOT')));
      expect(() => throwViolations(join(runDir, 'service-stopped'), 'a runtime')).toThrow(
        /1 answer\(s\) of a runtime do not match[\s\S]*status 418 is not listed for Health/,
      );
      // Reported once: the teardown does not count it as unreported.
      const neverStopped = createAnswerRecorder(join(runDir, 'service-never-stopped'), checker);
      neverStopped.record(answer('Health', 200, { success: true, status: 'ok' }));
      expect(() => teardown()).not.toThrow();
      mkdirSync(runDir);
      createAnswerRecorder(join(runDir, 'service-left'), checker).record(answer('Health', 500, notFound('X')));
      expect(() => teardown()).toThrow(/1 violation\(s\) of a runtime no suite stopped/);
    } finally {
      process.env.OPENAPI_CHECK_RUN_DIR = saved;
      log.mockRestore();
      rmSync(runDir, { recursive: true, force: true });
    }
  });
});
