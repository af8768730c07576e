/**
 * The load of issue 7 ("Load"), shared by test/proof/load.test.ts (the service as a child process: nothing may be
 * lost) and bench/load.ts (an in-process runtime: the figures beside the same requests alone).
 *
 * U upload flows (upload-link → PUT → upload-complete, each a distinct text with a word no other document has) and
 * Q query lanes run at the same time over loopback. Each lane sends QUERY_ROUNDS queries one after another,
 * alternating between the word of a seeded document (ready before the load: it must be found) and words every
 * uploaded text shares (so queries read the index while it is written). Every request has a time limit, every phase
 * a deadline; a non-200 answer or a network error is recorded, never retried, so the checks see it.
 *
 * Then: every document is polled until it leaves `uploaded` (bounded), each upload's word is queried (its own
 * document, exactly one chunk of it), and the dataset's records are read from the runtime's DynamoDB with the
 * service's own store (the API has no listing): one record per file, none left `reserved`, none unknown.
 */

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import type { DocumentRecord } from '#core/knowledge/document';
import type { LocalCredentials } from '../lib/local/engine-credentials';
import { LOCAL_REGION } from '../lib/local/engine-credentials';
import { mapLimited } from '../lib/map-limited';

export const REQUEST_TIMEOUT_MS = 30_000;
/** Each phase (seeding, the load, waiting for `ready`, the checks) must end within this. */
export const PHASE_TIMEOUT_MS = 180_000;
export const QUERY_ROUNDS = 4;
const READS_IN_FLIGHT = 10;
const POLL_INTERVAL_MS = 250;
const KNOWLEDGE = '/api/v1/knowledge/documents';
/** Words of every uploaded text and of the lanes' odd queries; no seed has them. */
const SHARED_QUERY = 'gateway traffic journal';

export type Step = 'upload-link' | 'PUT' | 'upload-complete' | 'query';
export const STEPS: readonly Step[] = ['upload-link', 'PUT', 'upload-complete', 'query'];

export interface LoadTarget {
  readonly baseUrl: string;
  /** A token with every scope. */
  readonly token: string;
  /** The runtime's DynamoDB endpoint, its documents table (where the records are counted) and its credentials. */
  readonly dynamodb: {
    readonly endpoint: string;
    readonly documentsTable: string;
    readonly credentials: LocalCredentials;
  };
}

export interface LoadDataset {
  readonly agentId: string;
  readonly environment: 'production';
  readonly knowledgeBaseId: string;
}

export interface Seed {
  readonly word: string;
  readonly fileName: string;
  readonly documentId: string;
}

export interface UploadFlow {
  readonly index: number;
  readonly word: string;
  readonly fileName: string;
  /** Epoch ms when upload-link was sent. */
  readonly startedAt: number;
  /** Milliseconds of each step that was answered 200. */
  readonly ms: Partial<Record<Step, number>>;
  readonly s3Key?: string;
  readonly documentId?: string;
  /** The first step that was not answered 200, and how: `upload-complete: 500 {…}`. */
  readonly failure?: string;
}

export interface QueryCall {
  readonly lane: number;
  readonly query: string;
  readonly status: number;
  readonly ms: number;
  /** The seed the query must find, if it asked for one. */
  readonly seed?: Seed;
  readonly documentIds: readonly string[];
  readonly text?: string;
}

export interface LoadRun {
  /** Epoch ms when the load began. */
  readonly startedAt: number;
  /** Milliseconds until every flow and every query was answered. */
  readonly wallMs: number;
  readonly flows: readonly UploadFlow[];
  readonly queries: readonly QueryCall[];
}

export interface DocumentState {
  readonly status: string;
  readonly updatedAt: string;
  readonly error: unknown;
}

