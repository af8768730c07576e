/**
 * Bad input at scale: malformed requests derived from the service's own OpenAPI document, for every route (see
 * fuzz-requests.ts for what is broken and how). The service must stay up, never answer 5xx, and answer every 4xx
 * with the error body `{ success: false, error: { code, message, details: [{ field, rule, message? }] } }`.
 *
 * `npm test` sends 1,500 requests; `npm run test:fuzz` (PROOF_SIZE=full) more than 10,000. The seed is fixed and
 * printed; FUZZ_SEED=<n> runs another one, and a failure names the request's index in the sequence.
 *
 * Some 4xx come from API Gateway in AWS, from the local router here, in the same body shape but with other codes:
 * no route is a 403 `BAD_REQUEST` "Missing Authentication Token" in AWS (Default4xx gateway response), 404
 * `ROUTE_NOT_FOUND` here; another method on a known path is that same 403 in AWS, 405 `METHOD_NOT_ALLOWED` here; a
 * body over 10 MB is a 413 `BAD_REQUEST` in AWS, 413 `PAYLOAD_TOO_LARGE` here. Requests that are not well-formed HTTP
 * (raw bytes over 0x7F in the request line, headers over 16 KB) are refused by Node's HTTP parser before the router,
 * with a bare 400 or 431 and no body, as the front of API Gateway refuses them before any gateway response; they are
 * not sent.
 */
