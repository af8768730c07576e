/**
 * `npm run bench -- costs`: what each API operation costs in AWS (issue 40, item 2). A local runtime runs in this
 * process with its worker (`worker: true`), so the processing queue's, the flow runner's and the webhook deliveries'
 * handlers run here too, and every AWS SDK call any handler makes goes through one counting middleware
 * (composition/clients/capture.ts): service and command, and for DynamoDB the units the engine reports
 * (`ReturnConsumedCapacity: 'TOTAL'`). The operations are driven one at a time, each after the previous one's
 * processing has finished, so every call belongs to the operation being driven.
 *
 * What the handlers cannot show is modelled, and the notes say how: API Gateway's request and the Lambda invocations
 * (the route's function, the authorizer's), S3's own notification message to the processing queue, and the queue
 * consumers' receive and delete of each message.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { captureClientsWith } from '#composition/clients/capture';
import type { LocalRuntime } from '../lib/local/runtime';
import { putObject, type UploadLink } from './put-object';
import { type Benchmark, type BenchRow, type BenchSection, loadAverageAfter } from './report';

const TOKEN = 'bench-costs-token-0123456789abcdef';
const KNOWLEDGE = '/api/v1/knowledge/documents';
const REQUEST_TIMEOUT_MS = 60_000;
/** Longer than the read caches' 5 s (adapters/store/read-cache.ts): no operation reads what an earlier one cached. */
const CACHE_EXPIRY_WAIT_MS = 5_200;
/** Quiet time after which an operation's asynchronous work (queues, flows) is taken as finished. */
const SETTLE_QUIET_MS = 600;

/**
 * AWS list prices, us-east-1, on-demand, read on 2026-11-29 (the search tool's copies of aws.amazon.com's pricing
 * pages and of pages quoting them). Dollars per request or unit.
 */
export const PRICES = {
  date: '2026-11-29',
  region: 'us-east-1',
  /** DynamoDB on-demand, Standard table class: $0.125 per million read request units (since 2024-11-01). */
  dynamoReadUnit: 0.125 / 1e6,
  /** DynamoDB on-demand: $0.625 per million write request units. */
  dynamoWriteUnit: 0.625 / 1e6,
  /** S3 Standard: PUT, COPY, POST, LIST $0.005 per 1,000. */
  s3Put: 0.005 / 1000,
  /** S3 Standard: GET, HEAD, SELECT and every other request $0.0004 per 1,000 (DELETE is free). */
  s3Get: 0.0004 / 1000,
  /** SQS standard queue: $0.40 per million requests, each 64 KB of payload a request. */
  sqsRequest: 0.4 / 1e6,
  /** API Gateway REST API: $3.50 per million requests (the first 333 million a month). */
  apiGatewayRequest: 3.5 / 1e6,
  /** Lambda: $0.20 per million requests. */
  lambdaRequest: 0.2 / 1e6,
} as const;

type Role = 'api' | 'authorizer' | 'worker';

interface CountedCall {
  readonly operation: string;
  readonly role: Role;
  readonly service: string;
  readonly command: string;
  readonly table?: string;
  readonly readUnits: number;
  readonly writeUnits: number;
  /** Messages a send carries (each one is received and deleted by a queue consumer, one Lambda invocation). */
  readonly messages: number;
  /** SQS requests it is billed as (64 KB of payload each). */
  readonly sqsRequests: number;
  readonly failed: boolean;
}

const DYNAMO_READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const DYNAMO_CAPACITY = new Set([
  ...DYNAMO_READS,
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
  'TransactWriteItems',
]);
/** S3 requests billed at the PUT, COPY, POST, LIST price; DeleteObject(s) are free; the rest at the GET price. */
const S3_PUT_CLASS = /^(Put|Copy|Post|List|CreateMultipartUpload|UploadPart|CompleteMultipartUpload)/;
const S3_FREE = /^Delete/;

interface Capacity {
  readonly TableName?: string;
  readonly CapacityUnits?: number;
}

