/**
 * Persistence ports of the core. Each operation is atomic in the adapter (a conditional write), so the core's
 * state rules hold under concurrent calls and retries without transactions.
 */
import type { Scope } from '#core/auth/scopes';
import type {
  ChunkGeneration,
  DatasetRef,
  DocumentError,
  DocumentRecord,
  DocumentStatus,
} from '#core/knowledge/document';
import type { Environment, MetadataChanges } from '#core/knowledge/fields';
import type { UploadCompletion, UploadSession } from '#core/knowledge/upload-session';

export interface TokenRecord {
  readonly tokenHash: string;
  readonly tokenId: string;
  readonly organizationId: string;
  readonly scopes: readonly Scope[];
  /** The agents the token is restricted to (1..100); absent: every agent of the organization. */
  readonly agentIds?: readonly string[];
  readonly name: string | null;
  readonly createdAt: string;
  /** The token's first 8 characters (`aps_` and 4 more), to tell tokens apart in a list; absent on older tokens. */
  readonly prefix?: string;
  /** After this instant the token is refused (401); absent or null: it does not expire. */
  readonly expiresAt?: string | null;
  /** When it last authenticated a request, to the minute (TOKEN_USE_RESOLUTION_MS); absent: never. */
  readonly lastUsedAt?: string;
  /** Who made it (core/auth/grants.ts); absent on tokens made before lineage was kept. */
  readonly issuer?: TokenIssuer;
  /**
   * The hashes of the tokens it descends from, oldest first, its issuer last (empty or absent: made by a person or
   * by no one). It authenticates only while each of them does.
   */
  readonly lineage?: readonly string[];
  /** The person at the root of its lineage (their `sub`): it authenticates only while they own the organization. */
  readonly rootSub?: string;
}

/** Who made a token: an owner signed in, or another token of the organization. */
export type TokenIssuer =
  | { readonly kind: 'person'; readonly sub: string; readonly email: string }
  | { readonly kind: 'token'; readonly tokenId: string };

export interface TokenStore {
  put(token: TokenRecord): Promise<void>;
  getByHash(tokenHash: string): Promise<TokenRecord | undefined>;
  /** The organization's tokens, in no particular order. */
  list(organizationId: string): Promise<TokenRecord[]>;
  /** One token of the organization by its id; undefined when it has none of that id. */
  getById(organizationId: string, tokenId: string): Promise<TokenRecord | undefined>;
  /** Removes the token: it authenticates nothing from then on. Nothing to remove is not an error. */
  delete(tokenHash: string): Promise<void>;
  /** Sets `lastUsedAt` to `at` unless it is already `since` or later (one write a minute, whatever the traffic). */
  recordUse(tokenHash: string, at: string, since: string): Promise<void>;
}

/**
 * A row of the members table of before people were their `sub` (issue 33): e-mail → one organization. Read only to
 * move it to a membership at the person's next sign-in (core/auth/people.ts, `adoptLegacyMembership`).
 */
export interface MemberRecord {
  /** Lower case. */
  readonly email: string;
  readonly organizationId: string;
  readonly role: 'owner' | 'member';
  readonly createdAt: string;
}

export interface MemberStore {
  get(email: string): Promise<MemberRecord | undefined>;
  /** Removes the row if it is still of this organization; false when it is not. */
  delete(email: string, organizationId: string): Promise<boolean>;
}

export type Role = 'owner' | 'member';

/**
 * A person's membership of an organization (docs/people.md): made when they sign up, accept an invitation, or create
 * an organization. A person is their Cognito `sub`, never their e-mail, which they could change.
 */
export interface MembershipRecord {
  readonly sub: string;
  readonly organizationId: string;
  /** Lower case; the address the person had when they joined (lists show it). */
  readonly email: string;
  /** `owner`: manages people and tokens; `member`: uses the dashboard, manages neither. */
  readonly role: Role;
  readonly createdAt: string;
}

export interface MembershipStore {
  /** The person's memberships (read consistently: a removal counts at once). */
  listByPerson(sub: string): Promise<MembershipRecord[]>;
  get(sub: string, organizationId: string): Promise<MembershipRecord | undefined>;
  /** The organization's people, by e-mail. */
  listByOrganization(organizationId: string): Promise<MembershipRecord[]>;
  /** Stores the membership unless the person is a member of that organization already; false then. */
  create(membership: MembershipRecord): Promise<boolean>;
  /** Removes it; false when there was none. */
  delete(sub: string, organizationId: string): Promise<boolean>;
}