import { Agent, request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { createDataset, putFile, type UploadLink, uploadDocument } from '../helpers/fixtures';
import { client, startService, type TestService } from '../helpers/service';
import {
  bodyBytes,
  bodyLength,
  type FuzzFixtures,
  type FuzzRequest,
  fuzzRequests,
  ONE_MIB,
  type OpenApiDocument,
  operationsOf,
  overTenMegabytes,
  TEN_MB,
} from './fuzz-requests';
import { printFigures, proofSize } from './size';

const SEED = Number(process.env.FUZZ_SEED ?? 7207);
const COUNT = proofSize(1_500, 10_500);
const OVER_TEN_MB = proofSize(1, 3);
const CONCURRENCY = 16;
const REQUEST_TIMEOUT_MS = 60_000;

let service: TestService;

beforeAll(async () => {
  service = await startService();
}, 90_000);
afterAll(async () => {
  agent.destroy();
  await service?.stop();
});

const DEFINITION = {
  instructions: 'You answer questions about routers.',
  variables: { SUPPORT_EMAIL: 'help@acme.test' },
  flows: [
    {
      name: 'support',
      nodes: [
        { name: 'Start', type: 'trigger', triggerType: 'webhook', displayName: 'Support request' },
        { name: 'Ticket', type: 'trigger', triggerType: 'app', appName: 'helpdesk', eventName: 'ticket.created' },
        { name: 'Answer', type: 'promptNode', displayName: 'Answer', prompt: 'Help {memory.name} with the router.' },
      ],
      edges: [
        { from: 'Start', to: 'Answer', type: 'stepForward' },
        { from: 'Ticket', to: 'Answer', type: 'stepForward' },
      ],
    },
  ],
};

/** Real resources, so that requests reach validation of existing things and the handlers, not only 404s. */
async function createFixtures(): Promise<FuzzFixtures> {
  const call = client(service);
  const dataset = await createDataset(call);
  const { agentId, knowledgeBaseId, environment } = dataset;
  const document = await uploadDocument(call, dataset, { fileName: 'guide.txt', customDocumentId: 'fuzz-guide' });
  const disposableKb = await call<{ knowledgeBaseId: string }>('POST', `/dashboard/agents/${agentId}/knowledge/bases`, {
    body: { name: 'Disposable' },
  });
  const disposable = await uploadDocument(call, dataset, { fileName: 'old.txt', customDocumentId: 'fuzz-old' });
  // An upload and an update whose files are in place but not completed: upload-complete has something to complete.
  const link = await call<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...dataset, fileName: 'pending.txt' },
  });
  const update = await call<UploadLink>('POST', '/api/v1/knowledge/documents/update/upload-link', {
    body: { ...dataset, s3Key: document.link.s3Key, fileName: 'guide-2.txt' },
  });
  for (const [name, answer] of Object.entries({ disposableKb, link, update })) {
    if (answer.status >= 300) throw new Error(`${name}: ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  await putFile(link.body, 'Pending content.');
  await putFile(update.body, 'Hold the power button for ten seconds.');
  // A ZIP import whose archive is not one: the job exists (and fails), so GET zip-jobs/:id has something to show.
  const zip = await uploadDocument(call, dataset, { fileName: 'batch.zip' }, 'not a zip archive');
  const definition = await call('PUT', `/dashboard/agents/${agentId}/definition/${environment}`, { body: DEFINITION });
  if (definition.status !== 200) throw new Error(`definition: ${definition.status} ${JSON.stringify(definition.body)}`);
  const session = await call<{ sessionId: string }>('POST', `/api/v1/webhooks/${agentId}/${environment}/Start`, {
    body: { message: 'My router blinks', name: 'Ada' },
  });
  const other = await createDataset(client(service, service.tokens[1]));
  if (session.status !== 200) throw new Error(`webhook: ${session.status} ${JSON.stringify(session.body)}`);
  return {
    tokens: service.tokens,
    agentId,
    knowledgeBaseId,
    environment,
    s3Key: document.link.s3Key,
    customDocumentId: 'fuzz-guide',
    uploadId: link.body.uploadId,
    updateUploadId: update.body.uploadId,
    zipJobId: String(zip.link.zipJobId),
    sessionId: session.body.sessionId,
    triggerName: 'Start',
    appName: 'helpdesk',
    eventName: 'ticket.created',
    definition: DEFINITION,
    disposableKnowledgeBaseId: disposableKb.body.knowledgeBaseId,
    disposableS3Key: disposable.link.s3Key,
    disposableCustomDocumentId: 'fuzz-old',
    otherAgentId: other.agentId,
  };
}

type Outcome =
  | { readonly status: number; readonly contentType: string; readonly text: string }
  | { readonly error: string };

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/** node:http rather than fetch: the request line, headers and bytes go out exactly as generated. */
function send(baseUrl: URL, fuzz: FuzzRequest): Promise<Outcome> {
  const body = fuzz.body ? bodyBytes(fuzz.body) : undefined;
  return new Promise((resolve) => {
    const request = httpRequest(
      {
        agent,
        host: baseUrl.hostname,
        port: baseUrl.port,
        method: fuzz.method,
        path: fuzz.target,
        headers: { ...fuzz.headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        timeout: REQUEST_TIMEOUT_MS,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            contentType: String(response.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', (error) => resolve({ error: `response: ${error.message}` }));
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    request.on('error', (error) => resolve({ error: error.message }));
    request.end(body);
  });
}

/** What is wrong with a 4xx answer, measured against the error body the service promises (README, "Errors"). */
function errorBodyProblem(contentType: string, text: string): string | undefined {
  if (!/^application\/json\b/.test(contentType)) return `content-type ${JSON.stringify(contentType)}`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'body is not JSON';
  }
  const envelope = body as { success?: unknown; error?: Record<string, unknown> } | null;
  if (envelope?.success !== false) return 'success is not false';
  const error = envelope.error;
  if (!error || typeof error !== 'object') return 'no error object';
  if (typeof error.code !== 'string' || error.code === '') return 'error.code is not a string';
  if (typeof error.message !== 'string') return 'error.message is not a string';
  if (!Array.isArray(error.details)) return 'error.details is not an array';
  for (const detail of error.details as Record<string, unknown>[]) {
    if (detail === null || typeof detail !== 'object') return 'a detail is not an object';
    if (typeof detail.field !== 'string' || typeof detail.rule !== 'string') return 'a detail lacks field or rule';
    if (detail.message !== undefined && typeof detail.message !== 'string') return 'a detail message is not a string';
  }
  return undefined;
}

interface Failure {
  readonly index: number;
  readonly request: FuzzRequest;
  readonly problem: string;
  readonly answer: string;
}

function describeFailure(failure: Failure): string {
  const { request } = failure;
  const body = request.body ? bodyBytes(request.body) : undefined;
  const preview = body ? ` body (${body.length} bytes) ${JSON.stringify(body.subarray(0, 200).toString('utf8'))}` : '';
  return [
    `#${failure.index} ${request.operation} [${request.mutations.join(' | ')}]: ${failure.problem}`,
    `  ${request.method} ${request.target.slice(0, 300)} headers ${JSON.stringify(request.headers).slice(0, 300)}${preview}`,
    `  answer: ${failure.answer.slice(0, 300)}`,
  ].join('\n');
}

