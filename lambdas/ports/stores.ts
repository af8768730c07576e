/**
 * Persistence ports of the core. Each operation is atomic in the adapter (a conditional write), so the core's
 * state rules hold under concurrent calls and retries without transactions.
 */
import type { Scope } from '../../lib/routes';
import type { DatasetRef, DocumentError, DocumentRecord, DocumentStatus } from '../core/knowledge/document';
import type { MetadataChanges } from '../core/knowledge/fields';
import type { UploadCompletion, UploadSession } from '../core/knowledge/upload-session';

export interface TokenRecord {
  readonly tokenHash: string;
  readonly tokenId: string;
  readonly organizationId: string;
  readonly scopes: readonly Scope[];
  /** The agents the token is restricted to (1..100); absent: every agent of the organization. */
  readonly agentIds?: readonly string[];
  readonly name: string | null;
  readonly createdAt: string;
}

export interface TokenStore {
  put(token: TokenRecord): Promise<void>;
  getByHash(tokenHash: string): Promise<TokenRecord | undefined>;
}

export interface AgentRecord {
  readonly organizationId: string;
  readonly agentId: string;
  readonly displayName: string;
  readonly createdAt: string;
}

export interface AgentStore {
  put(agent: AgentRecord): Promise<void>;
  get(organizationId: string, agentId: string): Promise<AgentRecord | undefined>;
  list(organizationId: string): Promise<AgentRecord[]>;
}

export interface KnowledgeBaseRecord {
  readonly organizationId: string;
  readonly agentId: string;
  readonly knowledgeBaseId: string;
  readonly name: string;
  readonly description: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface KnowledgeBaseStore {
  put(knowledgeBase: KnowledgeBaseRecord): Promise<void>;
  get(agentId: string, knowledgeBaseId: string): Promise<KnowledgeBaseRecord | undefined>;
  list(agentId: string): Promise<KnowledgeBaseRecord[]>;
  /** Applies the changes (null clears description) and returns the new record, or undefined when it is gone. */
  update(
    agentId: string,
    knowledgeBaseId: string,
    changes: { name?: string; description?: string | null },
    updatedAt: string,
  ): Promise<KnowledgeBaseRecord | undefined>;
  delete(agentId: string, knowledgeBaseId: string): Promise<KnowledgeBaseRecord | undefined>;
}

/** Fields written when an upload's content becomes the document's content. */
export interface ContentFields {
  readonly uploadId: string;
  readonly objectKey: string;
  readonly fileName: string;
  readonly contentType: string;
  readonly fileSize: number;
  readonly updatedAt: string;
}

export interface DocumentStore {
  get(ref: DatasetRef, documentId: string): Promise<DocumentRecord | undefined>;
  /**
   * Writes a `reserved` record unless the documentId is taken: by a document, or by a reservation that has not
   * expired at `now`. Returns false when taken.
   */
  reserve(doc: DocumentRecord, now: string): Promise<boolean>;
  /**
   * reserved → uploaded, only if the reservation still belongs to `content.uploadId`. Returns the new record, or
   * undefined when the reservation is not (or no longer) this upload's.
   */
  completeReservation(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
    createdAt: string,
  ): Promise<DocumentRecord | undefined>;
  /**
   * Replaces the content of an existing (non-reserved) document and sets it `uploaded`, unless it already holds
   * this upload. Returns the new record, or undefined when the document is gone or already holds the upload.
   */
  replaceContent(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
  ): Promise<DocumentRecord | undefined>;
  /** Applies metadata changes to an existing document; undefined when it is gone. */
  patchMetadata(
    ref: DatasetRef,
    documentId: string,
    metadata: MetadataChanges,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined>;
  /**
   * Sets the processing outcome (`ready` or `failed`), only while the document is `uploaded` and still holds
   * `uploadId`: an outcome is written once per upload, so the first of two racing writers wins.
   */
  setStatus(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    status: DocumentStatus,
    error: DocumentError | null,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined>;
  /** Removes the record; returns what was removed. */
  delete(ref: DatasetRef, documentId: string): Promise<DocumentRecord | undefined>;
  /** Every record of a dataset, reservations included. */
  listDataset(ref: DatasetRef): AsyncIterable<DocumentRecord>;
  /** Documents `uploaded` since before `updatedBefore`, oldest first, at most `limit`. */
  listPending(updatedBefore: string, limit: number): Promise<(DatasetRef & { documentId: string })[]>;
  /** Counts a watchdog retry of the document's current upload and restarts its clock; undefined if it moved on. */
  recordWatchdogRetry(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    retries: number,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined>;
}

export interface UploadSessionStore {
  put(session: UploadSession): Promise<void>;
  get(uploadId: string): Promise<UploadSession | undefined>;
  /** Stores the first completion answer; a later call keeps the first. Returns the stored answer. */
  saveCompletion(uploadId: string, completion: UploadCompletion): Promise<UploadCompletion>;
  /** Ids of sessions neither completed nor swept that ended before `endedBefore`, oldest first, at most `limit`. */
  listOpenEndedBefore(endedBefore: string, limit: number): Promise<string[]>;
  /** The session's upload was dealt with (its object removed, or found in use): it is no longer listed. */
  markSwept(uploadId: string): Promise<void>;
}