/** An offer of a membership to an e-mail address, pending until that person accepts, declines or it expires. */
export interface InvitationRecord {
  /** Lower case. */
  readonly email: string;
  readonly organizationId: string;
  readonly role: Role;
  /** The `sub` of the owner who invited, and their address (the invited person sees who asked). */
  readonly invitedBy: string;
  readonly invitedByEmail: string;
  readonly createdAt: string;
  /** From this instant on it is as if it did not exist (the table's TTL removes it later). */
  readonly expiresAt: string;
}

export interface InvitationStore {
  /** Stores it, replacing a pending invitation of the same address to the same organization. */
  put(invitation: InvitationRecord): Promise<void>;
  get(email: string, organizationId: string): Promise<InvitationRecord | undefined>;
  /** The invitations of one address, to any organization (expired ones included). */
  listByEmail(email: string): Promise<InvitationRecord[]>;
  /** The invitations of one organization (expired ones included). */
  listByOrganization(organizationId: string): Promise<InvitationRecord[]>;
  /** Removes it; false when there was none. */
  delete(email: string, organizationId: string): Promise<boolean>;
}

/** An organization made by a sign-up (organizations made from a token alone have no record). */
export interface OrganizationRecord {
  readonly organizationId: string;
  readonly name: string;
  readonly createdAt: string;
}

export interface OrganizationStore {
  put(organization: OrganizationRecord): Promise<void>;
  get(organizationId: string): Promise<OrganizationRecord | undefined>;
  delete(organizationId: string): Promise<void>;
}

export interface AgentRecord {
  readonly organizationId: string;
  readonly agentId: string;
  readonly displayName: string;
  readonly createdAt: string;
  /** Absent: in use. `deleting`: its deletion job runs; to every caller it no longer exists. */
  readonly status?: 'deleting';
  /** The deletion job (core/processing/agent-deletion.ts), on its row until the row itself goes. */
  readonly deletion?: { readonly startedAt: string; readonly page: number };
  /** While `deleting`: the last progress of the deletion job (the watchdog reads it). */
  readonly updatedAt?: string;
  /**
   * What signs its AI-message callbacks (core/flows/callback-signing.ts); absent on agents made before callbacks were
   * signed, until their first callback or rotation. Never answered but once, by the call that made the secret.
   */
  readonly callbackSecrets?: CallbackSecrets;
}

/** An agent's callback secrets: `whsec_` and the base64 of 32 random bytes each (Standard Webhooks). */
export interface CallbackSecrets {
  readonly current: { readonly secret: string; readonly createdAt: string };
  /** The secret the last rotation replaced: it signs beside the current one until `validUntil`. */
  readonly previous?: { readonly secret: string; readonly validUntil: string };
}

export interface AgentStore {
  put(agent: AgentRecord): Promise<void>;
  /** The agent, `deleting` ones included (the callers hide them: core/tenancy). */
  get(organizationId: string, agentId: string): Promise<AgentRecord | undefined>;
  /** The organization's agents in use (never those being deleted). */
  list(organizationId: string): Promise<AgentRecord[]>;
  /** Renames the agent if it exists and is in use; the stored agent after the change, or undefined. */
  rename(organizationId: string, agentId: string, displayName: string): Promise<AgentRecord | undefined>;
  /**
   * Stores `secrets` if the agent is in use and its current secret is still `expected` (null: it has none), so a
   * rotation and a first callback never overwrite each other's secret; false otherwise.
   */
  replaceCallbackSecrets(
    organizationId: string,
    agentId: string,
    secrets: CallbackSecrets,
    expected: string | null,
  ): Promise<boolean>;
  /** In use → `deleting` with a job at page 0; undefined when it is gone or already being deleted. */
  markDeleting(organizationId: string, agentId: string, startedAt: string): Promise<AgentRecord | undefined>;
  /** Moves the job from `page` to `page + 1`; false when it is not at `page` (another copy moved it) or is gone. */
  advanceDeletion(organizationId: string, agentId: string, page: number, updatedAt: string): Promise<boolean>;
  /** Agents `deleting` whose job last moved before `updatedBefore`, oldest first, at most `limit`. */
  listDeleting(updatedBefore: string, limit: number): Promise<{ organizationId: string; agentId: string }[]>;
  /** Removes the row, only while it is `deleting` (the job's last step); false when it is not. */
  removeDeleted(organizationId: string, agentId: string): Promise<boolean>;
}