/** Which function made the call, from its (async) stack: the authorizer, a queue consumer, or the route's own. */
function roleOf(stack: string): Role {
  if (stack.includes('handlers/auth/authorizer')) return 'authorizer';
  if (/handlers\/queue\/|handlers\/scheduled\//.test(stack)) return 'worker';
  return 'api';
}

/** The size of a DynamoDB JSON value as DynamoDB counts it (names and values, UTF-8; numbers about their digits). */
function attributeSize(value: unknown): number {
  if (value === null || value === undefined) return 1;
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number') return Math.ceil(String(value).length / 2) + 1;
  if (typeof value === 'boolean') return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, item) => sum + 1 + attributeSize(item), 0);
  if (value instanceof Set) return [...value].reduce((sum: number, item) => sum + attributeSize(item), 0);
  if (typeof value === 'object') {
    return (
      3 +
      Object.entries(value as Record<string, unknown>).reduce(
        (sum, [name, item]) => sum + 1 + Buffer.byteLength(name, 'utf8') + attributeSize(item),
        0,
      )
    );
  }
  return 1;
}

/**
 * Write units of a TransactWriteItems by DynamoDB's documented rule, since the local engine's emulation answers
 * none: two per action per KB of item. A Put's item is measured; an Update's or a Delete's item is taken as at most
 * 1 KB (the records these transactions touch are documents' and counters', well under).
 */
function transactionWriteUnits(input: Record<string, unknown>): number {
  const items = (input.TransactItems as Record<string, { Item?: Record<string, unknown> }>[] | undefined) ?? [];
  return items.reduce((sum, action) => {
    const put = action.Put?.Item;
    const kb = put ? Math.max(1, Math.ceil(attributeSize(put) / 1024)) : 1;
    return sum + 2 * kb;
  }, 0);
}

export class CallCounter {
  readonly calls: CountedCall[] = [];
  operation: string | undefined;
  private lastCallAt = Date.now();

  /** A client wrapper for captureClientsWith: one middleware that records each call of the client. */
  readonly wrap = <Client>(client: Client): Client => {
    const stack = (client as { middlewareStack?: { add: (...args: unknown[]) => void } }).middlewareStack;
    if (!stack) return client;
    stack.add(
      (
        next: (args: { input: Record<string, unknown> }) => Promise<{ output: Record<string, unknown> }>,
        context: unknown,
      ) =>
        async (args: { input: Record<string, unknown> }) => {
          const { clientName, commandName } = context as { clientName?: string; commandName?: string };
          const service = String(clientName ?? 'unknown').replace(/Client$/, '');
          const command = String(commandName ?? 'unknown').replace(/Command$/, '');
          const limit = Error.stackTraceLimit;
          Error.stackTraceLimit = 200;
          const role = roleOf(new Error().stack ?? '');
          Error.stackTraceLimit = limit;
          const input =
            service === 'DynamoDB' && DYNAMO_CAPACITY.has(command)
              ? { ...args.input, ReturnConsumedCapacity: 'TOTAL' }
              : args.input;
          this.lastCallAt = Date.now();
          try {
            const result = await next({ ...args, input });
            // A pre-signed URL goes through the stack too, but sends nothing: the presigner answers before sending.
            if (!('presigned' in (result.output ?? {})))
              this.record(service, command, role, input, result.output, false);
            return result;
          } catch (error) {
            this.record(service, command, role, input, undefined, true);
            throw error;
          } finally {
            this.lastCallAt = Date.now();
          }
        },
      { step: 'initialize', name: 'costBenchmarkCounter', override: true },
    );
    return client;
  };