export interface LoadOutcome {
  readonly run: LoadRun;
  /** The last answer of GET for each flow that got an s3Key, by flow index. */
  readonly states: ReadonlyMap<number, DocumentState>;
  /** Epoch ms when the last document became `ready` (its own `updatedAt`), or NaN when one never did. */
  readonly lastReadyAt: number;
  /** What the checks found; every list is empty when nothing was lost. */
  readonly problems: LoadProblems;
}

export interface LoadProblems {
  /** Every answer of the load that was not 200 (status 0: no answer in time, or the connection failed). */
  readonly failedRequests: readonly string[];
  /** Queries during the load that did not return the seeded document they asked for. */
  readonly seedMisses: readonly string[];
  /** Uploads whose document did not end `ready` in time. */
  readonly notReady: readonly string[];
  /** Uploads whose word, queried after the load, did not return exactly one chunk, of their own document. */
  readonly notFound: readonly string[];
  /** Files with no record or several, records left `reserved`, records of no upload of the run. */
  readonly records: readonly string[];
}

interface Answer {
  /** 0 when no answer came in time or the connection failed. */
  readonly status: number;
  readonly ms: number;
  readonly text: string;
  readonly body: unknown;
}

async function send(url: string, init: RequestInit): Promise<Answer> {
  const start = performance.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const text = await response.text();
    const ms = performance.now() - start;
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON (S3's answer is empty or XML): the text is kept
    }
    return { status: response.status, ms, text, body };
  } catch (error) {
    return { status: 0, ms: performance.now() - start, text: String(error), body: null };
  }
}

