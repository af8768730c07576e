/**
 * Child process of the ingestion benchmark (bench/ingestion.ts): what the processing worker does with one document,
 * alone in a fresh process, so that its peak RSS (with its extraction child's) is the worker's. `node --import tsx bench/ingestion-memory.ts
 * <file> <index directory>` reads the file as the blob store would hand it over, runs the worker's `planChunks`
 * (real extractor and chunker), indexes the chunks in a LanceDB index on `<index directory>` as processing does (whole,
 * or in parts of CHUNKS_PER_PART under a staged commit past that) and folds them into the BM25 index, as the worker's
 * index does a second after a write. Prints one JSON line with the peak RSS.
 */
import { readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { processingContainer } from '#composition/processing-container';
import type { DocumentRecord } from '#core/knowledge/document';
import { CHUNKS_PER_PART, type ProcessingDeps, planChunks } from '#core/processing/process-document';
import type { BlobStore } from '#ports/services';

export interface MemoryReport {
  readonly inputBytes: number;
  readonly chunks: number;
  readonly buildChunksMs: number;
  readonly replaceDocumentMs: number;
  readonly refreshIndexMs: number;
  readonly peakRssBytes: number;
  /** The two parts of peakRssBytes: this process's own high-water mark, and its extraction child's. */
  readonly ownPeakBytes: number;
  readonly extractionPeakBytes: number;
  /** Where the peak comes from: the kernel's high-water mark of this process's memory, or getrusage. */
  readonly peakRssSource: 'VmHWM' | 'maxRSS';
}

/** The kernel's high-water mark of a process's resident memory (VmHWM), in bytes; 0 when it cannot be read. */
function highWaterMark(pid: number | 'self'): number {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0; // gone meanwhile
  }
}

/**
 * The largest high-water mark of this process's children (the text extraction child) so far, read every 20 ms while
 * they live: the extractor replaces a child that kept a large heap after a big file, so the one alive at the end
 * need not be the one that peaked.
 */
function watchChildren(): { peak(): number; stop(): void } {
  let peak = 0;
  const read = () => {
    try {
      const children = readFileSync(`/proc/self/task/${process.pid}/children`, 'utf8').trim().split(/\s+/);
      for (const pid of children.filter(Boolean)) peak = Math.max(peak, highWaterMark(Number(pid)));
    } catch {
      // not Linux
    }
  };
  const timer = setInterval(read, 20);
  return {
    peak: () => {
      read();
      return peak;
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * Peak RSS of the worker: this process's own high-water mark plus the largest of its text extraction child's (VmHWM
 * on Linux; their sum bounds the worker's peak from above, as in Lambda both count). getrusage's maxRSS
 * (process.resourceUsage) is no use in a child: Linux carries the parent's peak over through fork and exec, so a
 * small child would report its parent's.
 */
function peakRss(
  childPeak: number,
): Pick<MemoryReport, 'peakRssBytes' | 'peakRssSource' | 'ownPeakBytes' | 'extractionPeakBytes'> {
  const own = highWaterMark('self');
  if (own > 0) {
    return { peakRssBytes: own + childPeak, peakRssSource: 'VmHWM', ownPeakBytes: own, extractionPeakBytes: childPeak };
  }
  const maxRss = process.resourceUsage().maxRSS * 1024;
  return { peakRssBytes: maxRss, peakRssSource: 'maxRSS', ownPeakBytes: maxRss, extractionPeakBytes: 0 };
}

async function main(): Promise<void> {
  const [file, indexDirectory] = process.argv.slice(2);
  if (!file || !indexDirectory) throw new Error('usage: ingestion-memory.ts <file> <index directory>');
  const size = statSync(file).size;
  const notUsed = async (): Promise<never> => {
    throw new Error('planChunks only reads');
  };
  const blobs: BlobStore = {
    head: async () => ({ size, contentType: 'text/plain' }),
    get: async () => readFileSync(file),
    presignPut: notUsed,
    put: notUsed,
    markCompleted: notUsed,
    delete: notUsed,
  };
  // planChunks reads only these four; the rest of ProcessingDeps is the worker's plumbing around it.
  const deps = {
    blobs,
    extractor: processingContainer.extractor,
    embedder: null,
    settings: processingContainer.settings,
  } as Pick<ProcessingDeps, 'blobs' | 'extractor' | 'embedder' | 'settings'> as ProcessingDeps;
  const now = new Date().toISOString();
  const doc: DocumentRecord = {
    organizationId: 'bench-org',
    agentId: '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10',
    environment: 'production',
    knowledgeBaseId: '7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f',
    documentId: '5f1d2c9a-7b10-4f0e-9a59-0b5a1a9e8c1f',
    customDocumentId: null,
    s3Key: `bench/${basename(file)}`,
    objectKey: `bench/${basename(file)}`,
    fileName: basename(file),
    status: 'uploaded',
    uploadId: '2c3b4a5d-6e7f-4d0f-8a1d-7d0f3c2e5b4a',
    reservedUntil: null,
    contentType: 'text/plain',
    fileSize: size,
    label1: 'source:bench',
    label2: null,
    customMeta1: null,
    customMeta2: null,
    customMeta3: null,
    customMeta4: null,
    createdAt: now,
    updatedAt: now,
    error: null,
  };
  const index = await LanceKnowledgeIndex.open(indexDirectory);
  const children = watchChildren();
  const started = performance.now();
  const plan = await planChunks(deps, doc);
  const built = performance.now();
  if (plan.count > CHUNKS_PER_PART) await index.replaceDocumentInParts(doc, plan.parts(CHUNKS_PER_PART));
  else for await (const chunks of plan.parts(plan.count)) await index.replaceDocument(doc, chunks);
  const replaced = performance.now();
  await index.refreshIndex();
  const refreshed = performance.now();
  await index.close();
  const report: MemoryReport = {
    inputBytes: size,
    chunks: plan.count,
    buildChunksMs: built - started,
    replaceDocumentMs: replaced - built,
    refreshIndexMs: refreshed - replaced,
    ...peakRss(children.peak()),
  };
  children.stop();
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