export interface KnowledgeBaseRecord {
  readonly organizationId: string;
  readonly agentId: string;
  readonly knowledgeBaseId: string;
  readonly name: string;
  readonly description: string | null;
  readonly createdAt: string;
  /** While `deleting`: the last progress of the deletion job (the watchdog reads it). */
  readonly updatedAt: string;
  /** Absent: in use. `deleting`: its deletion job runs; to every caller it no longer exists. */
  readonly status?: 'deleting';
  readonly deletion?: KnowledgeBaseDeletion;
  /** The last reindex of its documents (core/processing/knowledge-base-reindex.ts), running or completed. */
  readonly reindex?: KnowledgeBaseReindex;
}

/** Where a reindex goes on from: the environment, and the last document id of it done (null: its first). */
export interface ReindexCursor {
  readonly environment: Environment;
  readonly after: string | null;
}

/** A document a reindex could not index again (it stays as it is: `ready`, with the chunks it had, if any). */
export interface ReindexFailure {
  readonly environment: Environment;
  readonly documentId: string;
  readonly code: string;
  readonly message: string;
}

/**
 * The reindex job of a knowledge base, on its row: `running` while pages go, `completed` once every environment
 * was read through. Counters are of documents: `reindexed` (chunks written again), `skipped` (not `ready`: their
 * own processing indexes them), `failed` (their stored object could not be chunked).
 */
export interface KnowledgeBaseReindex {
  readonly status: 'running' | 'completed';
  readonly startedAt: string;
  /** Its last progress (the watchdog resumes a running job that has not moved for its timeout). */
  readonly updatedAt: string;
  readonly completedAt: string | null;
  /** The environments (datasets) it reindexes, in order: one asked for, or all three. */
  readonly environments: readonly Environment[];
  /** The page the job is at: each queue message names its page, so a stale copy of an earlier one does nothing. */
  readonly page: number;
  /** Where the next page starts; null once completed. */
  readonly cursor: ReindexCursor | null;
  /**
   * Pages still to take one document each, counting any error of it as a failure: set when the watchdog resumes the job
   * (its page was lost, or failed every delivery), to the page size, so the span of the page that stalled is gone
   * through one document at a time and a document that fails every attempt cannot hold the job. Absent: 0.
   */
  readonly slowPages?: number;
  /** `ready` documents of the knowledge base when the job started (every environment). */
  readonly total: number;
  readonly reindexed: number;
  readonly skipped: number;
  readonly failed: number;
  /** The first failures (at most REINDEX_FAILURES_KEPT). */
  readonly failures: readonly ReindexFailure[];
}

/** What one move of a reindex adds to its job: a page's counts and next cursor, or (the watchdog) none. */
export interface ReindexProgress {
  /** Where the next page starts; null: the job is completed. */
  readonly cursor: ReindexCursor | null;
  readonly reindexed: number;
  readonly skipped: number;
  readonly failed: number;
  readonly failures: readonly ReindexFailure[];
  /** The job's `slowPages` after this move. */
  readonly slowPages: number;
}

export const REINDEX_FAILURES_KEPT = 20;

/** The job after one move (page + 1, `progress` added; cursor null: completed at `updatedAt`). */
export function advancedReindex(
  job: KnowledgeBaseReindex,
  progress: ReindexProgress,
  updatedAt: string,
): KnowledgeBaseReindex {
  return {
    ...job,
    page: job.page + 1,
    updatedAt,
    cursor: progress.cursor,
    status: progress.cursor === null ? 'completed' : 'running',
    completedAt: progress.cursor === null ? updatedAt : null,
    reindexed: job.reindexed + progress.reindexed,
    skipped: job.skipped + progress.skipped,
    failed: job.failed + progress.failed,
    failures: [...job.failures, ...progress.failures].slice(0, REINDEX_FAILURES_KEPT),
    slowPages: progress.slowPages,
  };
}

/** The deletion job of a knowledge base, kept on its row until the row itself goes (core/processing/knowledge-base-deletion.ts). */
export interface KnowledgeBaseDeletion {
  readonly startedAt: string;
  /** The page the job is at: each queue message names its page, so a stale copy of an earlier one does nothing. */
  readonly page: number;
  /** The environments whose default retrieval configuration named the knowledge base (and no longer does). */
  readonly defaultRetrievalChanged: readonly Environment[];
}

