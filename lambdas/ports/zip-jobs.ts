/**
 * Ports of ZIP imports (core/processing/zip-job.ts): the store of import jobs and their file lists, and the reader
 * that applies the archive rules. Implementations: adapters/store/dynamodb/zip-job-store.ts,
 * adapters/archive/zip-importer.ts.
 */
import type { DatasetRef } from '#core/knowledge/document';
import type { ZipRequestMetadata } from '#core/processing/zip-entries';

export type ZipJobStatus = 'uploaded' | 'processing' | 'completed' | 'failed';

export interface ZipJobRecord extends DatasetRef {
  readonly zipJobId: string;
  readonly organizationId: string;
  readonly uploadId: string;
  /** Object key of the archive. */
  readonly s3Key: string;
  readonly label1: string | null;
  readonly label2: string | null;
  /** The upload-link's custom metadata, inherited by every file (absent on jobs recorded before it was kept). */
  readonly customMeta1?: string | null;
  readonly customMeta2?: string | null;
  readonly customMeta3?: string | null;
  readonly customMeta4?: string | null;
  readonly status: ZipJobStatus;
  readonly error: { code: string; message: string } | null;
  /** How many entries the archive had; null until it has been read through. */
  readonly fileCount: number | null;
  /** What the archive rules noticed without failing a file (unmatched CSV rows, duplicate rows, …). */
  readonly warnings?: readonly string[];
  /** How often the watchdog re-queued the import. */
  readonly watchdogRetries?: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface ZipJobFile {
  /** Path of the file inside the archive. */
  readonly fileName: string;
  readonly documentId: string | null;
  readonly s3Key: string | null;
  readonly label1: string | null;
  readonly label2: string | null;
  /** Absent on entries listed before custom metadata was kept: read as null. */
  readonly customMeta1?: string | null;
  readonly customMeta2?: string | null;
  readonly customMeta3?: string | null;
  readonly customMeta4?: string | null;
  /**
   * Outcome of the archive step: null when the file was imported (its status is the document's); the refusal's code
   * when the archive rules refused it, which then is a `failed` document with that error (when `documentId` is set).
   */
  readonly error: { code: string; message: string } | null;
}

export interface ZipJobStore {
  /** Records the job unless it exists; returns the stored job either way. */
  create(job: ZipJobRecord): Promise<ZipJobRecord>;
  get(zipJobId: string): Promise<ZipJobRecord | undefined>;
  /** Sets the job's status, unless it is `failed` already (a failed job stays failed). */
  setStatus(zipJobId: string, status: ZipJobStatus, error: ZipJobRecord['error'], updatedAt: string): Promise<void>;
  /** The archive has been read through: its files are all listed. */
  markRead(zipJobId: string, fileCount: number, warnings: readonly string[], updatedAt: string): Promise<void>;
  /** Writes the file entry at `index` (idempotent: the same index is overwritten). */
  putFile(zipJobId: string, index: number, file: ZipJobFile): Promise<void>;
  /** `files` at `firstIndex`, `firstIndex + 1`, …, written together (in no particular order among them). */
  putFiles(zipJobId: string, firstIndex: number, files: readonly ZipJobFile[]): Promise<void>;
  listFiles(zipJobId: string): Promise<ZipJobFile[]>;
  /** Jobs neither read through nor failed whose last change is before `updatedBefore`, oldest first, at most `limit`. */
  listPending(updatedBefore: string, limit: number): Promise<string[]>;
  /** Counts a watchdog retry and restarts the job's clock, only while it is neither read through nor failed. */
  recordWatchdogRetry(zipJobId: string, retries: number, updatedAt: string): Promise<boolean>;
  /**
   * An import attempt listed files: the job's clock restarts and its watchdog retries are forgotten, only while it is
   * neither read through nor failed. An import that keeps getting further is not stuck, however often it is cut off.
   */
  recordProgress(zipJobId: string, updatedAt: string): Promise<void>;
  /** `failed` with this error, only while the job is neither read through nor failed; false otherwise. */
  failUnread(zipJobId: string, error: NonNullable<ZipJobRecord['error']>, updatedAt: string): Promise<boolean>;
  /** Every job of a knowledge base, in all environments (the deletion of the knowledge base reads them). */
  listOfKnowledgeBase(agentId: string, knowledgeBaseId: string): Promise<ZipJobRecord[]>;
  /** Removes the job and its file entries (the job last, so a removal cut off is found again). */
  delete(zipJobId: string): Promise<void>;
  /**
   * The dataset's jobs, newest first (by `createdAt`, then id), before the position `before` when given; `next` is
   * the position the next page starts after (null: no more).
   */
  listOfDataset(
    ref: DatasetRef,
    options: { readonly limit: number; readonly before?: string },
  ): Promise<{ jobs: ZipJobRecord[]; next: string | null }>;
}

/** A job's position in the list: `<createdAt>#<zipJobId>`. */
export function zipJobPosition(job: Pick<ZipJobRecord, 'createdAt' | 'zipJobId'>): string {
  return `${job.createdAt}#${job.zipJobId}`;
}

/** Reads archives and plans their files (labels, custom ids, rejections): the archive rules live behind this port. */
export interface ArchiveImporter {
  /** Largest archive read (bytes): a larger one fails its job before any of it is read. */
  readonly maxArchiveBytes: number;
  /** The archive copied to the local file `path` (a ZIP is read from its end: it needs random access). */
  open(path: string): OpenArchive;
}

export interface OpenArchive {
  /** Reads the whole archive under the limits, keeping no file's content, and plans every file. */
  plan(
    request: ZipRequestMetadata,
  ): Promise<
    | { ok: true; files: PlannedFile[]; warnings: readonly string[] }
    | { ok: false; error: { code: string; message: string }; files: PlannedFile[]; warnings: readonly string[] }
  >;
  /** The content of one accepted file of the plan, inflated again: one file in memory at a time. */
  read(fileName: string): Promise<Buffer>;
  close(): void;
}

export type PlannedFile =
  | {
      readonly fileName: string;
      readonly baseName: string;
      /** Bytes the file inflated to when the archive was planned. */
      readonly size: number;
      readonly label1: string | null;
      readonly label2: string | null;
      readonly customMeta1: string | null;
      readonly customMeta2: string | null;
      readonly customMeta3: string | null;
      readonly customMeta4: string | null;
      readonly customDocumentId: string | null;
    }
  | {
      readonly fileName: string;
      readonly error: { code: string; message: string };
      readonly label1?: null;
      readonly label2?: null;
    };