  private record(
    service: string,
    command: string,
    role: Role,
    input: Record<string, unknown>,
    output: Record<string, unknown> | undefined,
    failed: boolean,
  ): void {
    const operation = this.operation ?? 'outside';
    let readUnits = 0;
    let writeUnits = 0;
    let table: string | undefined;
    let messages = 0;
    let sqsRequests = 0;
    if (service === 'DynamoDB') {
      table = typeof input.TableName === 'string' ? input.TableName : undefined;
      const consumed = output?.ConsumedCapacity as Capacity | Capacity[] | undefined;
      const units = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []).reduce(
        (sum, c) => sum + (c.CapacityUnits ?? 0),
        0,
      );
      const isRead = DYNAMO_READS.has(command);
      if (command === 'TransactWriteItems') writeUnits = transactionWriteUnits(input);
      else if (isRead) readUnits = failed ? 0 : units;
      // A write whose condition failed still consumes a unit (its item is small): DynamoDB's rule.
      else writeUnits = failed ? 1 : units;
      if (command === 'TransactWriteItems' || command === 'BatchGetItem') {
        const tables =
          command === 'BatchGetItem'
            ? Object.keys((input.RequestItems as object) ?? {})
            : ((input.TransactItems as Record<string, { TableName?: string }>[]) ?? []).map(
                (a) => Object.values(a)[0]?.TableName ?? '?',
              );
        table = [...new Set(tables)].join('+');
      }
    } else if (service === 'SQS') {
      const bodies =
        command === 'SendMessageBatch'
          ? ((input.Entries as { MessageBody?: string }[]) ?? []).map((e) => e.MessageBody ?? '')
          : command === 'SendMessage'
            ? [String(input.MessageBody ?? '')]
            : [];
      messages = failed ? 0 : bodies.length;
      const bytes = bodies.reduce((sum, body) => sum + Buffer.byteLength(body, 'utf8'), 0);
      sqsRequests = Math.max(1, Math.ceil(bytes / 65_536));
    }
    this.calls.push({
      operation,
      role,
      service,
      command,
      table,
      readUnits,
      writeUnits,
      messages,
      sqsRequests,
      failed,
    });
  }

  /** Resolves once no call has been made for `quietMs` and `idle` (the processing queue drained) holds. */
  async settle(idle: () => Promise<unknown>, quietMs = SETTLE_QUIET_MS): Promise<void> {
    for (;;) {
      await idle();
      const since = Date.now() - this.lastCallAt;
      if (since >= quietMs) return;
      await new Promise((resolve) => setTimeout(resolve, quietMs - since));
    }
  }
}

/** What one operation cost, with the requests it was (API Gateway, Lambda) and the modelled extras. */
export interface OperationCost {
  readonly name: string;
  readonly dynamoCalls: number;
  readonly dynamoByCommand: Record<string, number>;
  readonly dynamoByRole: Record<Role, number>;
  readonly readUnits: number;
  readonly writeUnits: number;
  readonly s3Put: number;
  readonly s3Get: number;
  readonly s3Free: number;
  readonly sqsRequests: number;
  readonly apiRequests: number;
  readonly lambdaInvocations: number;
  readonly price: number;
}

/** How an operation reached AWS besides its handlers' own calls (modelled: see the module's note). */
export interface Driven {
  /** HTTP requests to API Gateway: each one invocation of the route's function and, uncached, one of the authorizer. */
  readonly apiRequests: number;
  /** Objects the client PUT itself: each a PUT request, and a notification message S3 sends the processing queue. */
  readonly s3Notifications: number;
  /**
   * Messages a consumer received and deleted (2 SQS requests, at most: a batch shares them) in one invocation each.
   * By default every message sent within the operation (by a handler or by S3).
   */
  readonly consumed?: number;
}

/** Messages the calls sent (SendMessage, SendMessageBatch entries). */
export function messagesSent(calls: readonly CountedCall[]): number {
  return calls.reduce((sum, c) => sum + c.messages, 0);
}

