/**
 * The metrics a processing run emits, read as an operator's CloudWatch would: the EMF lines the functions print,
 * collected from the local runtime's output. Each completed upload counts as DocumentsUploaded, documents processed
 * as DocumentsReady, broken ones as DocumentsFailed by their error code, and no line names an agent, a document or
 * any other id.
 */
import { join } from 'node:path';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

const DOCS = '/api/v1/knowledge/documents';
let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;

beforeAll(async () => {
  service = await startService();
  call = client(service);
  dataset = await createDataset(call);
});
afterAll(() => service?.stop());

interface EmfDirective {
  Namespace: string;
  Dimensions: string[][];
  Metrics: { Name: string; Unit: string }[];
}

interface EmfLine {
  readonly raw: string;
  readonly namespace: string;
  readonly dimensions: Record<string, string>;
  /** Metric name → the values of this line (EMF allows one value or an array). */
  readonly values: Record<string, number[]>;
}

/** Every EMF line in the runtime's output: a JSON object with an `_aws.CloudWatchMetrics` directive. */
function emfLines(output: string): EmfLine[] {
  const lines: EmfLine[] = [];
  for (const raw of output.split('\n')) {
    if (!raw.startsWith('{') || !raw.includes('"CloudWatchMetrics"')) continue;
    const json = JSON.parse(raw) as Record<string, unknown> & { _aws: { CloudWatchMetrics: EmfDirective[] } };
    for (const directive of json._aws.CloudWatchMetrics) {
      const dimensions = Object.fromEntries(directive.Dimensions.flat().map((name) => [name, String(json[name])]));
      const values = Object.fromEntries(
        directive.Metrics.map(({ Name }) => [Name, ([] as number[]).concat(json[Name] as number | number[])]),
      );
      lines.push({ raw, namespace: directive.Namespace, dimensions, values });
    }
  }
  return lines;
}

function sum(lines: EmfLine[], metric: string, dimensions: Record<string, string> = {}): number {
  return lines
    .filter((line) => Object.entries(dimensions).every(([name, value]) => line.dimensions[name] === value))
    .flatMap((line) => line.values[metric] ?? [])
    .reduce((total, value) => total + value, 0);
}

function samples(lines: EmfLine[], metric: string): number[] {
  return lines.flatMap((line) => line.values[metric] ?? []);
}

test('a processing run emits DocumentsReady per processed document and DocumentsFailed by error code', async () => {
  const uploads: [string, string | Buffer][] = [
    ['first.txt', 'The Zephyr router resets with a pin.'],
    ['second.txt', 'The warranty lasts twenty four months.'],
    ['third.md', '# Returns\nReturns are accepted within 30 days.'],
    ['empty.txt', Buffer.alloc(0)],
    ['broken.pdf', Buffer.from('%PDF-1.7\nthis is not really a pdf')],
    ['blank.txt', Buffer.alloc(0)],
  ];
  const s3Keys: string[] = [];
  const documentIds: string[] = [];
  for (const [fileName, content] of uploads) {
    const { link } = await uploadDocument(call, dataset, { fileName }, content);
    s3Keys.push(link.s3Key);
    documentIds.push(link.documentId as string);
  }
  const statuses: { status: string; code: string | undefined }[] = [];
  for (const s3Key of s3Keys) {
    const { body } = await pollUntil(
      () => call<{ status: string; error: { code: string } | null }>('GET', DOCS, { query: { ...dataset, s3Key } }),
      (r) => r.body.status === 'ready' || r.body.status === 'failed',
    );
    statuses.push({ status: body.status, code: body.error?.code });
  }
  const readyCount = statuses.filter((s) => s.status === 'ready').length;
  const failedByCode: Record<string, number> = {};
  for (const { status, code } of statuses) {
    if (status === 'failed' && code) failedByCode[code] = (failedByCode[code] ?? 0) + 1;
  }
  expect(readyCount).toBe(3);
  expect(failedByCode).toEqual({ EMPTY_DOCUMENT: 2, PARSE_ERROR: 1 });

  // Metrics are flushed when the invocation ends, just after the status is written: wait for all of them.
  const lines = await pollUntil(
    async () => emfLines(service.output()),
    (found) => sum(found, 'DocumentsReady') + sum(found, 'DocumentsFailed') >= uploads.length,
  );
  expect(sum(lines, 'DocumentsUploaded')).toBe(uploads.length);
  expect(sum(lines, 'DocumentsReady')).toBe(readyCount);
  for (const [code, count] of Object.entries(failedByCode)) {
    expect([code, sum(lines, 'DocumentsFailed', { errorCode: code })]).toEqual([code, count]);
  }
  expect(sum(lines, 'DocumentsFailed')).toBe(3);
  // ChunksIndexed is what the index holds for the ready documents, read from the runtime's index folder.
  const index = await LanceKnowledgeIndex.open(join(service.dataDir as string, 'index'));
  let chunks = 0;
  for (const documentId of documentIds) chunks += await index.countDocumentChunks({ ...dataset, documentId });
  expect(chunks).toBeGreaterThanOrEqual(3);
  expect(sum(lines, 'ChunksIndexed')).toBe(chunks);
  // One duration per document that became ready.
  expect(samples(lines, 'ProcessingDuration')).toHaveLength(3);
  for (const duration of samples(lines, 'ProcessingDuration')) expect(duration).toBeGreaterThanOrEqual(0);

  for (const line of lines) {
    expect(line.namespace).toBe('AgentPlatform/local');
    expect(line.dimensions.service).toBe('agent-platform');
    expect(Object.keys(line.dimensions).every((name) => name === 'service' || name === 'errorCode')).toBe(true);
    for (const id of [dataset.agentId, dataset.knowledgeBaseId, ...documentIds]) expect(line.raw).not.toContain(id);
  }
});