/**
 * An agent and one of its knowledge bases read together: the tenancy check of requireKnowledgeBase
 * (core/tenancy/tenancy.ts). As they are now (consistently) for a request that changes a knowledge base's content;
 * through the container's 5 s read caches for the customer API's reads and retrieval (CachedTenancyReads). One
 * BatchGetItem on DynamoDB instead of two GetItems, for the same read units.
 */
export interface TenancyReads {
  agentAndKnowledgeBase(
    organizationId: string,
    agentId: string,
    knowledgeBaseId: string,
  ): Promise<{ readonly agent?: AgentRecord; readonly knowledgeBase?: KnowledgeBaseRecord }>;
}

export interface KnowledgeBaseStore {
  put(knowledgeBase: KnowledgeBaseRecord): Promise<void>;
  get(agentId: string, knowledgeBaseId: string): Promise<KnowledgeBaseRecord | undefined>;
  /** The agent's knowledge bases in creation order; those being deleted only with `includeDeleting`. */
  list(agentId: string, options?: { includeDeleting?: boolean }): Promise<KnowledgeBaseRecord[]>;
  /**
   * Applies the changes (null clears description) and returns the new record, or undefined when it is gone or being
   * deleted.
   */
  update(
    agentId: string,
    knowledgeBaseId: string,
    changes: { name?: string; description?: string | null },
    updatedAt: string,
  ): Promise<KnowledgeBaseRecord | undefined>;
  /** In use → `deleting` with a new job at page 0; undefined when it is gone or already being deleted. */
  markDeleting(
    agentId: string,
    knowledgeBaseId: string,
    deletion: KnowledgeBaseDeletion,
    updatedAt: string,
  ): Promise<KnowledgeBaseRecord | undefined>;
  /** Records which environments' default retrieval no longer names it, while it is being deleted. */
  recordDefaultRetrievalChanged(
    agentId: string,
    knowledgeBaseId: string,
    environments: readonly Environment[],
  ): Promise<void>;
  /**
   * Moves the deletion job from `page` to `page + 1` and sets `updatedAt`; false when the job is not at `page`
   * (another copy of the message moved it first) or the row is gone.
   */
  advanceDeletion(agentId: string, knowledgeBaseId: string, page: number, updatedAt: string): Promise<boolean>;
  /** Knowledge bases `deleting` whose job last moved before `updatedBefore`, oldest first, at most `limit`. */
  listDeleting(updatedBefore: string, limit: number): Promise<{ agentId: string; knowledgeBaseId: string }[]>;
  /** Removes the row, only while it is `deleting` (the job's last step); false when it is not. */
  removeDeleted(agentId: string, knowledgeBaseId: string): Promise<boolean>;
  /**
   * Starts a reindex job (replacing a completed one); undefined when the knowledge base is gone, being deleted, or
   * a reindex of it is running.
   */
  startReindex(
    agentId: string,
    knowledgeBaseId: string,
    job: KnowledgeBaseReindex,
  ): Promise<KnowledgeBaseRecord | undefined>;
  /** Moves a running reindex from `page` to `page + 1` with `progress`; false when it is not running at `page`. */
  advanceReindex(
    agentId: string,
    knowledgeBaseId: string,
    page: number,
    progress: ReindexProgress,
    updatedAt: string,
  ): Promise<boolean>;
  /** Knowledge bases whose running reindex last moved before `updatedBefore`, oldest first, at most `limit`. */
  listReindexing(updatedBefore: string, limit: number): Promise<{ agentId: string; knowledgeBaseId: string }[]>;
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

/** One reservation of a batch completed at once (DocumentStore.completeReservations). */
export interface ReservationCompletion {
  readonly documentId: string;
  readonly content: ContentFields;
  readonly metadata: MetadataChanges;
}

export interface DocumentCounts {
  readonly uploaded: number;
  readonly ready: number;
  readonly failed: number;
  readonly total: number;
}

export interface DocumentListQuery {
  readonly limit: number;
  readonly status?: DocumentStatus;
  readonly label1?: string;
  readonly label2?: string;
  /** Matches file names that start with it (case and accents as written). */
  readonly fileNamePrefix?: string;
  /** A position from documentPosition: the page starts after it. */
  readonly before?: string;
}

/** Documents a list reads at most in one call (a position to go on from is answered past it). */
export const DOCUMENT_LIST_SCAN = 1000;

/** A document's position in the list: `<createdAt>#<documentId>`. */
export function documentPosition(doc: Pick<DocumentRecord, 'createdAt' | 'documentId'>): string {
  return `${doc.createdAt}#${doc.documentId}`;
}

/**
 * Work a document is owed once its request was answered: the chunks' metadata to follow a change (`sync-metadata`),
 * or the erasure of a deleted document's chunks and objects (`delete-document`). Named as the queue message that
 * does it (ports/services.ts).
 */
export type OwedWork = 'sync-metadata' | 'delete-document';

/**
 * The record that work is owed, kept beside the document (never shown by the API) from the write that accepts the
 * request until the worker has done it: the watchdog queues the work again while it stays (docs/processing.md,
 * "Owed work").
 */
export interface OwedWorkRecord extends DatasetRef {
  readonly documentId: string;
  readonly work: OwedWork;
  /** When the request that owes it was accepted: it names this debt (a later request of the same work replaces it). */
  readonly since: string;
  /** Its last progress: `since`, or when the watchdog last queued it again. */
  readonly updatedAt: string;
  /** How often the watchdog queued it again. */
  readonly retries: number;
  /** An erasure's objects: the deleted document's `s3Key` and `objectKey`. */
  readonly objectKeys?: readonly string[];
}

export interface DocumentStore {
  get(ref: DatasetRef, documentId: string): Promise<DocumentRecord | undefined>;
  /**
   * `get` for many documents of one dataset, read as consistently, in as few calls as the store allows (DynamoDB:
   * BatchGetItem, 100 keys a call): the records found, by documentId. A ZIP job's view reads its files' documents so.
   */
  getMany(ref: DatasetRef, documentIds: readonly string[]): Promise<Map<string, DocumentRecord>>;
  /**
   * Writes a `reserved` record unless the documentId is taken: by a document, or by a reservation that has not
   * expired at `now`. Returns false when taken.
   */
  reserve(doc: DocumentRecord, now: string): Promise<boolean>;
  /**
   * reserved → uploaded, only if the reservation still belongs to `content.uploadId`. True when written: the record
   * is then `uploaded` with `content`, `metadata` and `createdAt` (nothing else changed, so the caller knows it without
   * reading it back); false when the reservation is not (or no longer) this upload's.
   */
  completeReservation(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
    createdAt: string,
  ): Promise<boolean>;
  /**
   * `reserve` for several documents of one dataset at once (at most 100), all or none: false, with nothing written,
   * when any of their ids is taken. A ZIP import reserves a window of its files so.
   */
  reserveAll(docs: readonly DocumentRecord[], now: string): Promise<boolean>;
  /**
   * `completeReservation` for several reservations of one dataset at once (at most 99), all or none: false, with
   * nothing written, when any of them is not (or no longer) its upload's. The dataset's counts move by their number.
   */
  completeReservations(
    ref: DatasetRef,
    completions: readonly ReservationCompletion[],
    createdAt: string,
  ): Promise<boolean>;
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
  /**
   * Applies metadata changes to an existing document and, in the same write, records a `sync-metadata` owed since
   * `updatedAt`; undefined (nothing written) when it is gone.
   */
  patchMetadata(
    ref: DatasetRef,
    documentId: string,
    metadata: MetadataChanges,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined>;
  /**
   * Sets the processing outcome (`ready` or `failed`), only while the document is `uploaded` and still holds
   * `uploadId`: an outcome is written once per upload, so the first of two racing writers wins. Returns the record
   * as written, or undefined when the document moved on (or is gone).
   * - `indexedChunks`: set in the same write (processing's `ready`, once the index holds no other upload's chunks).
   * - `seen`: the record as the caller read it. While its labels and custom metadata are still those, the answer is
   *   `seen` with what this write changed, not read back; when they changed meanwhile, the record is read back.
   */
  setStatus(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    status: DocumentStatus,
    error: DocumentError | null,
    updatedAt: string,
    options?: { readonly indexedChunks?: readonly ChunkGeneration[]; readonly seen?: DocumentRecord },
  ): Promise<DocumentRecord | undefined>;
  /**
   * Removes the record; returns what was removed. With `erasureOwedSince`, the same write records a
   * `delete-document` owed since then, with the record's objects (the API's delete: its chunks go after the answer).
   */
  delete(
    ref: DatasetRef,
    documentId: string,
    options?: { readonly erasureOwedSince?: string },
  ): Promise<DocumentRecord | undefined>;
  /**
   * The ids among `documentIds` whose document may be retrieved now: it exists and is `uploaded` or `ready` (a
   * deleted, reserved or failed one has no chunks of its own). Read consistently: a delete answered is seen at once.
   */
  retrievable(ref: DatasetRef, documentIds: readonly string[]): Promise<Set<string>>;
  /** The work of that kind the document is owed, if any. */
  getOwed(ref: DatasetRef, documentId: string, work: OwedWork): Promise<OwedWorkRecord | undefined>;
  /** The work is done: removes its record if it is still the debt of `since` (a later request's stays); false if not. */
  settleOwed(ref: DatasetRef, documentId: string, work: OwedWork, since: string): Promise<boolean>;
  /** Owed work of either kind whose last progress is before `updatedBefore`, oldest first, at most `limit` of each. */
  listOwed(
    updatedBefore: string,
    limit: number,
  ): Promise<(DatasetRef & { readonly documentId: string; readonly work: OwedWork })[]>;
  /**
   * Counts a watchdog re-queue of the owed work and restarts its clock at `updatedAt`, only while its last progress
   * is still `seenUpdatedAt` (of two watchdogs, one queues it); false otherwise.
   */
  recordOwedRetry(
    ref: DatasetRef,
    documentId: string,
    work: OwedWork,
    seenUpdatedAt: string,
    updatedAt: string,
  ): Promise<boolean>;
  /** How many documents of the dataset are in each status, exact (reservations are not documents). */
  counts(ref: DatasetRef): Promise<DocumentCounts>;
  /**
   * True when no document the ZIP import created is unfinished: each still holding the import's content is `ready`
   * or `failed` (a deleted one, or one whose content was replaced since, is done with the import). Read from an index:
   * in AWS it may lag a write by a fraction of a second.
   */
  zipImportFinished(zipJobId: string): Promise<boolean>;
  /** Up to `limit` of the documents zipImportFinished waits for (their ids), from the same index. */
  zipImportUnfinished(zipJobId: string, limit: number): Promise<string[]>;
  /**
   * How many documents still holding the ZIP import's content are `failed` (the files it refused included: they are
   * failed documents too). Read from an index: in AWS it may lag a write by a fraction of a second.
   */
  zipImportFailures(zipJobId: string): Promise<number>;
  /** Drops the dataset's counters: the last step of its knowledge base's deletion, once no document is left. */
  forgetCounts(ref: DatasetRef): Promise<void>;
  /**
   * Documents of the dataset (never reservations), newest first (by `createdAt`, then id), those that match every
   * filter given, before the position `before` when given. Reads at most DOCUMENT_LIST_SCAN documents a call: `next`
   * is where the next call goes on (null: no more), and a page with rare matches can hold fewer than `limit`.
   */
  list(ref: DatasetRef, query: DocumentListQuery): Promise<{ documents: DocumentRecord[]; next: string | null }>;
  /**
   * Every record of a dataset, reservations included (never the counters nor the records of owed work). `pageSize` bounds each read from the store, for a caller that
   * stops early (the knowledge base deletion takes one page at a time). In documentId order; `after`: only the
   * records whose id sorts after it (a reindex goes on from there).
   */
  listDataset(ref: DatasetRef, options?: { pageSize?: number; after?: string }): AsyncIterable<DocumentRecord>;
  /** Documents `uploaded` since before `updatedBefore`, oldest first, at most `limit`. */
  listPending(updatedBefore: string, limit: number): Promise<(DatasetRef & { documentId: string })[]>;
  /**
   * Sets a `failed` document `uploaded` again for its current upload (error cleared, watchdog count and clock
   * restarted), only while it is still `failed` with that upload; undefined otherwise.
   */
  retryFailed(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined>;
  /** Counts a watchdog retry of the document's current upload and restarts its clock; undefined if it moved on. */
  recordWatchdogRetry(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    retries: number,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined>;
  /**
   * Sets `indexedChunks` (the uploads whose chunks may be in the index) while the document holds `uploadId` and, with
   * `whileUploaded`, is still `uploaded`; undefined when it does not (it moved on, or is gone). Status, counts and
   * `updatedAt` are untouched.
   */
  recordIndexedChunks(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    indexedChunks: readonly ChunkGeneration[],
    whileUploaded: boolean,
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