/** The cost of `name` from its calls and how it was driven. */
export function costOf(name: string, calls: readonly CountedCall[], driven: Driven): OperationCost {
  const dynamo = calls.filter((c) => c.service === 'DynamoDB');
  const dynamoByCommand: Record<string, number> = {};
  const dynamoByRole: Record<Role, number> = { api: 0, authorizer: 0, worker: 0 };
  for (const call of dynamo) {
    const key = /rate-?limit/i.test(call.table ?? '') ? `${call.command} (rate limit)` : call.command;
    dynamoByCommand[key] = (dynamoByCommand[key] ?? 0) + 1;
    dynamoByRole[call.role] += 1;
  }
  const { apiRequests, s3Notifications } = driven;
  const s3 = calls.filter((c) => c.service === 'S3');
  const s3Put = s3.filter((c) => S3_PUT_CLASS.test(c.command)).length + s3Notifications;
  const s3Free = s3.filter((c) => S3_FREE.test(c.command)).length;
  const s3Get = s3.length + s3Notifications - s3Put - s3Free;
  const sends = calls.filter((c) => c.service === 'SQS');
  const consumed = driven.consumed ?? messagesSent(calls) + s3Notifications;
  // The handlers' own SQS requests, S3's notifications one request each, a receive and a delete of each consumed one.
  const sqsRequests = sends.reduce((sum, c) => sum + c.sqsRequests, 0) + s3Notifications + 2 * consumed;
  const lambdaInvocations = 2 * apiRequests + consumed;
  const readUnits = dynamo.reduce((sum, c) => sum + c.readUnits, 0);
  const writeUnits = dynamo.reduce((sum, c) => sum + c.writeUnits, 0);
  const price =
    readUnits * PRICES.dynamoReadUnit +
    writeUnits * PRICES.dynamoWriteUnit +
    s3Put * PRICES.s3Put +
    s3Get * PRICES.s3Get +
    sqsRequests * PRICES.sqsRequest +
    apiRequests * PRICES.apiGatewayRequest +
    lambdaInvocations * PRICES.lambdaRequest;
  return {
    name,
    dynamoCalls: dynamo.length,
    dynamoByCommand,
    dynamoByRole,
    readUnits,
    writeUnits,
    s3Put,
    s3Get,
    s3Free,
    sqsRequests,
    apiRequests,
    lambdaInvocations,
    price,
  };
}

/** Several operations' costs as one (an upload: its link, PUT, complete and processing). */
export function sumOf(name: string, parts: readonly OperationCost[]): OperationCost {
  const add = (pick: (c: OperationCost) => number) => parts.reduce((sum, c) => sum + pick(c), 0);
  const dynamoByCommand: Record<string, number> = {};
  const dynamoByRole: Record<Role, number> = { api: 0, authorizer: 0, worker: 0 };
  for (const part of parts) {
    for (const [command, count] of Object.entries(part.dynamoByCommand)) {
      dynamoByCommand[command] = (dynamoByCommand[command] ?? 0) + count;
    }
    for (const role of Object.keys(dynamoByRole) as Role[]) dynamoByRole[role] += part.dynamoByRole[role];
  }
  return {
    name,
    dynamoCalls: add((c) => c.dynamoCalls),
    dynamoByCommand,
    dynamoByRole,
    readUnits: add((c) => c.readUnits),
    writeUnits: add((c) => c.writeUnits),
    s3Put: add((c) => c.s3Put),
    s3Get: add((c) => c.s3Get),
    s3Free: add((c) => c.s3Free),
    sqsRequests: add((c) => c.sqsRequests),
    apiRequests: add((c) => c.apiRequests),
    lambdaInvocations: add((c) => c.lambdaInvocations),
    price: add((c) => c.price),
  };
}

const dollars = (n: number) => `$${n.toFixed(4)}`;
const units = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

/** The per-operation table (Markdown) printed after the section's rows. */
export function costTable(costs: readonly OperationCost[]): string {
  const lines = [
    '| operation | DynamoDB calls (api / authorizer / worker) | DynamoDB by command | RRU | WRU | S3 PUT-class / GET-class / free | SQS requests | API Gateway requests | Lambda invocations | price of 1,000 |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const c of costs) {
    const byCommand = Object.entries(c.dynamoByCommand)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([command, count]) => `${command} ${count}`)
      .join(', ');
    lines.push(
      `| ${c.name} | ${c.dynamoCalls} (${c.dynamoByRole.api} / ${c.dynamoByRole.authorizer} / ${c.dynamoByRole.worker}) | ${byCommand || '–'} | ${units(c.readUnits)} | ${units(c.writeUnits)} | ${c.s3Put} / ${c.s3Get} / ${c.s3Free} | ${c.sqsRequests} | ${c.apiRequests} | ${c.lambdaInvocations} | ${dollars(c.price * 1000)} |`,
    );
  }
  return lines.join('\n');
}

