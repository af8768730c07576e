/**
 * `npm run bench -- ingestion`: document ingestion on the local runtime (issue 3, "Benchmark"). The same 1,000 small
 * texts go in three ways: one by one through the HTTP API (upload-link → PUT → upload-complete, 20 in flight), as
 * one ZIP with a label CSV, and straight through extract → chunk → index in this process (the pipeline), that last
 * one after another (one index commit a document) and as many at once as the local worker runs (group commit). Each
 * way is reported in documents per second against the pipeline. Then the processing of one 50 MB text, PDF and DOCX,
 * each in a child process, against the same child with a 1 KB text: peak RSS.
 *
 * A run ends when the last document is `ready`: that instant is the document's own `updatedAt`, written by the
 * worker as it set `ready`, so how often the benchmark looks does not change the figure. It looks only when the
 * queue worker is idle, so that reads of the status do not compete with processing for the event loop.
 * BENCH_INGEST_DOCS lowers the document count for a quick run; the issue's figures are the default, 1,000.
 * BENCH_INGEST_PARTS=zip runs only the pipeline (50 at once) and the ZIP, for iterating on the ZIP import; `http` and
 * `memory` name the other parts (comma-separated); unset, every part runs, as `npm run bench` does.
 */

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ZipFile } from 'yazl';
import { DEFAULT_EXTRACTION_CAPS, DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { groupCommitStats } from '#adapters/index/lancedb-group-commit';
import { CHUNK_OVERLAP, CHUNK_SIZE, chunkId, chunkText } from '#core/processing/chunking';
import { CHUNKS_PER_PART } from '#core/processing/process-document';
import type { DocumentRef } from '#ports/processing';
import { LOCAL_PROCESSING_IN_FLIGHT, type LocalRuntime, startLocalRuntime } from '../lib/local/runtime';
import { WORKER_EXEC_ARGV, workerEnvironment } from '../lib/local/worker-process';
import { mapLimited } from '../lib/map-limited';
import { type ApiCall, apiClient } from './api-client';
import { runInChild } from './child-run';
import type { UploadArguments, Uploaded } from './ingestion-client';
import { type CorpusFile, smallDocuments, writeLargeDocument } from './ingestion-corpus';
import type { MemoryReport } from './ingestion-memory';
import { DOCX_PARAGRAPHS, PDF_TEXT_PAGES, writeLargeDocx, writeLargePdf } from './office-corpus';
import { type UploadLink as PutLink, putObject } from './put-object';
import { type Benchmark, type BenchRow, type BenchSection, loadAverageAfter } from './report';

const DEFAULT_DOCUMENTS = 1000;
const UPLOADS_IN_FLIGHT = 20;
const READS_IN_FLIGHT = 20;
/**
 * The pipeline runs this many documents at once, as the local worker does (LOCAL_PROCESSING_IN_FLIGHT: its pollers
 * times their batch size), so that the index's group commit sees the documents that arrive together. The baseline
 * runs them one after another: one commit a document, the path before group commit (issue 20).
 */
const PIPELINE_IN_FLIGHT = LOCAL_PROCESSING_IN_FLIGHT;
/**
 * "50 MB": 50,000,000 bytes of ASCII text, the most characters extraction accepts (DEFAULT_EXTRACTION_CAPS); 50 MiB
 * (52,428,800) is refused as FILE_TOO_LARGE since that cap exists, which stopped `npm run bench` there.
 */
const LARGE_BYTES = DEFAULT_EXTRACTION_CAPS.maxCharacters;
const SMALL_BYTES = 1024;
const MB = 1024 * 1024;
/** Each way of ingestion must finish within this, or the benchmark fails rather than hangs. */
const PHASE_TIMEOUT_MS = 5 * 60_000;
const CHILD_TIMEOUT_MS = 4 * 60_000;
const REQUEST_TIMEOUT_MS = 60_000;
const TOKEN = 'bench-ingestion-token-0123456789';
const KNOWLEDGE = '/api/v1/knowledge/documents';

function documentCount(): number {
  const raw = process.env.BENCH_INGEST_DOCS;
  if (raw === undefined || raw === '') return DEFAULT_DOCUMENTS;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error('BENCH_INGEST_DOCS must be a positive integer');
  return value;
}

interface Dataset {
  readonly agentId: string;
  readonly environment: 'production';
  readonly knowledgeBaseId: string;
}

/** upload-link's answer; a ZIP's also names its job. */
interface UploadLink extends PutLink {
  readonly zipJobId?: string;
}

interface DocumentBody {
  readonly s3Key: string;
  readonly status: string;
  readonly updatedAt: string;
  readonly label1: string | null;
  readonly error: { code: string; message: string } | null;
}

interface ZipJobBody {
  readonly status: string;
  /** Set when the worker has read the archive through: every file a document, created and queued. */
  readonly updatedAt: string;
  readonly error: { code: string; message: string } | null;
  readonly files: readonly {
    fileName: string;
    s3Key: string | null;
    status: string;
    label1: string | null;
    error: { code: string; message: string } | null;
  }[];
}

type Call = ApiCall;

async function createDataset(call: Call, name: string): Promise<Dataset> {
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', {
    body: { displayName: `Ingestion bench ${name}` },
    expect: 201,
  });
  const base = await call<{ knowledgeBaseId: string }>('POST', `/dashboard/agents/${agent.agentId}/knowledge/bases`, {
    body: { name, description: 'Benchmark documents' },
    expect: 201,
  });
  return { agentId: agent.agentId, environment: 'production', knowledgeBaseId: base.knowledgeBaseId };
}

