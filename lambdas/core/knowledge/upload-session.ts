/** An upload session: what an upload-link promised, kept until upload-complete (or expiry). */
import type { DatasetRef } from './document';
import type { MetadataChanges } from './fields';

export type UploadKind = 'create' | 'update' | 'zip';

export interface UploadCompletion {
  readonly type: 'document' | 'zip_import';
  readonly s3Key: string;
  readonly documentId?: string;
  readonly zipJobId?: string;
  readonly status: 'uploaded';
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface UploadSession extends DatasetRef {
  readonly uploadId: string;
  readonly organizationId: string;
  readonly kind: UploadKind;
  /** The document created or updated; null for a ZIP import. */
  readonly documentId: string | null;
  readonly zipJobId: string | null;
  readonly customDocumentId: string | null;
  readonly s3Key: string;
  /** Object key the pre-signed URL writes to. */
  readonly objectKey: string;
  readonly fileName: string;
  /** The size the caller declared at upload-link (signed into the URL), or null. */
  readonly declaredSize: number | null;
  readonly contentType: string;
  /** Labels and custom metadata to apply when the upload completes. */
  readonly metadata: MetadataChanges;
  readonly createdAt: string;
  /** When the pre-signed URL stops working (ISO 8601). */
  readonly urlExpiresAt: string;
  /** Last moment upload-complete is accepted (ISO 8601). */
  readonly expiresAt: string;
  /** The answer of the first successful upload-complete, returned again on repeats. */
  readonly completion: UploadCompletion | null;
}