/** The README's walk-through flow (docs/flows.md): a webhook trigger, a retrieval tool node, two prompt nodes. */
const WALK_THROUGH_FLOW = {
  flows: [
    {
      name: 'warranty',
      nodes: [
        { name: 'Ask', type: 'trigger', triggerType: 'webhook' },
        {
          name: 'Search',
          type: 'tool',
          toolName: 'retrieveFromKnowledgeBase',
          parameters: { query: '{memory.query}', numberOfResults: 1, minScore: 0, filters: [] },
        },
        {
          name: 'Answer',
          type: 'promptNode',
          displayName: 'Answer',
          prompt: '{memory.customer}, the manual says: {tools.Search.results.0.content}',
        },
        {
          name: 'Check',
          type: 'promptNode',
          displayName: 'Double-check',
          sendAiMessage: false,
          prompt: 'Double-check with retrieveAndGenerateFromKnowledgeBase.',
          tools: ['retrieveAndGenerateFromKnowledgeBase'],
        },
      ],
      edges: [
        { from: 'Ask', to: 'Search', type: 'stepForward' },
        { from: 'Search', to: 'Answer', type: 'stepForward' },
        { from: 'Answer', to: 'Check', type: 'stepForward' },
      ],
    },
  ],
};

/** A 2 KB text: the "price of 1,000 uploads of a 2 KB document". */
function twoKilobyteDocument(seed: string): Buffer {
  const sentence = `The warranty of every Acme router lasts three years from the day of purchase (${seed}). `;
  return Buffer.from(sentence.repeat(Math.ceil(2048 / sentence.length)).slice(0, 2048), 'utf8');
}