/** Resolves when the queue worker has found the queue empty, or after `ms` at the latest. */
async function workerIdle(runtime: LocalRuntime, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    runtime.worker?.idle(),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * Waits until every document is `ready` and returns when the last one became so (its `updatedAt`, epoch ms).
 * A `failed` document fails the benchmark: its figure would not be an ingestion rate.
 */
async function lastReady(call: Call, runtime: LocalRuntime, dataset: Dataset, s3Keys: readonly string[]) {
  const deadline = Date.now() + PHASE_TIMEOUT_MS;
  let pending = [...s3Keys];
  let last = 0;
  const failed: DocumentBody[] = [];
  while (pending.length > 0) {
    if (Date.now() > deadline) throw new Error(`${pending.length} documents not finished after ${PHASE_TIMEOUT_MS} ms`);
    await workerIdle(runtime, 5_000);
    const bodies = await mapLimited(pending, READS_IN_FLIGHT, (s3Key) =>
      call<DocumentBody>('GET', KNOWLEDGE, { query: { ...dataset, s3Key } }),
    );
    pending = [];
    for (const body of bodies) {
      if (body.status === 'ready') last = Math.max(last, Date.parse(body.updatedAt));
      else if (body.status === 'failed') failed.push(body);
      else pending.push(body.s3Key);
    }
  }
  if (failed.length > 0) {
    const [first] = failed;
    throw new Error(`${failed.length} documents failed, e.g. ${first.s3Key}: ${JSON.stringify(first.error)}`);
  }
  return last;
}

interface Ingestion {
  readonly docsPerSecond: number;
  readonly seconds: number;
  readonly notes: readonly string[];
}

async function ingestOneByOne(call: Call, runtime: LocalRuntime, files: readonly CorpusFile[]): Promise<Ingestion> {
  const dataset = await createDataset(call, 'Documents one by one');
  // The uploads from a process of their own (bench/ingestion-client.ts): this process serves them (the router).
  const { s3Keys, startedAt, endedAt } = await runInChild<Uploaded>(join(__dirname, 'ingestion-client.ts'), {
    baseUrl: runtime.url,
    token: TOKEN,
    path: KNOWLEDGE,
    dataset,
    label1: 'source:http',
    files: files.map((file) => ({ fileName: file.fileName, base64: file.bytes.toString('base64') })),
    inFlight: UPLOADS_IN_FLIGHT,
    timeoutMs: REQUEST_TIMEOUT_MS,
  } satisfies UploadArguments);
  const seconds = ((await lastReady(call, runtime, dataset, s3Keys)) - startedAt) / 1000;
  return {
    docsPerSecond: files.length / seconds,
    seconds,
    notes: [
      `HTTP API: ${files.length} documents in ${seconds.toFixed(1)} s; the uploads (upload-link, PUT, upload-complete, ${UPLOADS_IN_FLIGHT} in flight, from a client in a process of its own: bench/ingestion-client.ts) took ${((endedAt - startedAt) / 1000).toFixed(1)} s of it.`,
    ],
  };
}

function zipOf(entries: readonly { name: string; bytes: Buffer }[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const zip = new ZipFile();
    for (const entry of entries) zip.addBuffer(entry.bytes, entry.name, { mtime: new Date('2025-01-06T00:00:00Z') });
    zip.end();
    const parts: Buffer[] = [];
    zip.outputStream.on('data', (part: Buffer) => parts.push(part));
    zip.outputStream.on('end', () => resolve(Buffer.concat(parts)));
    zip.outputStream.on('error', reject);
  });
}

