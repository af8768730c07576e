/**
 * Fault injection (issue 7): the processing worker runs as a process of its own (`bin/worker.ts`) beside a runtime
 * started with LOCAL_WORKER=off, and is killed with SIGKILL at random moments and started again while documents
 * and a ZIP are ingested through the public API. Afterwards every document is `ready` or `failed` with a code (none
 * left `uploaded`), every `ready` document has exactly the chunks its text gives (no duplicate, none missing, none
 * of another version), no chunk belongs to a document that is not `ready`, and every `ready` document is found by the
 * retrieval endpoint of the runtime, which reads the index the worker processes wrote.
 *
 * Small in `npm test`; `npm run test:faults` (PROOF_SIZE=full) ingests 300 documents and a ZIP of 200 and keeps
 * killing until ingestion ends. The kill schedule is drawn from a seed that is printed; FAULTS_SEED=<n> replays it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import type { DocumentRecord } from '#core/knowledge/document';
import { CHUNK_OVERLAP, CHUNK_SIZE, chunkId, chunkText } from '#core/processing/chunking';
import { ProcessingError } from '#core/processing/errors';
import { seededRandom } from '../../bench/ingestion-corpus';
import { readEnginesFile } from '../../lib/local/data-folder';
import { LOCAL_REGION } from '../../lib/local/engine-credentials';
import { createDataset, type Dataset, putFile, type UploadLink, uploadDocument, zipOf } from '../helpers/fixtures';
import { client, startService, type TestService } from '../helpers/service';
import { startWorker, type TestWorker } from '../helpers/worker';
import { FULL_SIZE, printFigures, proofSize } from './size';

const SIZE = proofSize(
  // Kills: the worker lives a random 0.3–2.5 s after it is ready, then dies; at least `minKills` times, and until
  // ingestion ends, but no more than `maxKills` times: on a machine slow enough that a worker's short life is mostly
  // its start, killing until the end would leave the work no life to progress in (on a machine kept busy by three
  // other processes, 6 of the 20 ZIP files in 90 s), which measures the machine, not what a kill does.
  { documents: 30, zipFiles: 20, minKills: 2, maxKills: 12, minUpMs: 300, maxUpMs: 2500, settleMs: 90_000 },
  { documents: 300, zipFiles: 200, minKills: 5, maxKills: 60, minUpMs: 300, maxUpMs: 4000, settleMs: 600_000 },
);
/** How long a message received by a worker that dies stays hidden before it is delivered again. */
const VISIBILITY_TIMEOUT_SECONDS = 3;
/**
 * The watchdog: a document `uploaded` this long is queued again, once; then failed (INDEXING_FAILED). Longer than a
 * document may wait in the queue while workers die, so that it only acts on what the queue gave up on (five
 * receives, then the dead-letter queue).
 */
const PROCESSING_TIMEOUT_SECONDS = FULL_SIZE ? 30 : 10;
const SEED = Number(process.env.FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const UPLOADS_IN_FLIGHT = 8;

jest.setTimeout(SIZE.settleMs + (FULL_SIZE ? 900_000 : 120_000));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function eachLimited<T>(items: readonly T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await run(items[next++]);
    }),
  );
}

/** Waits until `check` answers null (done), at most `ms`; else fails with what `check` last said. */
async function waitFor(what: string, check: () => Promise<string | null>, ms: number, everyMs = 500): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const problem = await check();
    if (problem === null) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${Math.round(ms / 1000)} s: ${problem}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The documents: generated text with one word no other document has, so a query for it finds only that document.

const WORDS = (
  'router firmware backup restore invoice billing password network printer update battery screen cable ' +
  'warranty shipping refund account license storage server client report schedule policy manual install'
).split(' ');

function marker(kind: 'u' | 'z', n: number): string {
  return `qx${kind}${n.toString(36).padStart(4, '0')}w`;
}