async function run(): Promise<BenchSection> {
  const counter = new CallCounter();
  // Before any client is built: every handler's client counts through it (beside the worker functions' tracer).
  captureClientsWith(counter.wrap);
  // One rate limit window of a day (from 00:00 UTC), far from its limit, so no operation is refused. A request is one
  // UpdateItem at a window's first as at any other (docs/rate-limits.md), so the window's length changes no count.
  process.env.RATE_LIMIT_PER_SECOND = '1000';
  process.env.RATE_LIMIT_BURST = String(1000 * 86_400);
  // No watchdog sweep and no schedule tick inside an operation's window.
  process.env.WATCHDOG_INTERVAL_SECONDS = String(24 * 3600);
  const { startLocalRuntime } = await import('../lib/local/runtime');
  const dataDir = mkdtempSync(join(tmpdir(), 'aps-bench-costs-'));
  const runtime: LocalRuntime = await startLocalRuntime({
    port: 0,
    dataDir,
    devTokens: TOKEN,
    log: () => {},
    worker: true,
    scheduleIntervalMs: 0,
  });
  try {
    return await measure(runtime, counter);
  } finally {
    await runtime.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function measure(runtime: LocalRuntime, counter: CallCounter): Promise<BenchSection> {
  let requests = 0;
  const call = async <T>(method: string, path: string, body?: unknown, expect = 200): Promise<T> => {
    requests++;
    const response = await fetch(runtime.url + path, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await response.text();
    if (response.status !== expect) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  };
  const idle = () => runtime.worker?.idle() ?? Promise.resolve();
  const costs: OperationCost[] = [];
  /**
   * Drives `name` alone: a request that records the token's use (once a minute)
   * first, then a wait past the read caches' life, then the operation, until its asynchronous work is done.
   */
  const operation = async (name: string, drive: () => Promise<void>, s3Notifications = 0) => {
    await counter.settle(idle);
    await call('GET', '/api/v1/agents/list');
    await counter.settle(idle);
    await new Promise((resolve) => setTimeout(resolve, CACHE_EXPIRY_WAIT_MS));
    counter.operation = name;
    requests = 0;
    await drive();
    await counter.settle(idle);
    counter.operation = undefined;
    const calls = counter.calls.filter((c) => c.operation === name);
    return { calls, apiRequests: requests, s3Notifications };
  };
  const measureAlone = async (name: string, drive: () => Promise<void>, s3Notifications = 0) => {
    const { calls, ...driven } = await operation(name, drive, s3Notifications);
    costs.push(costOf(name, calls, driven));
  };

  // Not measured: an agent, its knowledge base, one document already there, the walk-through flow.
  const { agentId } = await call<{ agentId: string }>('POST', '/dashboard/agents', { displayName: 'Costs' }, 201);
  const { knowledgeBaseId } = await call<{ knowledgeBaseId: string }>(
    'POST',
    `/dashboard/agents/${agentId}/knowledge/bases`,
    { name: 'Manuals', description: 'Costs benchmark' },
    201,
  );
  const dataset = { agentId, environment: 'production', knowledgeBaseId };
  const put = (link: UploadLink, bytes: Buffer) => putObject(link, bytes, REQUEST_TIMEOUT_MS);
  const upload = async (fileName: string, bytes: Buffer) => {
    const link = await call<UploadLink>('POST', `${KNOWLEDGE}/upload-link`, { ...dataset, fileName });
    await put(link, bytes);
    await call('POST', `${KNOWLEDGE}/upload-complete`, { uploadId: link.uploadId });
    return link;
  };
  const waitReady = async (link: UploadLink) => {
    for (;;) {
      await counter.settle(idle);
      const query = new URLSearchParams({ ...dataset, s3Key: link.s3Key });
      const doc = await call<{ status: string }>('GET', `${KNOWLEDGE}?${query}`);
      if (doc.status === 'ready') return;
      if (doc.status === 'failed') throw new Error(`${link.s3Key} failed`);
    }
  };
  await waitReady(await upload('warm-up.txt', twoKilobyteDocument('warm-up')));
  await call('PUT', `/dashboard/agents/${agentId}/definition/production`, WALK_THROUGH_FLOW);

  // Measured: one upload, step by step, then the reads.
  let link: UploadLink | undefined;
  const bytes = twoKilobyteDocument('measured');
  await measureAlone('upload-link', async () => {
    link = await call<UploadLink>('POST', `${KNOWLEDGE}/upload-link`, { ...dataset, fileName: 'guide.txt' });
  });
  const measured = link as UploadLink;
  // S3's notification of the new object reaches the worker, which finds the document still reserved.
  await measureAlone('PUT (and its S3 event)', () => put(measured, bytes), 1);
  // upload-complete and the processing it queues overlap: one window, split by the function that made each call.
  const window = await operation('upload-complete + processing', async () => {
    await call('POST', `${KNOWLEDGE}/upload-complete`, { uploadId: measured.uploadId });
  });
  const byRequest = window.calls.filter((c) => c.role !== 'worker');
  const byWorker = window.calls.filter((c) => c.role === 'worker');
  costs.push(
    costOf('upload-complete', byRequest, { apiRequests: window.apiRequests, s3Notifications: 0, consumed: 0 }),
  );
  // The message upload-complete sent is received, deleted and handled here (and any the processing sends itself).
  costs.push(
    costOf('processing of one document', byWorker, {
      apiRequests: 0,
      s3Notifications: 0,
      consumed: messagesSent(byRequest) + messagesSent(byWorker),
    }),
  );
  await waitReady(measured);

  const retrieval = { query: 'How long is the router warranty?', numberOfResults: 5 };
  const kbPath = `/dashboard/agents/${agentId}/knowledge/production/kb/${knowledgeBaseId}`;
  await measureAlone('query (retrieve)', async () => {
    await call('POST', `${kbPath}/query`, retrieval);
  });
  await measureAlone('generate (extractive answer)', async () => {
    await call('POST', `${kbPath}/generate`, retrieval);
  });
  let sessionId = '';
  await measureAlone('webhook run of the walk-through flow', async () => {
    const run = await call<{ sessionId: string; status: string }>(
      'POST',
      `/api/v1/webhooks/${agentId}/production/Ask`,
      {
        customer: 'Ada',
        query: 'How long is the router warranty?',
      },
    );
    if (run.status !== 'completed') throw new Error(`the walk-through flow ended ${run.status}`);
    sessionId = run.sessionId;
  });
  await measureAlone('analytics query', async () => {
    await call('POST', '/api/v1/events/agent', { agentId, filters: { sessionId } });
  });

  const table = costs;
  const upload1 = sumOf(
    'one upload (link + PUT + complete + processing)',
    costs.filter((c) =>
      ['upload-link', 'PUT (and its S3 event)', 'upload-complete', 'processing of one document'].includes(c.name),
    ),
  );
  const query = costs.find((c) => c.name === 'query (retrieve)') as OperationCost;
  const rows: BenchRow[] = [
    {
      name: 'DynamoDB calls per uploaded document (link + PUT event + complete + processing; authorizer and rate limiter included)',
      value: upload1.dynamoCalls,
      unit: 'calls',
      baseline: 3,
      baselineName: 'its HTTP requests (link, PUT, complete)',
      reading: 'lower is better',
      goal: {
        measure: 'DynamoDB calls per uploaded document (link + complete + processing)',
        of: 'value',
        atMost: 6,
        source: 'issue 40',
      },
    },
    {
      name: 'DynamoDB request units per uploaded document (RRU + WRU)',
      value: upload1.readUnits + upload1.writeUnits,
      unit: 'units',
      baseline: upload1.dynamoCalls,
      baselineName: 'its DynamoDB calls',
      reading: 'units per call; a transaction costs 2 WRU an item',
    },
    {
      name: 'price of 1,000 uploads of a 2 KB document',
      value: upload1.price * 1000,
      unit: 'USD',
      baseline: query.price * 1000,
      baselineName: 'price of 1,000 queries',
      reading: 'lower is better',
      goal: {
        measure: 'price of 1,000 uploads of a 2 KB document in AWS, computed',
        of: 'value',
        atLeast: 0,
        source: 'issue 40',
      },
    },
    ...table
      .filter((c) => c !== query)
      .map(
        (c): BenchRow => ({
          name: `price of 1,000: ${c.name}`,
          value: c.price * 1000,
          unit: 'USD',
          baseline: query.price * 1000,
          baselineName: 'price of 1,000 queries',
          reading: 'lower is better',
        }),
      ),
  ];
  return {
    title: 'Costs: AWS calls and price per API operation',
    notes: [
      `Prices: AWS on-demand list prices, ${PRICES.region}, read ${PRICES.date}: DynamoDB $0.125 per million read request units and $0.625 per million write request units (Standard table class); S3 Standard $0.005 per 1,000 PUT/COPY/POST/LIST and $0.0004 per 1,000 GET/HEAD/other (DELETE free); SQS $0.40 per million requests (64 KB each); API Gateway REST API $3.50 per million requests (the stack's API is a RestApi); Lambda $0.20 per million requests. Free tiers left out.`,
      'Counted: every AWS SDK call of the handlers (API routes, authorizer, processing, flow runner, webhook deliveries) in one local runtime with its worker in process, one operation at a time, each after a wait past the 5 s read caches (a container that has not just read the same records) and after a request that recorded the token’s use (one UpdateItem a token a minute, not in the figures).',
      'DynamoDB units: as the local engine reports them (ReturnConsumedCapacity TOTAL: table units, strongly consistent reads 1 RRU per 4 KB, writes 1 WRU per KB, a failed conditional write 1 WRU); TransactWriteItems by the documented rule, 2 WRU per action per KB, since the local emulation answers none. Global secondary index writes are not included (the engine does not count them): in AWS a write that changes an index key adds 1–2 WRU per index.',
      'Modelled, not counted: each HTTP request is one API Gateway request, one invocation of its function and one of the authorizer (API Gateway caches the authorizer 60 s per token, so under steady traffic the authorizer’s invocation and its GetItem are mostly not paid); the PUT to the pre-signed URL is one S3 PUT and S3 sends one notification message to the processing queue; every message is received and deleted by its consumer (2 SQS requests) in one Lambda invocation (batches of up to 10 share them, so these are upper bounds).',
      'Left out: Lambda duration (GB-seconds: the local process’s CPU time says nothing honest about a Lambda’s billed duration), the knowledge index’s own calls (locally the embedded LanceDB; in AWS Bedrock knowledge base ingestion and Retrieve, priced apart), a model call (the local runtime has no model stand-in by default: generate and the flow’s prompt nodes use the extractive answer; in AWS Bedrock Converse, priced per token), data transfer, storage.',
      loadAverageAfter(),
    ],
    rows,
    after: `Per operation (the DynamoDB calls split by the function that made them; "(rate limit)" is the rate limiter's UpdateItem):\n\n${costTable([...table, upload1])}`,
  };
}

export const costsBenchmark: Benchmark = { id: 'costs', run };