function api(target: LoadTarget, method: string, path: string, options: { body?: unknown; query?: object } = {}) {
  const url = new URL(target.baseUrl + path);
  for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, String(value));
  return send(url.toString(), {
    method,
    headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
}

/** The answer's body when it is `expected`, else an error that says what came instead. */
function expectStatus<T>(answer: Answer, expected: number, what: string): T {
  if (answer.status !== expected) throw new Error(`${what}: ${answer.status} ${answer.text.slice(0, 300)}`);
  return answer.body as T;
}

/** Rejects when `promise` has not settled within `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A word of letters only that no other document has: `prefix`, `n` in base 26, and a final `q`, which no suffix
 * rule of the index's stemmer removes, so two words never stem alike (`zqloadaabq`).
 */
function uniqueWord(prefix: string, n: number): string {
  let letters = '';
  for (let rest = n, i = 0; i < 3 || rest > 0; i++, rest = Math.floor(rest / 26)) {
    letters = String.fromCharCode(97 + (rest % 26)) + letters;
  }
  return `${prefix}${letters}q`;
}

const uploadText = (i: number, word: string) =>
  `Load note ${i}. The ${word} procedure keeps the gateway calm under heavy traffic. ` +
  `Operators write every ${word} step into the shared journal before the next shift.\n`;

const seedText = (i: number, word: string) =>
  `Seed manual ${i}. The ${word} checklist describes the warehouse inventory routine and its weekly audit.\n`;

export async function createLoadDataset(target: LoadTarget, name: string): Promise<LoadDataset> {
  const agent = expectStatus<{ agentId: string }>(
    await api(target, 'POST', '/dashboard/agents', { body: { displayName: `Load ${name}` } }),
    201,
    'create agent',
  );
  const base = expectStatus<{ knowledgeBaseId: string }>(
    await api(target, 'POST', `/dashboard/agents/${agent.agentId}/knowledge/bases`, {
      body: { name, description: 'Load documents' },
    }),
    201,
    'create knowledge base',
  );
  return { agentId: agent.agentId, environment: 'production', knowledgeBaseId: base.knowledgeBaseId };
}

interface LinkBody {
  readonly uploadId: string;
  readonly uploadUrl: string;
  readonly s3Key: string;
  readonly documentId: string;
  readonly requiredHeaders: Record<string, string>;
}

/** One upload flow; it stops at the first step not answered 200 and says so. */
async function uploadFlow(target: LoadTarget, dataset: LoadDataset, fileName: string, text: string) {
  const ms: Partial<Record<Step, number>> = {};
  const startedAt = Date.now();
  const link = await api(target, 'POST', `${KNOWLEDGE}/upload-link`, { body: { ...dataset, fileName } });
  if (link.status !== 200) return { startedAt, ms, failure: `upload-link: ${link.status} ${link.text.slice(0, 300)}` };
  ms['upload-link'] = link.ms;
  const { uploadId, uploadUrl, s3Key, documentId, requiredHeaders } = link.body as LinkBody;
  const put = await send(uploadUrl, { method: 'PUT', headers: requiredHeaders, body: text });
  if (put.status !== 200) {
    return { startedAt, ms, s3Key, documentId, failure: `PUT: ${put.status} ${put.text.slice(0, 300)}` };
  }
  ms.PUT = put.ms;
  const complete = await api(target, 'POST', `${KNOWLEDGE}/upload-complete`, { body: { uploadId } });
  if (complete.status !== 200) {
    const failure = `upload-complete: ${complete.status} ${complete.text.slice(0, 300)}`;
    return { startedAt, ms, s3Key, documentId, failure };
  }
  ms['upload-complete'] = complete.ms;
  return { startedAt, ms, s3Key, documentId };
}

interface QueryBody {
  readonly results: readonly { content: string; metadata: { documentId: string; chunkId: string } }[];
}

const queryPath = (d: LoadDataset) =>
  `/dashboard/agents/${d.agentId}/knowledge/${d.environment}/kb/${d.knowledgeBaseId}/query`;

async function query(target: LoadTarget, dataset: LoadDataset, text: string, numberOfResults = 10) {
  const answer = await api(target, 'POST', queryPath(dataset), { body: { query: text, numberOfResults } });
  const results = answer.status === 200 ? (answer.body as QueryBody).results : [];
  return { answer, results };
}

/** The document's state by GET; a non-200 answer as a state that says so. */
async function documentState(target: LoadTarget, dataset: LoadDataset, s3Key: string) {
  const answer = await api(target, 'GET', KNOWLEDGE, { query: { ...dataset, s3Key } });
  if (answer.status !== 200) return { status: `GET ${answer.status}`, updatedAt: '', error: answer.text.slice(0, 300) };
  return answer.body as DocumentState;
}

/** Waits until every document of `s3Keys` left `uploaded` (or the phase deadline passed); the last states. */
async function settle(target: LoadTarget, dataset: LoadDataset, s3Keys: readonly string[]) {
  const deadline = Date.now() + PHASE_TIMEOUT_MS;
  const states = new Map<string, DocumentState>();
  let pending = [...s3Keys];
  while (pending.length > 0 && Date.now() < deadline) {
    const answers = await mapLimited(pending, READS_IN_FLIGHT, (s3Key) => documentState(target, dataset, s3Key));
    pending = pending.filter((s3Key, i) => {
      states.set(s3Key, answers[i]);
      return answers[i].status === 'uploaded';
    });
    if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
  return states;
}

/** Uploads `count` documents, one after another, and waits until each is `ready`: what the lanes look for. */
export async function seedDocuments(target: LoadTarget, dataset: LoadDataset, count: number): Promise<Seed[]> {
  const seeds: Seed[] = [];
  await within(
    (async () => {
      for (let i = 0; i < count; i++) {
        const word = uniqueWord('zqseed', i);
        const fileName = `seed-${i}.txt`;
        const flow = await uploadFlow(target, dataset, fileName, seedText(i, word));
        if (flow.failure || !flow.s3Key || !flow.documentId) throw new Error(`seed ${i}: ${flow.failure}`);
        const state = (await settle(target, dataset, [flow.s3Key])).get(flow.s3Key);
        if (state?.status !== 'ready') throw new Error(`seed ${i} did not become ready: ${JSON.stringify(state)}`);
        seeds.push({ word, fileName, documentId: flow.documentId });
      }
    })(),
    PHASE_TIMEOUT_MS,
    'seeding',
  );
  return seeds;
}

/** The load: `uploads` flows and `queries` lanes of QUERY_ROUNDS queries, all started at once. */
export async function runLoad(
  target: LoadTarget,
  dataset: LoadDataset,
  seeds: readonly Seed[],
  size: { readonly uploads: number; readonly queries: number },
): Promise<LoadRun> {
  if (seeds.length === 0) throw new Error('the lanes need at least one seeded document to look for');
  const startedAt = Date.now();
  const start = performance.now();
  const flows = Promise.all(
    Array.from({ length: size.uploads }, async (_, index): Promise<UploadFlow> => {
      const word = uniqueWord('zqload', index);
      const fileName = `load-${index}.txt`;
      return { index, word, fileName, ...(await uploadFlow(target, dataset, fileName, uploadText(index, word))) };
    }),
  );
  const lanes = Promise.all(
    Array.from({ length: size.queries }, async (_, lane) => {
      const calls: QueryCall[] = [];
      for (let round = 0; round < QUERY_ROUNDS; round++) {
        const seed = round % 2 === 0 ? seeds[(lane + round) % seeds.length] : undefined;
        const text = seed ? seed.word : SHARED_QUERY;
        const { answer, results } = await query(target, dataset, text);
        calls.push({
          lane,
          query: text,
          status: answer.status,
          ms: answer.ms,
          seed,
          documentIds: results.map((r) => r.metadata.documentId),
          ...(answer.status === 200 ? {} : { text: answer.text.slice(0, 300) }),
        });
      }
      return calls;
    }),
  );
  const [uploaded, asked] = await within(Promise.all([flows, lanes]), PHASE_TIMEOUT_MS, 'the load');
  return { startedAt, wallMs: performance.now() - start, flows: uploaded, queries: asked.flat() };
}

/** Every record of the dataset, read with the service's own store. */
export async function documentRecords(target: LoadTarget, dataset: LoadDataset): Promise<DocumentRecord[]> {
  const dynamo = new DynamoDBClient({
    endpoint: target.dynamodb.endpoint,
    region: LOCAL_REGION,
    credentials: target.dynamodb.credentials,
  });
  try {
    const store = new DynamoDocumentStore(DynamoDBDocumentClient.from(dynamo), target.dynamodb.documentsTable);
    const records: DocumentRecord[] = [];
    for await (const record of store.listDataset(dataset)) records.push(record);
    return records;
  } finally {
    dynamo.destroy();
  }
}

/** After the load: waits for every document, then checks that nothing was lost or doubled. */
export async function settleAndCheck(
  target: LoadTarget,
  dataset: LoadDataset,
  seeds: readonly Seed[],
  run: LoadRun,
): Promise<LoadOutcome> {
  const failedRequests = [
    ...run.flows.flatMap((f) => (f.failure ? [`upload ${f.index} ${f.failure}`] : [])),
    ...run.queries.flatMap((q) =>
      q.status === 200 ? [] : [`query "${q.query}" (lane ${q.lane}): ${q.status} ${q.text}`],
    ),
  ];
  const seedMisses = run.queries.flatMap((q) =>
    q.status === 200 && q.seed && !q.documentIds.includes(q.seed.documentId)
      ? [`query "${q.query}" (lane ${q.lane}) did not return ${q.seed.fileName}: ${JSON.stringify(q.documentIds)}`]
      : [],
  );

  const uploaded = run.flows.filter((f) => f.s3Key && !f.failure);
  const byKey = await within(
    settle(
      target,
      dataset,
      uploaded.map((f) => f.s3Key as string),
    ),
    PHASE_TIMEOUT_MS + REQUEST_TIMEOUT_MS,
    'waiting for ready',
  );
  const states = new Map<number, DocumentState>();
  let lastReadyAt = 0;
  const notReady: string[] = [];
  for (const flow of run.flows) {
    const state = flow.s3Key ? byKey.get(flow.s3Key) : undefined;
    if (state) states.set(flow.index, state);
    if (state?.status === 'ready') lastReadyAt = Math.max(lastReadyAt, Date.parse(state.updatedAt));
    else
      notReady.push(`${flow.fileName}: ${state ? `${state.status} ${JSON.stringify(state.error)}` : 'not uploaded'}`);
  }

  const found = await within(
    mapLimited(uploaded, READS_IN_FLIGHT, (flow) => query(target, dataset, flow.word)),
    PHASE_TIMEOUT_MS,
    'the queries for each word',
  );
  const notFound = uploaded.flatMap((flow, i) => {
    const { answer, results } = found[i];
    const hits = results.filter((r) => r.content.includes(flow.word));
    const own = hits.length === 1 && hits[0].metadata.documentId === flow.documentId && results.length === 1;
    if (answer.status === 200 && own) return [];
    const got = results.map((r) => `${r.metadata.documentId}/${r.metadata.chunkId}`);
    return [`${flow.fileName} (${flow.documentId}) by "${flow.word}": ${answer.status} ${JSON.stringify(got)}`];
  });

  const records = await within(documentRecords(target, dataset), PHASE_TIMEOUT_MS, 'reading the records');
  const expected = new Map<string, string | undefined>([
    ...seeds.map((s): [string, string] => [s.fileName, s.documentId]),
    ...run.flows.map((f): [string, string | undefined] => [f.fileName, f.documentId]),
  ]);
  const perFile = new Map<string, DocumentRecord[]>();
  for (const record of records) perFile.set(record.fileName, [...(perFile.get(record.fileName) ?? []), record]);
  const recordProblems: string[] = [];
  for (const [fileName, documentId] of expected) {
    const held = perFile.get(fileName) ?? [];
    if (held.length !== 1 || held[0].documentId !== documentId) {
      recordProblems.push(`${fileName}: ${held.length} records ${JSON.stringify(held.map((r) => r.documentId))}`);
    }
  }
  for (const record of records) {
    if (!expected.has(record.fileName)) recordProblems.push(`a record of no upload: ${record.fileName}`);
    if (record.status === 'reserved') recordProblems.push(`${record.fileName}: still reserved`);
  }

  return {
    run,
    states,
    lastReadyAt: notReady.length === 0 ? lastReadyAt : Number.NaN,
    problems: { failedRequests, seedMisses, notReady, notFound, records: recordProblems },
  };
}

/** Nearest-rank percentile of `values` (0 < p ≤ 100); NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1];
}

export interface Distribution {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

function distribution(values: readonly number[]): Distribution {
  return { count: values.length, p50: percentile(values, 50), p99: percentile(values, 99), max: Math.max(...values) };
}

export interface LoadFigures {
  readonly steps: Record<Step, Distribution>;
  /** From upload-link sent to `ready` (the document's `updatedAt`), per document. */
  readonly toReady: Distribution;
  /** From the start of the load until the last document was `ready`. */
  readonly allReadyMs: number;
  readonly wallMs: number;
}

export function loadFigures(outcome: LoadOutcome): LoadFigures {
  const { run } = outcome;
  const steps = {} as Record<Step, Distribution>;
  for (const step of STEPS) {
    steps[step] = distribution(
      step === 'query'
        ? run.queries.filter((q) => q.status === 200).map((q) => q.ms)
        : run.flows.flatMap((f) => (f.ms[step] === undefined ? [] : [f.ms[step]])),
    );
  }
  const toReady = run.flows.flatMap((f) => {
    const state = outcome.states.get(f.index);
    return state?.status === 'ready' ? [Date.parse(state.updatedAt) - f.startedAt] : [];
  });
  return {
    steps,
    toReady: distribution(toReady),
    allReadyMs: outcome.lastReadyAt - run.startedAt,
    wallMs: run.wallMs,
  };
}

const ms = (n: number) => `${n.toFixed(n < 10 ? 1 : 0)} ms`;

/** The figures as lines for printFigures: p50, p99 and max of each step, then the time to `ready`. */
export function figureLines(size: { uploads: number; queries: number }, figures: LoadFigures): string[] {
  const line = (name: string, d: Distribution) =>
    `${name.padEnd(16)} n=${String(d.count).padStart(4)}  p50 ${ms(d.p50)}  p99 ${ms(d.p99)}  max ${ms(d.max)}`;
  return [
    `${size.uploads} upload flows and ${size.queries} query lanes × ${QUERY_ROUNDS} at once; every request answered in ${(figures.wallMs / 1000).toFixed(1)} s`,
    ...STEPS.map((step) => line(step, figures.steps[step])),
    line('upload → ready', figures.toReady),
    `all ${size.uploads} documents ready ${(figures.allReadyMs / 1000).toFixed(1)} s after the start`,
  ];
}

/** Medians of the same requests alone on an idle runtime: `count` flows, then `count` queries, one at a time. */
export interface AloneFigures {
  readonly steps: Record<Step, number>;
  readonly toReady: number;
}

export async function measureAlone(
  target: LoadTarget,
  datasets: { readonly uploads: LoadDataset; readonly queries: LoadDataset },
  seeds: readonly Seed[],
  count: number,
  warmup = 3,
): Promise<AloneFigures> {
  const times: Record<Step | 'ready', number[]> = {
    'upload-link': [],
    PUT: [],
    'upload-complete': [],
    query: [],
    ready: [],
  };
  await within(
    (async () => {
      for (let i = 0; i < warmup + count; i++) {
        const word = uniqueWord('zqalone', i);
        const flow = await uploadFlow(target, datasets.uploads, `alone-${i}.txt`, uploadText(i, word));
        if (flow.failure || !flow.s3Key) throw new Error(`alone ${i}: ${flow.failure}`);
        const state = (await settle(target, datasets.uploads, [flow.s3Key])).get(flow.s3Key);
        if (state?.status !== 'ready') throw new Error(`alone ${i} did not become ready: ${JSON.stringify(state)}`);
        if (i < warmup) continue;
        for (const step of ['upload-link', 'PUT', 'upload-complete'] as const) times[step].push(flow.ms[step] ?? 0);
        times.ready.push(Date.parse(state.updatedAt) - flow.startedAt);
      }
      for (let i = 0; i < warmup + count; i++) {
        const seed = seeds[i % seeds.length];
        const { answer, results } = await query(target, datasets.queries, seed.word);
        if (answer.status !== 200 || !results.some((r) => r.metadata.documentId === seed.documentId)) {
          throw new Error(`alone query "${seed.word}": ${answer.status} ${answer.text.slice(0, 300)}`);
        }
        if (i >= warmup) times.query.push(answer.ms);
      }
    })(),
    PHASE_TIMEOUT_MS,
    'the requests alone',
  );
  return {
    steps: {
      'upload-link': percentile(times['upload-link'], 50),
      PUT: percentile(times.PUT, 50),
      'upload-complete': percentile(times['upload-complete'], 50),
      query: percentile(times.query, 50),
    },
    toReady: percentile(times.ready, 50),
  };
}

/**
 * `count` upload flows and `count` queries of the seeds' words, one request at a time (no wait for `ready`): the
 * same mix of requests as the load, without concurrency. Answers how many requests were sent.
 */
export async function sequentialRequests(
  target: LoadTarget,
  dataset: LoadDataset,
  seeds: readonly Seed[],
  count: number,
): Promise<number> {
  for (let i = 0; i < count; i++) {
    const word = uniqueWord('zqsequential', i);
    const flow = await uploadFlow(target, dataset, `sequential-${i}.txt`, uploadText(i, word));
    if (flow.failure) throw new Error(`sequential upload ${i}: ${flow.failure}`);
    const { answer } = await query(target, dataset, seeds[i % seeds.length].word);
    if (answer.status !== 200) throw new Error(`sequential query ${i}: ${answer.status}`);
  }
  return count * 4;
}
