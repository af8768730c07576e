/**
 * ZIP import jobs. Primary course: upload-complete of a `.zip` records the job (`uploaded`) and queues
 * `process-zip`; the worker reads the archive entry by entry, turns each accepted file into a document of its own
 * (labels from the request, or from the archive's CSV), and queues its processing. The job's file list keeps each
 * file's outcome; a file's status is read live from its document, so it is always true.
 * Redelivery is safe: documentIds are derived from (zipJobId, path), so a second run finds what the first created,
 * and goes on after the files the first one listed; a copy of the message after the archive was read does nothing.
 */
import { createHash } from 'node:crypto';
import { NotFoundError } from '#core/errors';
import { contentTypeFor } from '#core/knowledge/content-types';
import { type DatasetRef, type DocumentRecord, reservationRecord } from '#core/knowledge/document';
import { CUSTOM_META_FIELDS, type CustomMetaField, fileNameSafetyViolations } from '#core/knowledge/fields';
import { documentS3Key } from '#core/knowledge/object-keys';
import { pageTokens } from '#core/paging/pages';
import { type Caller, ownsRecord, requireKnowledgeBase, type TenancyDeps } from '#core/tenancy/tenancy';
import { type PublishDeps, publishZipImportIfCompleted } from '#core/webhooks/publish';
import { METRIC, type OperationalMetrics } from '#ports/metrics';
import {
  type ArchiveStore,
  type Clock,
  type DownloadedObject,
  ObjectTooLargeError,
  type ProcessingMessage,
  type ProcessingQueue,
} from '#ports/services';
import type { DocumentStore } from '#ports/stores';
import type {
  ArchiveImporter,
  OpenArchive,
  PlannedFile,
  ZipJobFile,
  ZipJobRecord,
  ZipJobStatus,
  ZipJobStore,
} from '#ports/zip-jobs';
import type { ProcessingOutcome } from './process-document';

export interface ZipImportDeps extends PublishDeps {
  readonly documents: DocumentStore;
  readonly blobs: ArchiveStore;
  readonly queue: ProcessingQueue;
  readonly clock: Clock;
  readonly zipJobs: ZipJobStore;
  readonly archives: ArchiveImporter;
  /** ZipFilesImported, once per archive read through (ports/metrics.ts). */
  readonly metrics: OperationalMetrics;
}

type CustomMetaValues = Record<CustomMetaField, string | null>;

/** The custom metadata of a job or a listed file; a field absent from an older record is null. */
function customMetaOf(record: Partial<Record<CustomMetaField, string | null>>): CustomMetaValues {
  return Object.fromEntries(CUSTOM_META_FIELDS.map((field) => [field, record[field] ?? null])) as CustomMetaValues;
}

const NO_CUSTOM_META = customMetaOf({});