interface ServedSeries {
  name: string;
  unit: string;
  dimensions: Record<string, string>;
  sum: number;
  samples: number;
  minutes: { at: string; sum: number; samples: number }[];
}

test('GET /dashboard/metrics serves what the EMF lines say, to a dashboard token only', async () => {
  const served = await call<{ namespace: string; since: string; metrics: ServedSeries[] }>('GET', '/dashboard/metrics');
  expect(served.status).toBe(200);
  expect(served.body.namespace).toBe('AgentPlatform/local');
  const lines = emfLines(service.output());
  const total = (name: string, dimensions: Record<string, string> = {}) =>
    served.body.metrics
      .filter((s) => s.name === name && JSON.stringify(s.dimensions) === JSON.stringify(dimensions))
      .reduce((sumOf, s) => sumOf + s.sum, 0);
  // The first test's run: the same totals as its EMF lines (and the same series apart by errorCode).
  for (const name of ['DocumentsUploaded', 'DocumentsReady', 'ChunksIndexed']) {
    expect([name, total(name)]).toEqual([name, sum(lines, name)]);
  }
  for (const code of ['EMPTY_DOCUMENT', 'PARSE_ERROR']) {
    expect([code, total('DocumentsFailed', { errorCode: code })]).toEqual([
      code,
      sum(lines, 'DocumentsFailed', { errorCode: code }),
    ]);
  }
  const durations = served.body.metrics.find((s) => s.name === 'ProcessingDuration');
  expect(durations).toMatchObject({ unit: 'Milliseconds', samples: samples(lines, 'ProcessingDuration').length });
  expect(durations?.minutes.reduce((n, m) => n + m.samples, 0)).toBe(durations?.samples);

  const ready = await call<{ metrics: ServedSeries[] }>('GET', '/dashboard/metrics', {
    query: { name: 'DocumentsReady' },
  });
  expect(ready.body.metrics.map((s) => s.name)).toEqual(['DocumentsReady']);

  expect((await call('GET', '/dashboard/metrics', { token: null })).status).toBe(401);
  const bad = await call('GET', '/dashboard/metrics', { query: { name: 'Bogus', from: 'yesterday' } });
  expect(bad.status).toBe(400);
  expect(bad.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
  expect((bad.body.error as { details: { field: string }[] }).details.map((d) => d.field).sort()).toEqual([
    'from',
    'name',
  ]);
  const minted = await call<{ token: string }>('POST', '/dashboard/tokens', { body: { scopes: ['analytics'] } });
  expect(minted.status).toBe(201);
  const analyticsOnly = await call('GET', '/dashboard/metrics', { token: minted.body.token });
  expect(analyticsOnly.status).toBe(403);
  expect(analyticsOnly.body).toMatchObject({ success: false, error: { code: 'FORBIDDEN' } });
  expect((await call('POST', '/dashboard/metrics', { body: {} })).status).toBe(405);
});