/** The CSV's label of the file at `i`: ten topics, so that the labels vary. */
const csvLabel = (i: number) => `topic:t${i % 10}`;

async function ingestZip(call: Call, runtime: LocalRuntime, files: readonly CorpusFile[]): Promise<Ingestion> {
  const dataset = await createDataset(call, 'One ZIP');
  const csv = ['file,label1', ...files.map((file, i) => `${file.fileName},${csvLabel(i)}`)].join('\n');
  const archive = await zipOf([
    { name: 'labels.csv', bytes: Buffer.from(`${csv}\n`) },
    ...files.map((file) => ({ name: file.fileName, bytes: file.bytes })),
  ]);
  const start = Date.now();
  const link = await call<UploadLink>('POST', `${KNOWLEDGE}/upload-link`, {
    body: { ...dataset, fileName: 'batch.zip', label1: 'source:zip' },
  });
  await putObject(link, archive, REQUEST_TIMEOUT_MS);
  await call('POST', `${KNOWLEDGE}/upload-complete`, { body: { uploadId: link.uploadId } });
  const deadline = Date.now() + PHASE_TIMEOUT_MS;
  let job: ZipJobBody;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`ZIP job ${link.zipJobId} not finished after ${PHASE_TIMEOUT_MS} ms`);
    await workerIdle(runtime, 5_000);
    job = await call<ZipJobBody>('GET', `/api/v1/knowledge/zip-jobs/${link.zipJobId}`);
    if (job.status === 'completed' || job.status === 'failed') break;
  }
  if (job.status !== 'completed') throw new Error(`ZIP job ended ${job.status}: ${JSON.stringify(job.error)}`);
  const labels = new Map(files.map((file, i) => [file.fileName, csvLabel(i)]));
  const wrong = job.files.filter((f) => f.status !== 'ready' || f.label1 !== labels.get(f.fileName));
  if (job.files.length !== files.length || wrong.length > 0) {
    throw new Error(
      `ZIP job: ${job.files.length} files, ${wrong.length} not ready with their CSV label, e.g. ${JSON.stringify(wrong[0])}`,
    );
  }
  const s3Keys = job.files.map((f) => f.s3Key as string);
  const seconds = ((await lastReady(call, runtime, dataset, s3Keys)) - start) / 1000;
  return {
    docsPerSecond: files.length / seconds,
    seconds,
    notes: [
      `ZIP: one archive of ${(archive.length / MB).toFixed(2)} MB (${files.length} files and a label CSV) in ${seconds.toFixed(1)} s; the archive was read through (every file a document, queued) after ${((Date.parse(job.updatedAt) - start) / 1000).toFixed(1)} s; every file ready with its CSV label.`,
    ],
  };
}

/**
 * The pipeline: the same bytes through the worker's steps and nothing else (extract, chunk, index), `inFlight`
 * documents at once, on a fresh index in a temp directory.
 */