/** A UUID-shaped id fixed by the job and the path, so re-running an import creates nothing twice. */
export function zipDocumentId(zipJobId: string, fileName: string): string {
  const hex = createHash('sha256').update(`${zipJobId}\n${fileName}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Whether the job's archive has been read through (every file listed), which happens once per job. */
export function wasRead(job: ZipJobRecord | undefined): boolean {
  return typeof job?.fileCount === 'number';
}

export async function importZip(
  deps: ZipImportDeps,
  message: DatasetRef & { zipJobId: string; uploadId: string },
): Promise<ProcessingOutcome> {
  const job = await deps.zipJobs.get(message.zipJobId);
  if (!job || job.status === 'completed' || job.status === 'failed') return 'skipped';
  // Read through already: this is a copy of the message (SQS delivers at least once, and a worker may die between
  // the import and deleting the message). The job stays as it is; only the archive may be left to delete.
  if (wasRead(job)) {
    await deps.blobs.delete([job.s3Key]);
    return 'skipped';
  }
  const now = () => deps.clock.now().toISOString();
  await deps.zipJobs.setStatus(job.zipJobId, 'processing', null, now());
  const fail = async (error: { code: string; message: string }) => {
    await deps.zipJobs.setStatus(job.zipJobId, 'failed', error, now());
    await deps.blobs.delete([job.s3Key]);
    return 'failed' as const;
  };
  const gone = async () => {
    // A copy of this message running at the same time may have finished the import and deleted the archive.
    if (wasRead(await deps.zipJobs.get(job.zipJobId))) return 'skipped' as const;
    return fail({ code: 'INVALID_ARCHIVE', message: 'The archive is gone' });
  };
  // The size first, from the object's metadata, so an archive over the limit costs no read at all.
  const { maxArchiveBytes } = deps.archives;
  const head = await deps.blobs.head(job.s3Key);
  if (!head) return gone();
  if (head.size > maxArchiveBytes) return fail(archiveTooLarge(head.size, maxArchiveBytes));
  let copy: DownloadedObject | undefined;
  try {
    copy = await deps.blobs.download(job.s3Key, maxArchiveBytes);
  } catch (error) {
    if (error instanceof ObjectTooLargeError) return fail(archiveTooLarge(undefined, maxArchiveBytes));
    throw error;
  }
  if (!copy) return gone();
  const archive = deps.archives.open(copy.path);
  try {
    return await importArchive(deps, job, archive, now, fail, job.status === 'processing');
  } finally {
    archive.close();
    await copy.remove();
  }
}

function archiveTooLarge(size: number | undefined, maxArchiveBytes: number) {
  const actual = size === undefined ? 'larger than that' : `${size} bytes`;
  return {
    code: 'ARCHIVE_TOO_LARGE',
    message: `The archive is ${actual}; the limit is ${maxArchiveBytes} bytes. Split it into smaller archives.`,
  };
}

async function importArchive(
  deps: ZipImportDeps,
  job: ZipJobRecord,
  archive: OpenArchive,
  now: () => string,
  fail: (error: { code: string; message: string }) => Promise<'failed'>,
  /** An earlier attempt started and did not finish (the job was `processing` when this one read it). */
  cutOff: boolean,
): Promise<ProcessingOutcome> {
  const plan = await archive.plan({ label1: job.label1, label2: job.label2, ...customMetaOf(job) });
  // A read that stopped early may not have reached the label CSV: importing part of the archive with possibly
  // wrong labels would be worse than importing nothing.
  if (!plan.ok) return fail(plan.error);
  // An earlier attempt cut off (a worker killed, a Lambda timed out) listed a first part of the files: each entry is
  // written in archive order, after its document was created and its processing queued. The plan of the same
  // archive is the same, so this attempt goes on from there, and an import cut off again and again still gets
  // through instead of starting over each time.
  const listed = await deps.zipJobs.listFiles(job.zipJobId);
  const resumeAt = listed.every((entry, i) => entry.fileName === plan.files[i]?.fileName) ? listed.length : 0;
  // Files that became documents, those of the cut-off attempt included: counted once, when the archive is read.
  let imported = listed.slice(0, resumeAt).filter((entry) => entry.error === null).length;
  let watchdogRetried = (job.watchdogRetries ?? 0) > 0;
  // An attempt after one that was cut off (the job was already `processing`, or some of it is listed) goes on one file
  // at a time: each file it stores is recorded at once, so attempts cut off again and again still each get further,
  // where a window of ZIP_IMPORT_BATCH might never be finished by any of them.
  const concurrency = cutOff || resumeAt > 0 ? 1 : ZIP_IMPORT_BATCH;
  for (let start = resumeAt; start < plan.files.length; ) {
    const window = importWindow(plan.files, start, concurrency);
    const together = concurrency > 1 ? await storeTogether(deps, job, window, archive, now()) : undefined;
    // Every file of the window settles before a failure is thrown: no store goes on behind the next attempt.
    const settled = await Promise.allSettled(
      window.map((file): Promise<Stored> | Stored => {
        const done = together?.get(file);
        if (done) return done;
        return 'error' in file
          ? recordRefused(deps, job, file, now())
          : createDocument(deps, job, file, archive, now());
      }),
    );
    const stored = settled.map((outcome) => {
      if (outcome.status === 'rejected') throw outcome.reason;
      return outcome.value;
    });
    // The window's processing queued, then its files listed: a cut-off attempt leaves a prefix of the archive listed,
    // each listed file's processing queued.
    await deps.queue.sendAll(stored.flatMap(({ message }) => (message ? [message] : [])));
    await deps.zipJobs.putFiles(
      job.zipJobId,
      start + 1,
      stored.map(({ entry }) => entry),
    );
    imported += stored.filter(({ entry }) => entry.error === null).length;
    start += window.length;
    // The watchdog re-queued this job after an attempt was cut off: this one got further, so the job is not stuck,
    // and its retries start over (one write per attempt, only after a retry).
    if (watchdogRetried) {
      await deps.zipJobs.recordProgress(job.zipJobId, now());
      watchdogRetried = false;
    }
  }
  // The archive is read; the job completes when every document has finished (see zipJobView).
  await deps.zipJobs.markRead(job.zipJobId, plan.files.length, plan.warnings, now());
  deps.metrics.count(METRIC.zipFilesImported, imported);
  await deps.blobs.delete([job.s3Key]);
  // Every document may have finished already (or none was made: every file refused).
  await publishZipImportIfCompleted(deps, job.zipJobId);
  return 'ready';
}

/**
 * Files of an archive stored at once by a first attempt: their documents reserved in one write, their objects stored
 * side by side, then made `uploaded` in one write with the dataset's counters (DynamoDB's 100 actions a transaction,
 * less the counters), and queued. An attempt after one cut off goes one file at a time.
 */
export const ZIP_IMPORT_BATCH = 99;
/** At most this many bytes of the files stored at once (each is held inflated while it is stored). */
export const ZIP_IMPORT_WINDOW_BYTES = 64 * 1024 * 1024;

/**
 * The files from `start` stored together: up to ZIP_IMPORT_BATCH, and no more than ZIP_IMPORT_WINDOW_BYTES of
 * them (a larger file goes alone), so an import holds a bounded amount of content whatever the archive.
 */
function importWindow(files: readonly PlannedFile[], start: number, concurrency: number): PlannedFile[] {
  const window: PlannedFile[] = [];
  let bytes = 0;
  for (const file of files.slice(start, start + concurrency)) {
    const size = 'error' in file ? 0 : file.size;
    if (window.length > 0 && bytes + size > ZIP_IMPORT_WINDOW_BYTES) break;
    window.push(file);
    bytes += size;
  }
  return window;
}

/** A file of the archive as stored: its entry in the job, and the processing message of its document, if it has one. */
interface Stored {
  readonly entry: ZipJobFile;
  readonly message?: ProcessingMessage;
}

type AcceptedFile = Extract<PlannedFile, { baseName: string }>;

/** What completing an accepted file's reservation writes: its object, and its labels and custom metadata. */
function completionOf(job: ZipJobRecord, file: AcceptedFile, s3Key: string, contentType: string, now: string) {
  return {
    content: {
      uploadId: job.zipJobId,
      objectKey: s3Key,
      fileName: file.baseName,
      contentType,
      fileSize: file.size,
      updatedAt: now,
    },
    metadata: { label1: file.label1, label2: file.label2, ...customMetaOf(file) },
  };
}

/**
 * The accepted files of a window stored together, as createDocument stores each of them when its id is free: all
 * reserved in one write, their objects stored, all made `uploaded` in one write. Undefined when that cannot be done
 * (an id taken, by a custom document id in use or an earlier attempt's document, or a file named twice): the files
 * then go one by one, which finds what holds each id and goes on from there. A refused file always goes alone.
 */
async function storeTogether(
  deps: ZipImportDeps,
  job: ZipJobRecord,
  window: readonly PlannedFile[],
  archive: OpenArchive,
  now: string,
): Promise<Map<PlannedFile, Stored> | undefined> {
  const files = window.filter((file): file is AcceptedFile => !('error' in file));
  if (files.length < 2) return undefined;
  const planned = files.map((file) => {
    const documentId = file.customDocumentId ?? zipDocumentId(job.zipJobId, file.fileName);
    return { file, documentId, ...reservationFor(job, documentId, file.customDocumentId, file.baseName, now) };
  });
  if (new Set(planned.map((p) => p.documentId)).size < planned.length) return undefined;
  const reserved = await deps.documents.reserveAll(
    planned.map((p) => p.record),
    now,
  );
  if (!reserved) return undefined;
  // Every object is stored (or has failed) before a failure is thrown: no store goes on behind the next attempt.
  const puts = await Promise.allSettled(
    planned.map(async (p) => deps.blobs.put(p.s3Key, await archive.read(p.file.fileName), p.contentType)),
  );
  for (const put of puts) if (put.status === 'rejected') throw put.reason;
  const ref: DatasetRef = { agentId: job.agentId, environment: job.environment, knowledgeBaseId: job.knowledgeBaseId };
  const completed = await deps.documents.completeReservations(
    ref,
    planned.map(({ file, documentId, s3Key, contentType }) => ({
      documentId,
      ...completionOf(job, file, s3Key, contentType, now),
    })),
    now,
  );
  if (!completed) return undefined;
  return new Map(
    planned.map(({ file, documentId, s3Key }): [PlannedFile, Stored] => [
      file,
      {
        entry: {
          fileName: file.fileName,
          documentId,
          s3Key,
          label1: file.label1,
          label2: file.label2,
          ...customMetaOf(file),
          error: null,
        },
        message: { kind: 'process-document', ...ref, documentId, uploadId: job.zipJobId },
      },
    ]),
  );
}

/**
 * A file the archive rules refused becomes a `failed` document with the refusal as its error and no content, so the
 * dataset's counts, its document list and the job's count of failures all show it (issue 38). Found again by its
 * id on a later attempt. Retry refuses it (DOCUMENT_NOT_RETRYABLE): there is nothing stored to process again.
 */
async function recordRefused(
  deps: ZipImportDeps,
  job: ZipJobRecord,
  file: Extract<PlannedFile, { error: unknown }>,
  now: string,
): Promise<Stored> {
  const refused = {
    fileName: file.fileName,
    documentId: null,
    s3Key: null,
    label1: null,
    label2: null,
    ...NO_CUSTOM_META,
    error: file.error,
  };
  const documentId = zipDocumentId(job.zipJobId, file.fileName);
  const fileName = refusedFileName(file.fileName);
  const { ref, s3Key, contentType, existing } = await reserveFor(deps, job, documentId, null, fileName, now, true);
  // The id is derived from (job, path): taken by something else only if a caller chose it as a customDocumentId.
  if (existing && existing.uploadId !== job.zipJobId) return { entry: refused };
  let uploaded = existing?.status === 'uploaded';
  if (!existing || existing.status === 'reserved') {
    uploaded = await deps.documents.completeReservation(
      ref,
      documentId,
      { uploadId: job.zipJobId, objectKey: s3Key, fileName, contentType, fileSize: 0, updatedAt: now },
      { label1: null, label2: null, ...NO_CUSTOM_META },
      now,
    );
  }
  if (uploaded) {
    await deps.documents.setStatus(ref, documentId, job.zipJobId, 'failed', file.error, now);
  }
  return { entry: { ...refused, documentId, s3Key } };
}

/**
 * The document of one file of the job reserved under `documentId` (`refused`: with the mark of a file the archive
 * rules refused), or what already holds that id: the same file's document from an attempt cut off, or another
 * upload's.
 */
async function reserveFor(
  deps: ZipImportDeps,
  job: ZipJobRecord,
  documentId: string,
  customDocumentId: string | null,
  fileName: string,
  now: string,
  refused = false,
): Promise<{ ref: DatasetRef; s3Key: string; contentType: string; existing?: DocumentRecord }> {
  const { ref, s3Key, contentType, record } = reservationFor(job, documentId, customDocumentId, fileName, now, refused);
  const reserved = await deps.documents.reserve(record, now);
  return { ref, s3Key, contentType, existing: reserved ? undefined : await deps.documents.get(ref, documentId) };
}

/** The reservation of one file's document, and where its object goes. */
function reservationFor(
  job: ZipJobRecord,
  documentId: string,
  customDocumentId: string | null,
  fileName: string,
  now: string,
  refused = false,
) {
  const ref: DatasetRef = { agentId: job.agentId, environment: job.environment, knowledgeBaseId: job.knowledgeBaseId };
  const s3Key = documentS3Key(ref, documentId, fileName);
  const contentType = contentTypeFor(fileName);
  const record = reservationRecord({
    ...ref,
    organizationId: job.organizationId,
    documentId,
    customDocumentId,
    s3Key,
    fileName,
    uploadId: job.zipJobId,
    reservedUntil: now,
    contentType,
    createdAt: now,
    zipJobId: job.zipJobId,
    ...(refused ? { refusedByImport: true as const } : {}),
  });
  return { ref, s3Key, contentType, record };
}

/** The refused file's name as a document's: its last path segment when that is a safe name, else `refused-file`. */
function refusedFileName(path: string): string {
  const last = path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
  return last !== '' && fileNameSafetyViolations(last).length === 0 ? last : 'refused-file';
}

/** The file's document, created (or found, from an attempt cut off) with its object; not yet queued. */
async function createDocument(
  deps: ZipImportDeps,
  job: ZipJobRecord,
  file: AcceptedFile,
  archive: OpenArchive,
  now: string,
): Promise<Stored> {
  const documentId = file.customDocumentId ?? zipDocumentId(job.zipJobId, file.fileName);
  const { ref, s3Key, contentType, existing } = await reserveFor(
    deps,
    job,
    documentId,
    file.customDocumentId,
    file.baseName,
    now,
  );
  const customMeta = customMetaOf(file);
  const outcome = {
    fileName: file.fileName,
    documentId,
    s3Key,
    label1: file.label1,
    label2: file.label2,
    ...customMeta,
  };
  if (existing && existing.uploadId !== job.zipJobId) {
    return recordRefused(
      deps,
      job,
      {
        fileName: file.fileName,
        error: { code: 'DUPLICATE_CUSTOM_DOCUMENT_ID', message: `customDocumentId ${documentId} is already used` },
      },
      now,
    );
  }
  if (!existing || existing.status === 'reserved') {
    await deps.blobs.put(s3Key, await archive.read(file.fileName), contentType);
    const { content, metadata } = completionOf(job, file, s3Key, contentType, now);
    await deps.documents.completeReservation(ref, documentId, content, metadata, now);
  }
  return {
    entry: { ...outcome, error: null },
    message: { kind: 'process-document', ...ref, documentId, uploadId: job.zipJobId },
  };
}

/** GET /knowledge/zip-jobs/:zipJobId: the job with each file's live status. */
export async function zipJobView(
  deps: { zipJobs: ZipJobStore; documents: DocumentStore },
  caller: Caller,
  zipJobId: string,
) {
  const job = await deps.zipJobs.get(zipJobId);
  if (!job || !ownsRecord(caller, job)) {
    throw new NotFoundError('ZIP_JOB_NOT_FOUND', `ZIP import ${zipJobId} was not found`);
  }
  let failedCount = 0;
  const listed = await deps.zipJobs.listFiles(zipJobId);
  // Every file's document in one read of many (BatchGetItem: 100 a call), not a read each.
  const documents = await deps.documents.getMany(
    job,
    listed.flatMap((file) => (file.documentId ? [file.documentId] : [])),
  );
  const files = listed.map((file) => {
    // A refusal of a job imported before refused files became documents, or whose derived id was taken.
    if (!file.documentId) return { ...file, ...customMetaOf(file), status: 'failed' as const };
    const doc = documents.get(file.documentId);
    if (!doc || doc.uploadId !== job.zipJobId) {
      return {
        ...file,
        ...customMetaOf(file),
        status: 'failed' as const,
        error: file.error ?? { code: 'DOCUMENT_REPLACED', message: 'The document was deleted or replaced since' },
      };
    }
    if (doc.status === 'failed') failedCount++;
    return {
      ...file,
      label1: doc.label1,
      label2: doc.label2,
      ...customMetaOf(doc),
      status: doc.status === 'reserved' ? ('uploaded' as const) : doc.status,
      error: doc.error,
    };
  });
  const finished = files.every((f) => f.status === 'ready' || f.status === 'failed');
  return { ...jobSummary(job, finished, failedCount), files };
}

/**
 * What a caller sees of a job besides its files. `completed` is derived: the archive is read through and every
 * document it created has finished (`documentsFinished`), which the store does not record on the job. `failedCount`:
 * the import's documents that are `failed` now (the files the archive rules refused are failed documents too), so a
 * `completed` job says how many of its files did not make it.
 */
function jobSummary(job: ZipJobRecord, documentsFinished: boolean, failedCount: number) {
  const status: ZipJobStatus = job.status !== 'failed' && wasRead(job) && documentsFinished ? 'completed' : job.status;
  return {
    zipJobId: job.zipJobId,
    status,
    failedCount,
    error: job.error,
    warnings: job.warnings ?? [],
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
  };
}

export const DEFAULT_ZIP_JOB_PAGE = 50;

/** `<createdAt>#<zipJobId>` as zipJobPosition writes it. */
const zipJobTokens = pageTokens(
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z#[0-9a-f-]{36}$/,
  'agent, environment or knowledge base',
);

/**
 * GET /knowledge/zip-jobs: the ZIP imports of a knowledge base in one environment, newest first, each with the
 * status GET /knowledge/zip-jobs/:zipJobId answers (read from the store's index of unfinished documents, not from
 * the files) and how many entries its archive had (null until it is read through). The files are GET's.
 */
export async function listZipJobs(
  deps: TenancyDeps & { zipJobs: ZipJobStore; documents: DocumentStore },
  caller: Caller,
  request: DatasetRef & { readonly limit?: number; readonly nextToken?: string },
) {
  const identity = [request.agentId, request.environment, request.knowledgeBaseId];
  const before = request.nextToken === undefined ? undefined : zipJobTokens.decode(request.nextToken, identity);
  await requireKnowledgeBase(deps, caller, request.agentId, request.knowledgeBaseId);
  const ref = { agentId: request.agentId, environment: request.environment, knowledgeBaseId: request.knowledgeBaseId };
  const { jobs, next } = await deps.zipJobs.listOfDataset(ref, {
    limit: request.limit ?? DEFAULT_ZIP_JOB_PAGE,
    ...(before !== undefined ? { before } : {}),
  });
  const data = await Promise.all(
    jobs.map(async (job) => {
      const [finished, failedCount] = await Promise.all([
        wasRead(job) && deps.documents.zipImportFinished(job.zipJobId),
        job.status === 'uploaded' ? 0 : deps.documents.zipImportFailures(job.zipJobId),
      ]);
      return { ...jobSummary(job, finished, failedCount), fileCount: job.fileCount };
    }),
  );
  return { data, count: data.length, nextToken: next === null ? null : zipJobTokens.encode(next, identity) };
}