function documentText(random: () => number, word: string): string {
  const paragraphs: string[] = [];
  const target = 300 + Math.floor(random() * 2700);
  let length = 0;
  while (length < target) {
    const sentences = Array.from({ length: 2 + Math.floor(random() * 4) }, () => {
      const words = Array.from({ length: 6 + Math.floor(random() * 10) }, () => WORDS[Math.floor(random() * 28)]);
      return `${words.join(' ').replace(/^./, (c) => c.toUpperCase())}.`;
    });
    if (paragraphs.length === 0) sentences.unshift(`This document is about ${word}.`);
    const paragraph = sentences.join(' ');
    paragraphs.push(paragraph);
    length += paragraph.length + 2;
  }
  return `${paragraphs.join('\n\n')}\n\nReference ${word}.`;
}

interface Planned {
  readonly fileName: string;
  readonly bytes: Buffer;
  /** The word only this document has; null for a file that cannot become chunks. */
  readonly word: string | null;
  readonly label1: string | null;
  readonly label2: string | null;
  /** What processing must end with, from the real extractor and chunker: the chunk texts, or the failure code. */
  expected?: { readonly pieces: readonly string[] } | { readonly code: string };
  documentId?: string;
  s3Key?: string;
}

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

/** Every 15th document cannot be processed: alternately an empty file and a PNG named .txt. */
function planUploads(random: () => number): Planned[] {
  return Array.from({ length: SIZE.documents }, (_, i): Planned => {
    const fileName = `doc-${String(i).padStart(4, '0')}.txt`;
    const labels = { label1: 'source:upload', label2: `part:p${i % 4}` };
    if (i % 15 === 7) {
      const bytes = (i / 15) % 2 < 1 ? Buffer.alloc(0) : PNG;
      return { fileName, bytes, word: null, ...labels };
    }
    const word = marker('u', i);
    return { fileName, bytes: Buffer.from(documentText(random, word)), word, ...labels };
  });
}

/** The ZIP's files; its CSV names all but every 10th, which get the request's labels. */
function planZip(random: () => number): { files: Planned[]; csv: string } {
  const rows = ['file,label1,label2'];
  const files = Array.from({ length: SIZE.zipFiles }, (_, i): Planned => {
    const fileName = `zip-${String(i).padStart(4, '0')}.txt`;
    const word = marker('z', i);
    const bytes = Buffer.from(documentText(random, word));
    if (i % 10 === 3) return { fileName, bytes, word, label1: 'source:zip-request', label2: null };
    rows.push(`${fileName},batch:zip,part:z${i % 3}`);
    return { fileName, bytes, word, label1: 'batch:zip', label2: `part:z${i % 3}` };
  });
  return { files, csv: `${rows.join('\n')}\n` };
}

async function expectOutcome(extractor: DocumentTextExtractor, file: Planned): Promise<void> {
  try {
    const { text } = await extractor.extract(file.bytes, { fileName: file.fileName, contentType: 'text/plain' });
    const pieces = chunkText(text, { size: CHUNK_SIZE, overlap: CHUNK_OVERLAP });
    file.expected = pieces.length === 0 ? { code: 'EMPTY_DOCUMENT' } : { pieces };
  } catch (error) {
    if (!(error instanceof ProcessingError)) throw error;
    file.expected = { code: error.code };
  }
}

// ---------------------------------------------------------------------------------------------------------------

interface ZipJobView {
  status: string;
  error: { code: string } | null;
  files: { fileName: string; documentId: string | null; s3Key: string | null; status: string }[];
}

interface QueryBody {
  results: { metadata: { documentId: string; chunkId: string } }[];
}

let service: TestService;
let dataDir: string;
/** Stops the killer and the last worker, also when the test failed half-way. */
let stopWorkers: (() => Promise<void>) | undefined;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'aps-faults-'));
  service = await startService({
    dataDir,
    env: { LOCAL_WORKER: 'off', PROCESSING_VISIBILITY_TIMEOUT_SECONDS: String(VISIBILITY_TIMEOUT_SECONDS) },
  });
});