function tally(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function listed(counts: Map<string, number>): string {
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([key, n]) => `${key} × ${n}`)
    .join(', ');
}

it(
  `answers ${COUNT + OVER_TEN_MB} malformed requests without a 5xx, each 4xx with the error body`,
  async () => {
    const fixtures = await createFixtures();
    const documentAnswer = await client(service)<OpenApiDocument>('GET', '/api/v1/openapi.json');
    expect(documentAnswer.status).toBe(200);
    const operations = operationsOf(documentAnswer.body);
    expect(operations.length).toBeGreaterThanOrEqual(30);

    const requests = fc.sample(fuzzRequests(operations, fixtures), { seed: SEED, numRuns: COUNT });
    // The few bodies over 10 MB, spread through the run.
    overTenMegabytes(operations, fixtures, OVER_TEN_MB).forEach((request, i) => {
      requests.splice(Math.floor(((i + 1) * requests.length) / (OVER_TEN_MB + 1)), 0, request);
    });

    const baseUrl = new URL(service.baseUrl);
    const byStatus = new Map<string, number>();
    const byOperation = new Map<string, Map<string, number>>();
    const byMutation = new Map<string, number>();
    const bySize = new Map<string, Map<string, number>>();
    const failures: Failure[] = [];
    const started = Date.now();
    let next = 0;
    const worker = async () => {
      while (next < requests.length) {
        const index = next++;
        const request = requests[index];
        const outcome = await send(baseUrl, request);
        const status = 'error' in outcome ? 'no answer' : String(outcome.status);
        tally(byStatus, status);
        if (!byOperation.has(request.operation)) byOperation.set(request.operation, new Map());
        tally(byOperation.get(request.operation) as Map<string, number>, status[0] === 'n' ? status : `${status[0]}xx`);
        for (const mutation of new Set(request.mutations.map((m) => m.split(':')[0]))) tally(byMutation, mutation);
        const bytes = request.body ? bodyLength(request.body) : 0;
        if (bytes > ONE_MIB) {
          const size = bytes > TEN_MB ? 'over 10 MB' : 'over 1 MiB';
          if (!bySize.has(size)) bySize.set(size, new Map());
          tally(bySize.get(size) as Map<string, number>, status);
        }
        let problem: string | undefined;
        if ('error' in outcome) problem = `no answer: ${outcome.error}`;
        else if (outcome.status >= 500) problem = `status ${outcome.status}`;
        else if (outcome.status >= 400) problem = errorBodyProblem(outcome.contentType, outcome.text);
        else if (outcome.status < 200 || outcome.status >= 300) problem = `unexpected status ${outcome.status}`;
        if (problem) {
          failures.push({ index, request, problem, answer: 'error' in outcome ? outcome.error : outcome.text });
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const elapsed = (Date.now() - started) / 1000;
    agent.destroy();

    const health = await client(service)('GET', '/health');
    const crashes = service
      .output()
      .split('\n')
      .filter((line) => /handler failed|local router failed|unexpected error|unhandled|uncaught/i.test(line));

    printFigures('fuzz', [
      `seed ${SEED} (FUZZ_SEED=${SEED} replays it), ${operations.length} operations of the OpenAPI document`,
      `${requests.length} requests in ${elapsed.toFixed(1)} s (${Math.round(requests.length / elapsed)}/s, ${CONCURRENCY} in flight)`,
      `by status: ${listed(byStatus)}`,
      `by mutation (a request has 1 to 3): ${listed(byMutation)}`,
      ...[...bySize].map(([size, counts]) => `bodies ${size}: ${listed(counts)}`),
      ...[...byOperation]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([operation, counts]) => `  ${operation}: ${listed(counts)}`),
      `failures: ${failures.length}; afterwards GET /health ${health.status}, ${crashes.length} crash lines in the output`,
    ]);

    expect({
      failures: failures.length,
      examples: failures.slice(0, 5).map(describeFailure),
    }).toEqual({ failures: 0, examples: [] });
    expect(health.status).toBe(200);
    expect(crashes).toEqual([]);
    expect(operations.every((operation) => byOperation.has(operation.id))).toBe(true);
  },
  proofSize(180_000, 1_200_000),
);