async function ingestPipeline(files: readonly CorpusFile[], inFlight: number): Promise<Ingestion & { chunks: number }> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-ingestion-pipeline-'));
  const index = await LanceKnowledgeIndex.open(directory);
  const extractor = new DocumentTextExtractor();
  let chunks = 0;
  const commitsBefore = groupCommitStats.commits;
  try {
    const start = performance.now();
    await mapLimited(files, inFlight, async (file, i) => {
      const ref: DocumentRef = {
        agentId: '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10',
        environment: 'production',
        knowledgeBaseId: '7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f',
        documentId: `pipeline-${i}`,
      };
      const { text } = await extractor.extract(file.bytes, { fileName: file.fileName, contentType: 'text/plain' });
      const pieces = chunkText(text, { size: CHUNK_SIZE, overlap: CHUNK_OVERLAP });
      chunks += pieces.length;
      await index.replaceDocument(
        ref,
        pieces.map((piece, position) => ({
          ...ref,
          chunkId: chunkId(ref.documentId, position, piece),
          s3Key: `pipeline/${file.fileName}`,
          position,
          text: piece,
          label1: 'source:pipeline',
          label2: null,
          svc_internal_meta1: null,
          svc_internal_meta2: null,
          svc_internal_meta3: null,
          svc_internal_meta4: null,
        })),
      );
    });
    const seconds = (performance.now() - start) / 1000;
    const commits = groupCommitStats.commits - commitsBefore;
    return {
      docsPerSecond: files.length / seconds,
      seconds,
      chunks,
      notes: [
        `Pipeline, ${inFlight === 1 ? 'one document after another' : `${inFlight} documents at once`}: extract → chunkText/chunkId → LanceKnowledgeIndex.replaceDocument, ${chunks} chunks in ${commits} index commits, ${seconds.toFixed(1)} s.`,
      ],
    };
  } finally {
    await index.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Runs bench/ingestion-memory.ts on `file` in a fresh Node process and returns its report. */
function processInChild(file: string, indexDirectory: string): Promise<MemoryReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      // Started as the local runtime starts its worker (lib/local/worker-process.ts): the same flags and environment.
      [...WORKER_EXEC_ARGV, join(__dirname, 'ingestion-memory.ts'), file, indexDirectory],
      {
        cwd: join(__dirname, '..'),
        env: workerEnvironment({ ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (part: Buffer) => {
      stdout += part.toString();
    });
    child.stderr.on('data', (part: Buffer) => {
      stderr += part.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const line = stdout.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) {
        reject(new Error(`ingestion-memory.ts on ${file} ended with ${signal ?? code}:\n${stderr.slice(-2000)}`));
        return;
      }
      resolve(JSON.parse(line) as MemoryReport);
    });
  });
}

type MemoryRun = MemoryReport | { refused: string };

interface LargeFile {
  readonly kind: string;
  /** What the file holds besides its size, for the notes. */
  readonly contents: string;
  readonly run: MemoryRun;
}

/** Runs `file` in a child; the pipeline's refusal (a ProcessingError) instead of a report when it refuses the file. */
async function memoryRun(file: string, indexDirectory: string): Promise<MemoryRun> {
  return processInChild(file, indexDirectory).catch((error: Error) => {
    const refusal = /ProcessingError: ([^\n]*)/.exec(error.message);
    if (!refusal) throw error;
    return { refused: refusal[1] };
  });
}

