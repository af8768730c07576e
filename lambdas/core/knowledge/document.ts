/** The document record and the views of it the API returns. */
import type { Environment, MetadataField } from './fields';

export type DocumentStatus = 'uploaded' | 'ready' | 'failed';
/** `reserved`: an upload-link holds the documentId until its upload session ends; invisible to the API. */
export type StoredStatus = DocumentStatus | 'reserved';

export interface DatasetRef {
  readonly agentId: string;
  readonly environment: Environment;
  readonly knowledgeBaseId: string;
}

export interface DocumentError {
  readonly code: string;
  readonly message: string;
}

/**
 * The chunks one upload of a document gave the index: `count` chunks, at positions 0..count-1. An index that cannot
 * find a document's chunks cheaply (Bedrock, whose data source can only be listed whole) names them from this.
 */
export interface ChunkGeneration {
  readonly uploadId: string;
  readonly count: number;
}

export interface DocumentRecord extends DatasetRef, Record<MetadataField, string | null> {
  readonly organizationId: string;
  readonly documentId: string;
  readonly customDocumentId: string | null;
  /** The document's identifier path, fixed at creation. */
  readonly s3Key: string;
  /** Where the current content lives: equal to s3Key until the first content update. */
  readonly objectKey: string;
  readonly fileName: string;
  readonly status: StoredStatus;
  /** The upload session whose content the record holds (or reserves). */
  readonly uploadId: string;
  /** Until when a reservation holds the documentId (ISO 8601). */
  readonly reservedUntil: string | null;
  readonly contentType: string;
  readonly fileSize: number | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly error: DocumentError | null;
  /** How often the watchdog re-queued the current upload's processing. */
  readonly watchdogRetries?: number;
  /** The ZIP import that created it (its uploadId then is the zipJobId until its content is replaced). */
  readonly zipJobId?: string;
  /**
   * Made by its ZIP import of a file the archive rules refused: failed, with no content. Holds while its uploadId is
   * still the import's (a content update replaces the refusal).
   */
  readonly refusedByImport?: true;
  /**
   * The uploads whose chunks may be in the index, with how many each gave (processing writes an upload here before it
   * indexes it, and leaves only that one once the others are removed). Absent on records written before it was kept:
   * the index then finds the chunks itself (docs/retrieval-aws.md, "Chunk identifiers").
   */
  readonly indexedChunks?: readonly ChunkGeneration[];
}

/** A `reserved` record: it holds a documentId from upload-link (or a ZIP import) until that upload completes. */
export function reservationRecord(
  fields: DatasetRef &
    Pick<
      DocumentRecord,
      | 'organizationId'
      | 'documentId'
      | 'customDocumentId'
      | 's3Key'
      | 'fileName'
      | 'uploadId'
      | 'reservedUntil'
      | 'contentType'
      | 'createdAt'
    > &
    Pick<DocumentRecord, 'zipJobId' | 'refusedByImport'>,
): DocumentRecord {
  return {
    ...fields,
    objectKey: fields.s3Key,
    status: 'reserved',
    fileSize: null,
    label1: null,
    label2: null,
    customMeta1: null,
    customMeta2: null,
    customMeta3: null,
    customMeta4: null,
    updatedAt: fields.createdAt,
    error: null,
    // Nothing indexed yet, and known to be so: the first processing needs no search of the index.
    indexedChunks: [],
  };
}

/** What GET, PATCH and the like answer: the spec's Document fields, plus fileName, customDocumentId and error. */
export function documentView(doc: DocumentRecord) {
  return {
    s3Key: doc.s3Key,
    documentId: doc.documentId,
    customDocumentId: doc.customDocumentId,
    fileName: doc.fileName,
    status: doc.status as DocumentStatus,
    contentType: doc.contentType,
    fileSize: doc.fileSize,
    label1: doc.label1,
    label2: doc.label2,
    customMeta1: doc.customMeta1,
    customMeta2: doc.customMeta2,
    customMeta3: doc.customMeta3,
    customMeta4: doc.customMeta4,
    error: doc.error,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}
export type DocumentView = ReturnType<typeof documentView>;