afterAll(async () => {
  await stopWorkers?.();
  await service?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

it('ends every document ready or failed, indexed exactly once and retrievable, while workers are killed', async () => {
  const started = Date.now();
  const call = client(service);
  const dataset: Dataset = await createDataset(call);
  const random = seededRandom(SEED);
  const uploads = planUploads(random);
  const zip = planZip(random);
  const all = [...uploads, ...zip.files];
  const extractor = new DocumentTextExtractor();
  for (const file of all) await expectOutcome(extractor, file);
  const archive = await zipOf({
    'labels.csv': zip.csv,
    ...Object.fromEntries(zip.files.map((f) => [f.fileName, f.bytes])),
  });

  // The worker, and the killer: SIGKILL at a random moment after each start, then a new worker.
  const workerEnv = {
    PROCESSING_TIMEOUT_SECONDS: String(PROCESSING_TIMEOUT_SECONDS),
    WATCHDOG_INTERVAL_SECONDS: '1',
  };
  const outputs: string[] = [];
  let worker: TestWorker = await startWorker(dataDir, workerEnv);
  let kills = 0;
  let ingesting = true;
  let stopped = false;
  const killer = (async () => {
    while (!stopped && (ingesting || kills < SIZE.minKills) && kills < SIZE.maxKills) {
      await sleep(SIZE.minUpMs + random() * (SIZE.maxUpMs - SIZE.minUpMs));
      await worker.kill();
      kills += 1;
      outputs.push(worker.output());
      worker = await startWorker(dataDir, workerEnv);
    }
  })();
  // A failed restart must fail the test at once, not when the killer is awaited at the end.
  let killerFailure: unknown;
  killer.catch((error: unknown) => {
    killerFailure = error;
    ingesting = false;
  });
  stopWorkers = async () => {
    stopped = true;
    await killer.catch(() => undefined);
    await worker.stop();
  };

  // Ingestion through the public API: upload-link → PUT → upload-complete, the ZIP half-way through.
  let zipJobId = '';
  const half = Math.floor(uploads.length / 2);
  await eachLimited(
    uploads.map((file, i) => ({ file, i })),
    UPLOADS_IN_FLIGHT,
    async ({ file, i }) => {
      if (killerFailure) throw killerFailure;
      if (i === half) {
        const link = await call<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
          body: { ...dataset, fileName: 'batch.zip', label1: 'source:zip-request' },
        });
        expect(link.status).toBe(200);
        expect((await putFile(link.body, archive)).status).toBe(200);
        const done = await call('POST', '/api/v1/knowledge/documents/upload-complete', {
          body: { uploadId: link.body.uploadId },
        });
        expect(done.status).toBe(200);
        zipJobId = link.body.zipJobId as string;
      }
      const { link } = await uploadDocument(
        call,
        dataset,
        { fileName: file.fileName, label1: file.label1, label2: file.label2 },
        file.bytes,
      );
      file.documentId = link.documentId as string;
      file.s3Key = link.s3Key;
    },
  );
  const uploadedAt = Date.now();
  const zipJob = () => call<ZipJobView>('GET', `/api/v1/knowledge/zip-jobs/${zipJobId}`);
  // Ingestion ends when the archive has been read into documents.
  await waitFor(
    'the ZIP import reads its archive',
    async () => {
      if (killerFailure) throw killerFailure;
      const job = (await zipJob()).body;
      if (job.status === 'failed') {
        throw new Error(`the ZIP import failed after ${job.files.length} files: ${JSON.stringify(job.error)}`);
      }
      return job.files.length === SIZE.zipFiles
        ? null
        : `job ${job.status}, ${job.files.length} of ${SIZE.zipFiles} files`;
    },
    SIZE.settleMs,
    1000,
  ).finally(() => {
    ingesting = false;
  });
  await killer;
  const ingestedAt = Date.now();

  // Then the last worker, left alone, finishes: nothing `uploaded`, the job completed, the queue empty.
  const engines = readEnginesFile(dataDir);
  const store = new DynamoDocumentStore(
    DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: engines.dynamodbEndpoint,
        region: LOCAL_REGION,
        credentials: engines.credentials,
      }),
    ),
    engines.tableNames.documents,
  );
  const sqs = new SQSClient({
    endpoint: engines.sqsEndpoint,
    region: LOCAL_REGION,
    credentials: engines.credentials,
    useQueueUrlAsEndpoint: false,
  });
  const queueDepth = async (QueueUrl: string) => {
    const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
    return (
      Number(Attributes.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0) +
      Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0)
    );
  };
  const records = async () => {
    const list: DocumentRecord[] = [];
    for await (const doc of store.listDataset(dataset)) list.push(doc);
    return list;
  };
  await waitFor(
    'every document ready or failed',
    async () => {
      const list = await records();
      const pending = list.filter((doc) => doc.status === 'uploaded' || doc.status === 'reserved');
      if (list.length !== all.length || pending.length > 0) {
        return `${list.length} of ${all.length} documents, ${pending.length} pending: ${pending
          .slice(0, 5)
          .map((doc) => `${doc.fileName} ${doc.status} since ${doc.updatedAt}`)
          .join(', ')}`;
      }
      return null;
    },
    SIZE.settleMs,
  );
  const settledAt = Date.now();
  await waitFor(
    'the processing queue drains',
    async () => {
      const depth = await queueDepth(engines.processingQueueUrl);
      return depth === 0 ? null : `${depth} messages left`;
    },
    60_000,
  );
  outputs.push(worker.output());
  await worker.stop();
  const deadLettered = await queueDepth(engines.deadLetterQueueUrl);
  sqs.destroy();

  // The ZIP job: completed, every file a document with the labels of its CSV row (or the request's).
  const job = (await zipJob()).body;
  expect({ status: job.status, error: job.error }).toEqual({ status: 'completed', error: null });
  expect(job.files.map((f) => f.fileName).sort()).toEqual(zip.files.map((f) => f.fileName).sort());
  const zipByName = new Map(job.files.map((f) => [f.fileName, f]));
  for (const file of zip.files) {
    const entry = zipByName.get(file.fileName);
    file.documentId = entry?.documentId ?? undefined;
    file.s3Key = entry?.s3Key ?? undefined;
  }

  // Every document, through the API: ready, or failed with a code; failed only as its content says, or as the
  // watchdog decides (INDEXING_FAILED) for a document the queue gave up on.
  const byId = new Map<string, Planned>();
  const statuses = new Map<string, { status: string; code: string | null }>();
  const problems: string[] = [];
  await eachLimited(all, 8, async (file) => {
    const doc = await call<{ status: string; error: { code: string } | null; label1: string; label2: string }>(
      'GET',
      '/api/v1/knowledge/documents',
      { query: { ...dataset, s3Key: file.s3Key as string } },
    );
    byId.set(file.documentId as string, file);
    const outcome = { status: doc.body.status, code: doc.body.error?.code ?? null };
    statuses.set(file.documentId as string, outcome);
    const expected = file.expected as NonNullable<Planned['expected']>;
    const fine =
      'pieces' in expected
        ? outcome.status === 'ready' || (outcome.status === 'failed' && outcome.code === 'INDEXING_FAILED')
        : outcome.status === 'failed' && (outcome.code === expected.code || outcome.code === 'INDEXING_FAILED');
    if (!fine) problems.push(`${file.fileName}: ${JSON.stringify(outcome)}, expected ${JSON.stringify(expected)}`);
    if (doc.body.label1 !== file.label1 || doc.body.label2 !== file.label2) {
      problems.push(`${file.fileName}: labels ${doc.body.label1}, ${doc.body.label2}`);
    }
  });
  expect(problems).toEqual([]);
  const ready = all.filter((file) => statuses.get(file.documentId as string)?.status === 'ready');

  // The index: each ready document holds exactly the chunks of its text, with its labels; nothing else is there.
  const index = await LanceKnowledgeIndex.open(join(dataDir, 'index'));
  const chunks = await index.listChunks(dataset);
  await index.close();
  const chunkKeys = chunks.map((chunk) => `${chunk.documentId}/${chunk.chunkId}`);
  expect(chunkKeys.length - new Set(chunkKeys).size).toBe(0); // duplicates
  const orphans = chunks.filter((chunk) => statuses.get(chunk.documentId)?.status !== 'ready');
  expect(orphans.map((chunk) => chunk.chunkId)).toEqual([]);
  const indexed = new Map<string, typeof chunks>();
  for (const chunk of chunks) indexed.set(chunk.documentId, [...(indexed.get(chunk.documentId) ?? []), chunk]);
  const wrong: string[] = [];
  for (const file of ready) {
    const pieces = (file.expected as { pieces: string[] }).pieces;
    const want = pieces.map((text, position) => chunkId(file.documentId as string, position, text)).sort();
    const have = indexed.get(file.documentId as string) ?? [];
    if (JSON.stringify(have.map((chunk) => chunk.chunkId).sort()) !== JSON.stringify(want)) {
      wrong.push(`${file.fileName}: ${have.length} chunks indexed, ${want.length} expected`);
    }
    if (have.some((chunk) => chunk.label1 !== file.label1 || chunk.label2 !== file.label2)) {
      wrong.push(`${file.fileName}: chunk labels differ from the document's`);
    }
  }
  expect(wrong).toEqual([]);

  // Retrieval through the runtime's HTTP API (another process than the workers that wrote the index): a ready
  // document's own word finds it and nothing else; a failed document's word finds nothing.
  const queryPath = `/dashboard/agents/${dataset.agentId}/knowledge/${dataset.environment}/kb/${dataset.knowledgeBaseId}/query`;
  const misses: string[] = [];
  await eachLimited(
    all.filter((file) => file.word !== null),
    8,
    async (file) => {
      const answer = await call<QueryBody>('POST', queryPath, { body: { query: file.word, numberOfResults: 10 } });
      const found = answer.status === 200 ? answer.body.results.map((r) => r.metadata.documentId) : [];
      const isReady = statuses.get(file.documentId as string)?.status === 'ready';
      const right = isReady
        ? found.length > 0 && found.every((id) => id === file.documentId)
        : answer.status === 200 && found.length === 0;
      if (!right) misses.push(`${file.fileName} (${isReady ? 'ready' : 'failed'}): ${answer.status} ${found}`);
    },
  );
  expect(misses).toEqual([]);

  // Figures.
  const text = outputs.join('\n');
  const redeliveries = (text.match(/delivered again/g) ?? []).length;
  const watchdog = { retried: 0, failed: 0, importsRetried: 0, importsFailed: 0 };
  for (const line of text.split('\n')) {
    if (!line.startsWith('{') || !line.includes('watchdog acted on stuck documents')) continue;
    const report = JSON.parse(line) as typeof watchdog;
    for (const key of Object.keys(watchdog) as (keyof typeof watchdog)[]) watchdog[key] += report[key] ?? 0;
  }
  const failedByCode = new Map<string, number>();
  for (const { status, code } of statuses.values()) {
    if (status === 'failed') failedByCode.set(code as string, (failedByCode.get(code as string) ?? 0) + 1);
  }
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  printFigures('faults', [
    `seed ${SEED} (FAULTS_SEED=${SEED} replays the kill schedule)`,
    `${all.length} documents (${uploads.length} uploaded one by one, ${zip.files.length} from one ZIP with a label CSV)`,
    `ready ${ready.length}, failed ${all.length - ready.length}: ${
      [...failedByCode].map(([code, n]) => `${code} × ${n}`).join(', ') || 'none'
    }; uploaded (stuck) 0`,
    `worker killed with SIGKILL ${kills} times (up ${SIZE.minUpMs}–${SIZE.maxUpMs} ms after each start; at most ${SIZE.maxKills})`,
    `messages delivered again ${redeliveries}, dead-lettered ${deadLettered}; watchdog re-queued ${watchdog.retried} documents and ${watchdog.importsRetried} imports, failed ${watchdog.failed} and ${watchdog.importsFailed}`,
    `chunks ${chunks.length} (duplicates 0, orphans 0, every ready document's chunk ids = its text's); retrieval found ${ready.length} of ${ready.length} ready documents`,
    `elapsed ${seconds(Date.now() - started)}: uploads ${seconds(uploadedAt - started)}, archive read ${seconds(
      ingestedAt - started,
    )}, all settled ${seconds(settledAt - started)}`,
  ]);
});