/** The 1 KB run's report, and those of a text, a PDF and a DOCX of LARGE_BYTES each. */
async function peakMemory(): Promise<{ small: MemoryReport; large: LargeFile[] }> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-ingestion-memory-'));
  try {
    const smallFile = join(directory, 'small.txt');
    writeLargeDocument(smallFile, SMALL_BYTES);
    const small = await processInChild(smallFile, join(directory, 'index-small'));
    const millions = (characters: number) => `${(characters / 1e6).toFixed(1)} million characters`;
    /** Each kind of file: its name, and how to write it (what it holds, for the notes). */
    const kinds: { kind: string; name: string; write(path: string): Promise<string> }[] = [
      {
        kind: 'text',
        name: 'large.txt',
        write: async (path) => {
          writeLargeDocument(path, LARGE_BYTES);
          return 'English-like text';
        },
      },
      {
        kind: 'PDF',
        name: 'large.pdf',
        write: async (path) =>
          `${PDF_TEXT_PAGES} pages of text (${millions((await writeLargePdf(path, LARGE_BYTES)).textCharacters)}, the page cap) and one embedded image for the rest`,
      },
      {
        kind: 'DOCX',
        name: 'large.docx',
        write: async (path) =>
          `${DOCX_PARAGRAPHS} paragraphs (${millions((await writeLargeDocx(path, LARGE_BYTES)).textCharacters)}, under the 8 MiB XML cap) and one embedded image for the rest`,
      },
    ];
    const large: LargeFile[] = [];
    for (const { kind, name, write } of kinds) {
      const path = join(directory, name);
      const contents = await write(path);
      large.push({ kind, contents, run: await memoryRun(path, join(directory, `index-${kind}`)) });
      rmSync(path);
    }
    return { small, large };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

type Part = 'http' | 'zip' | 'memory';
const PARTS: readonly Part[] = ['http', 'zip', 'memory'];

/** The parts BENCH_INGEST_PARTS names (every part when unset); the pipeline at 50 at once always runs. */
function selectedParts(): ReadonlySet<Part> {
  const raw = process.env.BENCH_INGEST_PARTS;
  if (raw === undefined || raw.trim() === '') return new Set(PARTS);
  const names = raw.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !(PARTS as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new Error(`BENCH_INGEST_PARTS: unknown ${unknown.join(', ')}; known: ${PARTS.join(', ')}`);
  return new Set(names as Part[]);
}

async function run(): Promise<BenchSection> {
  const parts = selectedParts();
  const all = parts.size === PARTS.length;
  const count = documentCount();
  const files = smallDocuments(count);
  const totalBytes = files.reduce((sum, file) => sum + file.bytes.length, 0);
  const notes: string[] = [
    `${count} generated English-like text documents, ${(totalBytes / count / 1024).toFixed(2)} KB on average (1–3 KB), ${(totalBytes / MB).toFixed(2)} MB in all; load average before: ${loadavg()[0].toFixed(2)}.`,
  ];

  // The pipelines first, alone on the machine; then the runtime as `npm start` runs it: its router in this process,
  // its engines and its worker in processes of their own.
  const oneByOne = all ? await ingestPipeline(files, 1) : undefined;
  const grouped = await ingestPipeline(files, PIPELINE_IN_FLIGHT);
  notes.push(
    ...(oneByOne?.notes ?? []),
    ...grouped.notes,
    'No embedding: the local index is lexical unless a model is configured.',
  );

  let http: Ingestion | undefined;
  let zip: Ingestion | undefined;
  if (parts.has('http') || parts.has('zip')) {
    ({ http, zip } = await throughRuntime(files, parts));
    notes.push(
      ...(http?.notes ?? []),
      ...(zip?.notes ?? []),
      `${http && zip ? 'Both' : 'It ran'} through the local runtime as \`npm start\` runs it: in this process its router (and the ZIP’s few requests and the reads of the documents’ status), in a process of its own the HTTP uploads’ client, in another its engines (dynalite, s3rver, fauxqs), in a fourth its worker (the queue worker, LanceDB);${http && zip ? ' the ZIP ran second, into the same index, which then held the first run’s chunks too.' : ` only the parts BENCH_INGEST_PARTS names ran (${[...parts].join(', ')}).`} The end is the \`updatedAt\` of the last document to turn \`ready\`.`,
    );
  }

  const memoryRows = parts.has('memory') ? await peakMemoryRows(notes) : [];

  const pipeline = 'the pipeline: extract + chunk + index in one process, as many at once as the worker';
  const share = 'higher is better; the ratio is the share of the pipeline the service keeps';
  const rows: BenchRow[] = [
    {
      name: `pipeline, ${count} documents, ${PIPELINE_IN_FLIGHT} at once (group commit)`,
      value: grouped.docsPerSecond,
      unit: 'docs/s',
      ...(oneByOne
        ? {
            baseline: oneByOne.docsPerSecond,
            baselineName: 'the same, one document after another: one index commit a document',
          }
        : { baseline: 1, baselineName: 'not run (BENCH_INGEST_PARTS)' }),
      reading: 'higher is better (issue 20: goal ≥ 10)',
    },
  ];
  if (http) {
    rows.push({
      name: `HTTP API, ${count} documents, ${UPLOADS_IN_FLIGHT} in flight`,
      value: http.docsPerSecond,
      unit: 'docs/s',
      baseline: grouped.docsPerSecond,
      baselineName: pipeline,
      reading: share,
      goal: [
        { measure: 'HTTP ingestion, 1,000 documents', of: 'value', atLeast: 150, source: 'issue 40' },
        { measure: 'HTTP ingestion, 1,000 documents / the pipeline', of: 'ratio', atLeast: 0.15, source: 'issue 40' },
      ],
    });
  }
  if (zip) {
    rows.push({
      name: `one ZIP of the same ${count} documents + label CSV`,
      value: zip.docsPerSecond,
      unit: 'docs/s',
      baseline: grouped.docsPerSecond,
      baselineName: pipeline,
      reading: share,
      goal: { measure: 'ZIP ingestion / the pipeline', of: 'ratio', atLeast: 0.5, source: 'issue 40' },
    });
  }
  if (zip && http) {
    rows.push({
      name: `one ZIP of the same ${count} documents + label CSV`,
      value: zip.docsPerSecond,
      unit: 'docs/s',
      baseline: http.docsPerSecond,
      baselineName: 'the same documents uploaded one by one over HTTP',
      reading: 'higher is better (issue 20: goal ≥ 2)',
    });
  }
  rows.push(...memoryRows);
  notes.push(loadAverageAfter());
  return { title: 'Ingestion (local runtime)', notes, rows };
}

/** The HTTP and ZIP parts, through one local runtime started for them. */
async function throughRuntime(
  files: readonly CorpusFile[],
  parts: ReadonlySet<Part>,
): Promise<{ http?: Ingestion; zip?: Ingestion }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-ingestion-runtime-'));
  const runtime = await startLocalRuntime({
    port: 0,
    dataDir,
    devTokens: TOKEN,
    log: () => {},
    worker: 'process',
    engines: 'process',
  });
  let http: Ingestion | undefined;
  let zip: Ingestion | undefined;
  try {
    const call = apiClient(runtime.url, TOKEN, REQUEST_TIMEOUT_MS);
    if (parts.has('http')) {
      http = await ingestOneByOne(call, runtime, files);
      // Leftover messages (S3 events of objects already processed) must not run during the ZIP's measure.
      await workerIdle(runtime, 30_000);
    }
    if (parts.has('zip')) zip = await ingestZip(call, runtime, files);
  } finally {
    await runtime.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { http, zip };
}

/** The peak memory rows (and their notes, pushed onto `notes`): the 50 MB text, PDF and DOCX against the 1 KB text. */
async function peakMemoryRows(notes: string[]): Promise<BenchRow[]> {
  const { small, large } = await peakMemory();
  const rss = (report: MemoryReport) => report.peakRssBytes / MB;
  const memoryRows: BenchRow[] = [];
  notes.push(
    `Peak memory: one document processed in a child process (read, extract in the extraction child, chunk, index, BM25 refresh), its peak RSS plus the largest of its extraction child's (VmHWM, read every 20 ms); the 1 KB text's run peaked at ${rss(small).toFixed(0)} MB (the worker ${(small.ownPeakBytes / MB).toFixed(0)} MB, its extraction child ${(small.extractionPeakBytes / MB).toFixed(0)} MB).`,
  );
  for (const { kind, contents, run } of large) {
    const size = `${(LARGE_BYTES / 1e6).toFixed(0)} MB ${kind}`;
    if ('refused' in run) {
      // Not a figure: the pipeline's own limits stop the file, which is what a user of the service meets.
      notes.push(`${size} (${contents}): refused by the pipeline ("${run.refused}"), so its peak is not measured.`);
      continue;
    }
    notes.push(
      `${size} (${contents}): ${run.chunks} chunks; planChunks (read, extract, chunk) ${(run.buildChunksMs / 1000).toFixed(1)} s, index write ${(run.replaceDocumentMs / 1000).toFixed(1)} s (in parts of ${CHUNKS_PER_PART} chunks under a staged commit past that), BM25 index refresh ${(run.refreshIndexMs / 1000).toFixed(1)} s; peak RSS from ${run.peakRssSource}: the worker ${(run.ownPeakBytes / MB).toFixed(0)} MB, its extraction child ${(run.extractionPeakBytes / MB).toFixed(0)} MB.`,
    );
    memoryRows.push(
      {
        name: `worker peak RSS, one ${size}`,
        value: rss(run),
        unit: 'MB',
        baseline: rss(small),
        baselineName: 'the same child process, one 1 KB text',
        reading: 'lower is better (issue 20: within 1,536 MB, the function has 2,048 MB)',
      },
      {
        name: `worker peak RSS above the 1 KB run, per MB of input, ${size}`,
        value: (rss(run) - rss(small)) / (run.inputBytes / MB),
        unit: 'MB/MB',
        baseline: 1,
        baselineName: 'one copy of the input',
        reading: 'lower is better: copies of the input held at the peak',
        goal: { measure: `worker peak per MB of input, ${size}`, of: 'value', atMost: 3, source: 'issue 40' },
      },
    );
  }

  return memoryRows;
}

export const ingestionBenchmark: Benchmark = { id: 'ingestion', run };

/**
 * `npm run bench -- ingestion-memory`: the peak memory part of `ingestion` alone (no local runtime, no HTTP), for
 * work on the worker's memory; a full `npm run bench` runs it as part of `ingestion`, so it is not registered twice.
 */
export const ingestionMemoryBenchmark: Benchmark = {
  id: 'ingestion-memory',
  run: async () => {
    const notes: string[] = [`Load average before: ${loadavg()[0].toFixed(2)}.`];
    const rows = await peakMemoryRows(notes);
    notes.push(loadAverageAfter());
    return { title: 'Ingestion: worker peak memory', notes, rows };
  },
};
