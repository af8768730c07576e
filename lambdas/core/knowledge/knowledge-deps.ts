/**
 * What the document use cases of the Knowledge API need (core/knowledge/*.ts, one use case a file), and how a
 * request names a document.
 */

import type { TenancyDeps } from '#core/tenancy/tenancy';
import type { OperationalMetrics } from '#ports/metrics';
import type { BlobStore, Clock, IdGenerator, ProcessingQueue } from '#ports/services';
import type { DocumentStore, UploadSessionStore } from '#ports/stores';
import type { ZipJobStore } from '#ports/zip-jobs';

export interface KnowledgeDeps extends TenancyDeps {
  readonly documents: DocumentStore;
  readonly zipJobs: ZipJobStore;
  readonly uploads: UploadSessionStore;
  readonly blobs: BlobStore;
  readonly queue: ProcessingQueue;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly settings: UploadSettings;
  /** DocumentsUploaded (ports/metrics.ts). */
  readonly metrics: OperationalMetrics;
}

export interface UploadSettings {
  /** Lifetime of a pre-signed upload URL. */
  readonly uploadUrlTtlSeconds: number;
  /** How long after upload-link an upload can still be completed (at least the URL's lifetime). */
  readonly uploadSessionTtlSeconds: number;
  /** Largest document processed: a larger declared `fileSize` is refused at upload-link. */
  readonly maxFileBytes: number;
  /** Largest ZIP archive imported: a larger declared `fileSize` is refused at upload-link. */
  readonly maxArchiveBytes: number;
}

export interface DocumentIdentifier {
  readonly s3Key?: string;
  readonly customDocumentId?: string;
}
