/**
 * In-memory ports for unit tests of core use cases: each store keeps the conditional semantics of its DynamoDB
 * adapter (lambdas/adapters/store/dynamodb/*), so a state rule of core/ is tested here without spawning anything.
 */

import type {
  ChunkGeneration,
  DatasetRef,
  DocumentError,
  DocumentRecord,
  DocumentStatus,
} from '#core/knowledge/document';
import type { Environment, MetadataChanges } from '#core/knowledge/fields';
import type { KnowledgeDeps, UploadSettings } from '#core/knowledge/knowledge-deps';
import type { UploadCompletion, UploadSession } from '#core/knowledge/upload-session';
import type { RetrievalConfigRecord } from '#core/retrieval/retrieval-config';
import type { Caller } from '#core/tenancy/tenancy';
import type { ChunkMetadata, DocumentRef, IndexedChunk, IndexHit, IndexQuery, KnowledgeIndex } from '#ports/processing';
import type { RateLimitCounters } from '#ports/rate-limits';
import type { RetrievalConfigStore } from '#ports/retrieval-configs';
import type {
  ArchiveStore,
  Clock,
  DownloadedObject,
  IdGenerator,
  ObjectHead,
  PresignedPut,
  ProcessingMessage,
  ProcessingQueue,
  PutConditions,
} from '#ports/services';
import {
  type AgentRecord,
  type AgentStore,
  advancedReindex,
  type CallbackSecrets,
  type ContentFields,
  DOCUMENT_LIST_SCAN,
  type DocumentCounts,
  type DocumentListQuery,
  type DocumentStore,
  documentPosition,
  type InvitationRecord,
  type InvitationStore,
  type KnowledgeBaseDeletion,
  type KnowledgeBaseRecord,
  type KnowledgeBaseReindex,
  type KnowledgeBaseStore,
  type MemberRecord,
  type MemberStore,
  type MembershipRecord,
  type MembershipStore,
  type OrganizationRecord,
  type OrganizationStore,
  type OwedWork,
  type OwedWorkRecord,
  type ReindexProgress,
  type ReservationCompletion,
  type TokenRecord,
  type TokenStore,
  type UploadSessionStore,
} from '#ports/stores';
import {
  type ZipJobFile,
  type ZipJobRecord,
  type ZipJobStatus,
  type ZipJobStore,
  zipJobPosition,
} from '#ports/zip-jobs';
import { recordingMetrics } from './metrics';

/** Records are copied in and out, as a database would: a caller never mutates what the store holds. */
function copy<T>(value: T): T {
  return structuredClone(value);
}

function datasetKey(ref: DatasetRef): string {
  return `${ref.agentId}#${ref.environment}#${ref.knowledgeBaseId}`;
}

export class InMemoryAgentStore implements AgentStore {
  readonly records = new Map<string, AgentRecord>();

  async put(agent: AgentRecord): Promise<void> {
    this.records.set(`${agent.organizationId}#${agent.agentId}`, copy(agent));
  }

  async get(organizationId: string, agentId: string): Promise<AgentRecord | undefined> {
    const agent = this.records.get(`${organizationId}#${agentId}`);
    return agent && copy(agent);
  }

  async rename(organizationId: string, agentId: string, displayName: string): Promise<AgentRecord | undefined> {
    const agent = this.records.get(`${organizationId}#${agentId}`);
    if (!agent || agent.status === 'deleting') return undefined;
    this.records.set(`${organizationId}#${agentId}`, { ...agent, displayName });
    return copy({ ...agent, displayName });
  }

  async replaceCallbackSecrets(
    organizationId: string,
    agentId: string,
    secrets: CallbackSecrets,
    expected: string | null,
  ): Promise<boolean> {
    const agent = this.records.get(`${organizationId}#${agentId}`);
    if (!agent || agent.status === 'deleting') return false;
    if ((agent.callbackSecrets?.current.secret ?? null) !== expected) return false;
    this.records.set(`${organizationId}#${agentId}`, { ...agent, callbackSecrets: copy(secrets) });
    return true;
  }

  async markDeleting(organizationId: string, agentId: string, startedAt: string) {
    const agent = this.records.get(`${organizationId}#${agentId}`);
    if (!agent || agent.status === 'deleting') return undefined;
    const marked: AgentRecord = {
      ...agent,
      status: 'deleting',
      deletion: { startedAt, page: 0 },
      updatedAt: startedAt,
    };
    this.records.set(`${organizationId}#${agentId}`, marked);
    return copy(marked);
  }

  async advanceDeletion(organizationId: string, agentId: string, page: number, updatedAt: string) {
    const agent = this.records.get(`${organizationId}#${agentId}`);
    if (agent?.status !== 'deleting' || agent.deletion?.page !== page) return false;
    this.records.set(`${organizationId}#${agentId}`, {
      ...agent,
      deletion: { ...agent.deletion, page: page + 1 },
      updatedAt,
    });
    return true;
  }

  async listDeleting(updatedBefore: string, limit: number) {
    return [...this.records.values()]
      .filter((agent) => agent.status === 'deleting' && (agent.updatedAt ?? '') < updatedBefore)
      .sort((a, b) => (a.updatedAt ?? '').localeCompare(b.updatedAt ?? ''))
      .slice(0, limit)
      .map(({ organizationId, agentId }) => ({ organizationId, agentId }));
  }

  async removeDeleted(organizationId: string, agentId: string) {
    if (this.records.get(`${organizationId}#${agentId}`)?.status !== 'deleting') return false;
    return this.records.delete(`${organizationId}#${agentId}`);
  }

  async list(organizationId: string): Promise<AgentRecord[]> {
    return [...this.records.values()]
      .filter((agent) => agent.organizationId === organizationId && agent.status !== 'deleting')
      .sort((a, b) => a.agentId.localeCompare(b.agentId))
      .map(copy);
  }
}

/** The members table of before issue 33 (e-mail → one organization), read and emptied by sign-ins. */
export class InMemoryMemberStore implements MemberStore {
  readonly records = new Map<string, MemberRecord>();

  async get(email: string): Promise<MemberRecord | undefined> {
    const member = this.records.get(email);
    return member && copy(member);
  }

  async delete(email: string, organizationId: string): Promise<boolean> {
    if (this.records.get(email)?.organizationId !== organizationId) return false;
    return this.records.delete(email);
  }
}

/** MembershipStore as the DynamoDB adapter keeps it: one per person (`sub`) and organization. */
export class InMemoryMembershipStore implements MembershipStore {
  readonly records = new Map<string, MembershipRecord>();

  private key(sub: string, organizationId: string): string {
    return `${sub}\u0000${organizationId}`;
  }

  async listByPerson(sub: string): Promise<MembershipRecord[]> {
    return [...this.records.values()].filter((m) => m.sub === sub).map(copy);
  }

  async get(sub: string, organizationId: string): Promise<MembershipRecord | undefined> {
    const membership = this.records.get(this.key(sub, organizationId));
    return membership && copy(membership);
  }

  async listByOrganization(organizationId: string): Promise<MembershipRecord[]> {
    return [...this.records.values()]
      .filter((m) => m.organizationId === organizationId)
      .sort((a, b) => a.email.localeCompare(b.email))
      .map(copy);
  }

  async create(membership: MembershipRecord): Promise<boolean> {
    const key = this.key(membership.sub, membership.organizationId);
    if (this.records.has(key)) return false;
    this.records.set(key, copy(membership));
    return true;
  }

  async delete(sub: string, organizationId: string): Promise<boolean> {
    return this.records.delete(this.key(sub, organizationId));
  }
}

/** InvitationStore as the DynamoDB adapter keeps it: one per address and organization, expired ones until removed. */
export class InMemoryInvitationStore implements InvitationStore {
  readonly records = new Map<string, InvitationRecord>();

  private key(email: string, organizationId: string): string {
    return `${email}\u0000${organizationId}`;
  }

  async put(invitation: InvitationRecord): Promise<void> {
    this.records.set(this.key(invitation.email, invitation.organizationId), copy(invitation));
  }

  async get(email: string, organizationId: string): Promise<InvitationRecord | undefined> {
    const invitation = this.records.get(this.key(email, organizationId));
    return invitation && copy(invitation);
  }

  async listByEmail(email: string): Promise<InvitationRecord[]> {
    return [...this.records.values()].filter((i) => i.email === email).map(copy);
  }

  async listByOrganization(organizationId: string): Promise<InvitationRecord[]> {
    return [...this.records.values()].filter((i) => i.organizationId === organizationId).map(copy);
  }

  async delete(email: string, organizationId: string): Promise<boolean> {
    return this.records.delete(this.key(email, organizationId));
  }
}

export class InMemoryOrganizationStore implements OrganizationStore {
  readonly records = new Map<string, OrganizationRecord>();

  async put(organization: OrganizationRecord): Promise<void> {
    this.records.set(organization.organizationId, copy(organization));
  }

  async get(organizationId: string): Promise<OrganizationRecord | undefined> {
    const organization = this.records.get(organizationId);
    return organization && copy(organization);
  }

  async delete(organizationId: string): Promise<void> {
    this.records.delete(organizationId);
  }
}

export class InMemoryKnowledgeBaseStore implements KnowledgeBaseStore {
  readonly records = new Map<string, KnowledgeBaseRecord>();

  private key(agentId: string, knowledgeBaseId: string) {
    return `${agentId}#${knowledgeBaseId}`;
  }

  async put(knowledgeBase: KnowledgeBaseRecord): Promise<void> {
    this.records.set(this.key(knowledgeBase.agentId, knowledgeBase.knowledgeBaseId), copy(knowledgeBase));
  }

  async get(agentId: string, knowledgeBaseId: string): Promise<KnowledgeBaseRecord | undefined> {
    const record = this.records.get(this.key(agentId, knowledgeBaseId));
    return record && copy(record);
  }

  async list(agentId: string, options: { includeDeleting?: boolean } = {}): Promise<KnowledgeBaseRecord[]> {
    return [...this.records.values()]
      .filter((kb) => kb.agentId === agentId && (options.includeDeleting || kb.status !== 'deleting'))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.knowledgeBaseId.localeCompare(b.knowledgeBaseId))
      .map(copy);
  }

  /** `attribute_exists(knowledgeBaseId) AND attribute_not_exists(#status)`, as every write of one in use. */
  private inUse(agentId: string, knowledgeBaseId: string): KnowledgeBaseRecord | undefined {
    const record = this.records.get(this.key(agentId, knowledgeBaseId));
    return record && record.status === undefined ? record : undefined;
  }

  async update(
    agentId: string,
    knowledgeBaseId: string,
    changes: { name?: string; description?: string | null },
    updatedAt: string,
  ): Promise<KnowledgeBaseRecord | undefined> {
    const record = this.inUse(agentId, knowledgeBaseId);
    if (!record) return undefined;
    const updated: KnowledgeBaseRecord = {
      ...record,
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      updatedAt,
    };
    this.records.set(this.key(agentId, knowledgeBaseId), updated);
    return copy(updated);
  }

  async markDeleting(
    agentId: string,
    knowledgeBaseId: string,
    deletion: KnowledgeBaseDeletion,
    updatedAt: string,
  ): Promise<KnowledgeBaseRecord | undefined> {
    const record = this.inUse(agentId, knowledgeBaseId);
    if (!record) return undefined;
    const updated: KnowledgeBaseRecord = { ...record, status: 'deleting', deletion: copy(deletion), updatedAt };
    this.records.set(this.key(agentId, knowledgeBaseId), updated);
    return copy(updated);
  }

  async recordDefaultRetrievalChanged(agentId: string, knowledgeBaseId: string, environments: readonly Environment[]) {
    const record = this.records.get(this.key(agentId, knowledgeBaseId));
    if (record?.status !== 'deleting' || !record.deletion) return;
    this.records.set(this.key(agentId, knowledgeBaseId), {
      ...record,
      deletion: { ...record.deletion, defaultRetrievalChanged: [...environments] },
    });
  }

  async advanceDeletion(agentId: string, knowledgeBaseId: string, page: number, updatedAt: string) {
    const record = this.records.get(this.key(agentId, knowledgeBaseId));
    if (record?.status !== 'deleting' || record.deletion?.page !== page) return false;
    this.records.set(this.key(agentId, knowledgeBaseId), {
      ...record,
      deletion: { ...record.deletion, page: page + 1 },
      updatedAt,
    });
    return true;
  }

  async listDeleting(updatedBefore: string, limit: number) {
    return [...this.records.values()]
      .filter((kb) => kb.status === 'deleting' && kb.updatedAt < updatedBefore)
      .sort((a, b) => a.updatedAt.localeCompare(b.updatedAt))
      .slice(0, limit)
      .map(({ agentId, knowledgeBaseId }) => ({ agentId, knowledgeBaseId }));
  }

  async removeDeleted(agentId: string, knowledgeBaseId: string): Promise<boolean> {
    if (this.records.get(this.key(agentId, knowledgeBaseId))?.status !== 'deleting') return false;
    return this.records.delete(this.key(agentId, knowledgeBaseId));
  }

  async startReindex(agentId: string, knowledgeBaseId: string, job: KnowledgeBaseReindex) {
    const record = this.inUse(agentId, knowledgeBaseId);
    if (!record || record.reindex?.status === 'running') return undefined;
    const updated: KnowledgeBaseRecord = { ...record, reindex: copy(job) };
    this.records.set(this.key(agentId, knowledgeBaseId), updated);
    return copy(updated);
  }

  async advanceReindex(
    agentId: string,
    knowledgeBaseId: string,
    page: number,
    progress: ReindexProgress,
    updatedAt: string,
  ) {
    const record = this.records.get(this.key(agentId, knowledgeBaseId));
    if (record?.reindex?.status !== 'running' || record.reindex.page !== page) return false;
    this.records.set(this.key(agentId, knowledgeBaseId), {
      ...record,
      reindex: advancedReindex(record.reindex, copy(progress), updatedAt),
    });
    return true;
  }

  async listReindexing(updatedBefore: string, limit: number) {
    return [...this.records.values()]
      .filter((kb) => kb.reindex?.status === 'running' && kb.reindex.updatedAt < updatedBefore)
      .sort((a, b) => (a.reindex?.updatedAt ?? '').localeCompare(b.reindex?.updatedAt ?? ''))
      .slice(0, limit)
      .map(({ agentId, knowledgeBaseId }) => ({ agentId, knowledgeBaseId }));
  }
}

/** DocumentStore with the conditions of DynamoDocumentStore: reserved → uploaded → ready | failed. */
export class InMemoryDocumentStore implements DocumentStore {
  /** By dataset, then documentId. */
  readonly records = new Map<string, Map<string, DocumentRecord>>();
  /** Owed work by `<dataset>|<work>|<documentId>`. */
  readonly owed = new Map<string, OwedWorkRecord>();

  private owedKey(ref: DatasetRef, documentId: string, work: OwedWork): string {
    return `${datasetKey(ref)}|${work}|${documentId}`;
  }

  private owe(ref: DatasetRef, documentId: string, work: OwedWork, since: string, objectKeys?: string[]): void {
    const { agentId, environment, knowledgeBaseId } = ref;
    this.owed.set(this.owedKey(ref, documentId, work), {
      agentId,
      environment,
      knowledgeBaseId,
      documentId,
      work,
      since,
      updatedAt: since,
      retries: 0,
      ...(objectKeys ? { objectKeys } : {}),
    });
  }

  private dataset(ref: DatasetRef): Map<string, DocumentRecord> {
    const key = datasetKey(ref);
    let dataset = this.records.get(key);
    if (!dataset) {
      dataset = new Map();
      this.records.set(key, dataset);
    }
    return dataset;
  }

  /** Writes `fields` over the record when `condition` holds for it (absent records never match). */
  private update(
    ref: DatasetRef,
    documentId: string,
    condition: (doc: DocumentRecord) => boolean,
    fields: Partial<DocumentRecord>,
  ): DocumentRecord | undefined {
    const current = this.dataset(ref).get(documentId);
    if (!current || !condition(current)) return undefined;
    const updated = { ...current, ...copy(fields) } as DocumentRecord;
    this.dataset(ref).set(documentId, updated);
    return copy(updated);
  }

  async get(ref: DatasetRef, documentId: string): Promise<DocumentRecord | undefined> {
    const doc = this.dataset(ref).get(documentId);
    return doc && copy(doc);
  }

  async getMany(ref: DatasetRef, documentIds: readonly string[]): Promise<Map<string, DocumentRecord>> {
    const found = new Map<string, DocumentRecord>();
    for (const documentId of documentIds) {
      const doc = this.dataset(ref).get(documentId);
      if (doc) found.set(documentId, copy(doc));
    }
    return found;
  }

  async reserve(doc: DocumentRecord, now: string): Promise<boolean> {
    const current = this.dataset(doc).get(doc.documentId);
    const free =
      current === undefined ||
      (current.status === 'reserved' && current.reservedUntil !== null && current.reservedUntil < now);
    if (!free) return false;
    this.dataset(doc).set(doc.documentId, copy(doc));
    return true;
  }

  async completeReservation(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
    createdAt: string,
  ): Promise<boolean> {
    const updated = await this.update(
      ref,
      documentId,
      (doc) => doc.status === 'reserved' && doc.uploadId === content.uploadId,
      { ...content, ...metadata, status: 'uploaded', createdAt, reservedUntil: null, error: null },
    );
    return updated !== undefined;
  }

  async reserveAll(docs: readonly DocumentRecord[], now: string): Promise<boolean> {
    const free = (doc: DocumentRecord) => {
      const current = this.dataset(doc).get(doc.documentId);
      return (
        current === undefined ||
        (current.status === 'reserved' && current.reservedUntil !== null && current.reservedUntil < now)
      );
    };
    if (!docs.every(free)) return false;
    for (const doc of docs) this.dataset(doc).set(doc.documentId, copy(doc));
    return true;
  }

  async completeReservations(
    ref: DatasetRef,
    completions: readonly ReservationCompletion[],
    createdAt: string,
  ): Promise<boolean> {
    const reserved = ({ documentId, content }: ReservationCompletion) => {
      const doc = this.dataset(ref).get(documentId);
      return doc?.status === 'reserved' && doc.uploadId === content.uploadId;
    };
    if (!completions.every(reserved)) return false;
    for (const { documentId, content, metadata } of completions) {
      await this.completeReservation(ref, documentId, content, metadata, createdAt);
    }
    return true;
  }

  async replaceContent(
    ref: DatasetRef,
    documentId: string,
    content: ContentFields,
    metadata: MetadataChanges,
  ): Promise<DocumentRecord | undefined> {
    return this.update(ref, documentId, (doc) => doc.status !== 'reserved' && doc.uploadId !== content.uploadId, {
      ...content,
      ...metadata,
      status: 'uploaded',
      watchdogRetries: 0,
      error: null,
    });
  }

  async patchMetadata(
    ref: DatasetRef,
    documentId: string,
    metadata: MetadataChanges,
    updatedAt: string,
  ): Promise<DocumentRecord | undefined> {
    const updated = this.update(ref, documentId, (doc) => doc.status !== 'reserved', { ...metadata, updatedAt });
    if (updated) this.owe(ref, documentId, 'sync-metadata', updatedAt);
    return updated;
  }

  async setStatus(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    status: DocumentStatus,
    error: DocumentError | null,
    updatedAt: string,
    // `seen` changes nothing here: the record is always as written (the DynamoDB store's read back, saved).
    { indexedChunks }: { indexedChunks?: readonly ChunkGeneration[]; seen?: DocumentRecord } = {},
  ): Promise<DocumentRecord | undefined> {
    return this.update(ref, documentId, (doc) => doc.status === 'uploaded' && doc.uploadId === uploadId, {
      status,
      error,
      updatedAt,
      ...(indexedChunks ? { indexedChunks: indexedChunks.map(({ uploadId, count }) => ({ uploadId, count })) } : {}),
    });
  }

  async delete(
    ref: DatasetRef,
    documentId: string,
    options: { readonly erasureOwedSince?: string } = {},
  ): Promise<DocumentRecord | undefined> {
    const doc = this.dataset(ref).get(documentId);
    this.dataset(ref).delete(documentId);
    if (doc && options.erasureOwedSince !== undefined) {
      this.owe(ref, documentId, 'delete-document', options.erasureOwedSince, [...new Set([doc.s3Key, doc.objectKey])]);
    }
    return doc && copy(doc);
  }

  async retrievable(ref: DatasetRef, documentIds: readonly string[]): Promise<Set<string>> {
    const status = (id: string) => this.dataset(ref).get(id)?.status;
    return new Set(documentIds.filter((id) => status(id) === 'uploaded' || status(id) === 'ready'));
  }

  async getOwed(ref: DatasetRef, documentId: string, work: OwedWork): Promise<OwedWorkRecord | undefined> {
    const owed = this.owed.get(this.owedKey(ref, documentId, work));
    return owed && { ...owed };
  }

  async settleOwed(ref: DatasetRef, documentId: string, work: OwedWork, since: string): Promise<boolean> {
    const key = this.owedKey(ref, documentId, work);
    return this.owed.get(key)?.since === since && this.owed.delete(key);
  }

  async listOwed(updatedBefore: string, limit: number) {
    return (['delete-document', 'sync-metadata'] as const).flatMap((work) =>
      [...this.owed.values()]
        .filter((owed) => owed.work === work && owed.updatedAt < updatedBefore)
        .sort((a, b) => a.updatedAt.localeCompare(b.updatedAt))
        .slice(0, limit)
        .map(({ agentId, environment, knowledgeBaseId, documentId }) => ({
          agentId,
          environment,
          knowledgeBaseId,
          documentId,
          work,
        })),
    );
  }

  async recordOwedRetry(
    ref: DatasetRef,
    documentId: string,
    work: OwedWork,
    seenUpdatedAt: string,
    updatedAt: string,
  ): Promise<boolean> {
    const key = this.owedKey(ref, documentId, work);
    const owed = this.owed.get(key);
    if (owed?.updatedAt !== seenUpdatedAt) return false;
    this.owed.set(key, { ...owed, updatedAt, retries: owed.retries + 1 });
    return true;
  }

  async counts(ref: DatasetRef): Promise<DocumentCounts> {
    const counts = { uploaded: 0, ready: 0, failed: 0 };
    for (const doc of this.dataset(ref).values()) if (doc.status !== 'reserved') counts[doc.status] += 1;
    return { ...counts, total: counts.uploaded + counts.ready + counts.failed };
  }

  async forgetCounts(): Promise<void> {}

  async zipImportFinished(zipJobId: string): Promise<boolean> {
    return ![...this.records.values()].some((dataset) =>
      [...dataset.values()].some(
        (doc) =>
          doc.zipJobId === zipJobId &&
          doc.uploadId === zipJobId &&
          (doc.status === 'reserved' || doc.status === 'uploaded'),
      ),
    );
  }

  async zipImportUnfinished(zipJobId: string, limit: number): Promise<string[]> {
    return [...this.records.values()]
      .flatMap((dataset) => [...dataset.values()])
      .filter(
        (doc) =>
          doc.zipJobId === zipJobId &&
          doc.uploadId === zipJobId &&
          (doc.status === 'reserved' || doc.status === 'uploaded'),
      )
      .slice(0, limit)
      .map((doc) => doc.documentId);
  }

  async zipImportFailures(zipJobId: string): Promise<number> {
    return [...this.records.values()].flatMap((dataset) =>
      [...dataset.values()].filter((doc) => doc.uploadId === zipJobId && doc.status === 'failed'),
    ).length;
  }

  async list(ref: DatasetRef, query: DocumentListQuery) {
    const all = [...this.dataset(ref).values()]
      .filter((doc) => doc.status !== 'reserved')
      .map((doc) => ({ doc, position: documentPosition(doc) }))
      .filter(({ position }) => query.before === undefined || position < query.before)
      .sort((a, b) => (a.position < b.position ? 1 : -1));
    const documents: DocumentRecord[] = [];
    for (const [i, { doc, position }] of all.entries()) {
      if (i >= DOCUMENT_LIST_SCAN) return { documents, next: all[i - 1].position };
      if (query.status !== undefined && doc.status !== query.status) continue;
      if (query.label1 !== undefined && doc.label1 !== query.label1) continue;
      if (query.label2 !== undefined && doc.label2 !== query.label2) continue;
      if (query.fileNamePrefix !== undefined && !doc.fileName.startsWith(query.fileNamePrefix)) continue;
      documents.push(copy(doc));
      if (documents.length === query.limit) return { documents, next: i < all.length - 1 ? position : null };
    }
    return { documents, next: null };
  }

  async *listDataset(ref: DatasetRef, options: { after?: string } = {}): AsyncIterable<DocumentRecord> {
    // DynamoDB returns a partition in sort-key order.
    const after = options.after;
    const ids = [...this.dataset(ref).keys()].sort().filter((id) => after === undefined || id > after);
    for (const id of ids) {
      const doc = this.dataset(ref).get(id);
      if (doc) yield copy(doc);
    }
  }

  async listPending(updatedBefore: string, limit: number): Promise<(DatasetRef & { documentId: string })[]> {
    return [...this.records.values()]
      .flatMap((dataset) => [...dataset.values()])
      .filter((doc) => doc.status === 'uploaded' && doc.updatedAt < updatedBefore)
      .sort((a, b) => a.updatedAt.localeCompare(b.updatedAt))
      .slice(0, limit)
      .map(({ agentId, environment, knowledgeBaseId, documentId }) => ({
        agentId,
        environment,
        knowledgeBaseId,
        documentId,
      }));
  }

  async retryFailed(ref: DatasetRef, documentId: string, uploadId: string, updatedAt: string) {
    return this.update(ref, documentId, (doc) => doc.status === 'failed' && doc.uploadId === uploadId, {
      status: 'uploaded',
      error: null,
      watchdogRetries: 0,
      updatedAt,
    });
  }

  async recordIndexedChunks(
    ref: DatasetRef,
    documentId: string,
    uploadId: string,
    indexedChunks: readonly ChunkGeneration[],
    whileUploaded: boolean,
  ) {
    return this.update(
      ref,
      documentId,
      (doc) => doc.uploadId === uploadId && (whileUploaded ? doc.status === 'uploaded' : doc.status !== 'reserved'),
      { indexedChunks },
    );
  }

  async recordWatchdogRetry(ref: DatasetRef, documentId: string, uploadId: string, retries: number, updatedAt: string) {
    return this.update(ref, documentId, (doc) => doc.status === 'uploaded' && doc.uploadId === uploadId, {
      watchdogRetries: retries,
      updatedAt,
    });
  }

  /** Every record of every dataset, reservations included: what a test inspects. */
  all(): DocumentRecord[] {
    return [...this.records.values()].flatMap((dataset) => [...dataset.values()]).map(copy);
  }
}

/** Sessions are written once (`attribute_not_exists(uploadId)`); the first completion is kept. */
export class InMemoryUploadSessionStore implements UploadSessionStore {
  readonly records = new Map<string, UploadSession & { swept?: boolean }>();

  async put(session: UploadSession): Promise<void> {
    if (this.records.has(session.uploadId)) {
      throw new Error(`ConditionalCheckFailedException: upload session ${session.uploadId} exists`);
    }
    this.records.set(session.uploadId, copy(session));
  }

  async get(uploadId: string): Promise<UploadSession | undefined> {
    const record = this.records.get(uploadId);
    if (!record) return undefined;
    const { swept: _swept, ...session } = record;
    return copy(session);
  }

  async saveCompletion(uploadId: string, completion: UploadCompletion): Promise<UploadCompletion> {
    const record = this.records.get(uploadId);
    if (record && record.completion === null) {
      this.records.set(uploadId, { ...record, completion: copy(completion) });
      return completion;
    }
    return record?.completion ? copy(record.completion) : completion;
  }

  async listOpenEndedBefore(endedBefore: string, limit: number): Promise<string[]> {
    return [...this.records.values()]
      .filter((session) => session.completion === null && !session.swept && session.expiresAt < endedBefore)
      .sort((a, b) => a.expiresAt.localeCompare(b.expiresAt))
      .slice(0, limit)
      .map((session) => session.uploadId);
  }

  async markSwept(uploadId: string): Promise<void> {
    const record = this.records.get(uploadId);
    if (record) this.records.set(uploadId, { ...record, swept: true });
  }
}

export class InMemoryZipJobStore implements ZipJobStore {
  readonly jobs = new Map<string, ZipJobRecord & { read?: boolean }>();
  readonly files = new Map<string, Map<number, ZipJobFile>>();

  async create(job: ZipJobRecord): Promise<ZipJobRecord> {
    const existing = this.jobs.get(job.zipJobId);
    if (existing) return this.strip(existing);
    this.jobs.set(job.zipJobId, copy(job));
    return copy(job);
  }

  private strip(record: ZipJobRecord & { read?: boolean }): ZipJobRecord {
    const { read: _read, ...job } = record;
    return copy(job);
  }

  async get(zipJobId: string): Promise<ZipJobRecord | undefined> {
    const job = this.jobs.get(zipJobId);
    return job && this.strip(job);
  }

  async setStatus(zipJobId: string, status: ZipJobStatus, error: ZipJobRecord['error'], updatedAt: string) {
    const job = this.jobs.get(zipJobId);
    if (!job || job.status === 'failed') return;
    this.jobs.set(zipJobId, { ...job, status, error: copy(error), updatedAt });
  }

  async markRead(zipJobId: string, fileCount: number, warnings: readonly string[], updatedAt: string) {
    const job = this.jobs.get(zipJobId);
    if (!job) return;
    this.jobs.set(zipJobId, { ...job, fileCount, warnings: [...warnings], updatedAt, read: true });
  }

  async putFile(zipJobId: string, index: number, file: ZipJobFile): Promise<void> {
    let files = this.files.get(zipJobId);
    if (!files) {
      files = new Map();
      this.files.set(zipJobId, files);
    }
    files.set(index, copy(file));
  }

  async putFiles(zipJobId: string, firstIndex: number, files: readonly ZipJobFile[]): Promise<void> {
    for (const [i, file] of files.entries()) await this.putFile(zipJobId, firstIndex + i, file);
  }

  async listFiles(zipJobId: string): Promise<ZipJobFile[]> {
    const files = this.files.get(zipJobId) ?? new Map<number, ZipJobFile>();
    return [...files.entries()].sort(([a], [b]) => a - b).map(([, file]) => copy(file));
  }

  /** Neither read through nor failed: the adapter's `pendingKey = unread`. */
  private unread(zipJobId: string) {
    const job = this.jobs.get(zipJobId);
    return job && !job.read && job.status !== 'failed' ? job : undefined;
  }

  async listPending(updatedBefore: string, limit: number): Promise<string[]> {
    return [...this.jobs.values()]
      .filter((job) => this.unread(job.zipJobId) && job.updatedAt < updatedBefore)
      .sort((a, b) => a.updatedAt.localeCompare(b.updatedAt))
      .slice(0, limit)
      .map((job) => job.zipJobId);
  }

  async recordWatchdogRetry(zipJobId: string, retries: number, updatedAt: string): Promise<boolean> {
    const job = this.unread(zipJobId);
    if (!job) return false;
    this.jobs.set(zipJobId, { ...job, watchdogRetries: retries, updatedAt });
    return true;
  }

  async recordProgress(zipJobId: string, updatedAt: string): Promise<void> {
    const job = this.unread(zipJobId);
    if (!job) return;
    const { watchdogRetries: _forgotten, ...rest } = job;
    this.jobs.set(zipJobId, { ...rest, updatedAt });
  }

  async failUnread(zipJobId: string, error: NonNullable<ZipJobRecord['error']>, updatedAt: string) {
    const job = this.unread(zipJobId);
    if (!job) return false;
    this.jobs.set(zipJobId, { ...job, status: 'failed', error: copy(error), updatedAt });
    return true;
  }

  async listOfKnowledgeBase(agentId: string, knowledgeBaseId: string): Promise<ZipJobRecord[]> {
    return [...this.jobs.values()]
      .filter((job) => job.agentId === agentId && job.knowledgeBaseId === knowledgeBaseId)
      .map((job) => this.strip(job));
  }

  async listOfDataset(ref: DatasetRef, options: { readonly limit: number; readonly before?: string }) {
    const all = [...this.jobs.values()]
      .filter((job) => datasetKey(job) === datasetKey(ref))
      .filter((job) => options.before === undefined || zipJobPosition(job) < options.before)
      .sort((a, b) => (zipJobPosition(a) < zipJobPosition(b) ? 1 : -1))
      .map((job) => this.strip(job));
    const jobs = all.slice(0, options.limit);
    return { jobs, next: all.length > options.limit ? zipJobPosition(jobs[jobs.length - 1]) : null };
  }

  async delete(zipJobId: string): Promise<void> {
    this.files.delete(zipJobId);
    this.jobs.delete(zipJobId);
  }
}

export interface StoredObject {
  readonly bytes: Buffer;
  readonly contentType: string;
  /** Still tagged as a pending upload (the lifecycle rule would remove it). */
  readonly pendingUpload: boolean;
}

export interface SignedPut {
  readonly key: string;
  readonly conditions: PutConditions;
  readonly expiresInSeconds: number;
}

/**
 * BlobStore whose pre-signed URLs are recorded instead of signed; `putObject` is the client's PUT to such a URL, with
 * the S3 rules the URL carries: only a signed key, only while the key is free (`If-None-Match: *`), with the signed
 * content type and length.
 */
export class InMemoryBlobStore implements ArchiveStore {
  readonly objects = new Map<string, StoredObject>();
  readonly signed: SignedPut[] = [];

  async presignPut(key: string, conditions: PutConditions, expiresInSeconds: number): Promise<PresignedPut> {
    this.signed.push({ key, conditions: copy(conditions), expiresInSeconds });
    const headers: Record<string, string> = { 'content-type': conditions.contentType, 'if-none-match': '*' };
    if (conditions.contentLength !== undefined) headers['content-length'] = String(conditions.contentLength);
    return { url: `https://blobs.test/${encodeURI(key)}?signed=${this.signed.length}`, headers };
  }

  /** The client's PUT to the last URL signed for `key`; throws as S3 would refuse it. */
  putObject(key: string, bytes: Buffer | string): void {
    const signed = this.signed.filter((put) => put.key === key).at(-1);
    if (!signed) throw new Error(`No URL was signed for ${key}`);
    const body = Buffer.from(bytes);
    const { contentLength, contentType } = signed.conditions;
    if (contentLength !== undefined && body.length !== contentLength) {
      throw new Error(`SignatureDoesNotMatch: ${body.length} bytes, ${contentLength} signed`);
    }
    if (this.objects.has(key)) throw new Error(`PreconditionFailed: ${key} exists`);
    this.objects.set(key, { bytes: body, contentType, pendingUpload: true });
  }

  async head(key: string): Promise<ObjectHead | undefined> {
    const object = this.objects.get(key);
    return object && { size: object.bytes.length, contentType: object.contentType };
  }

  async get(key: string): Promise<Buffer | undefined> {
    return this.objects.get(key)?.bytes;
  }

  async download(_key: string, _maxBytes: number): Promise<DownloadedObject | undefined> {
    throw new Error('InMemoryBlobStore.download is not implemented: no use case under unit test needs a file');
  }

  async put(key: string, bytes: Buffer, contentType: string): Promise<void> {
    this.objects.set(key, { bytes, contentType, pendingUpload: false });
  }

  async markCompleted(key: string): Promise<void> {
    const object = this.objects.get(key);
    if (object) this.objects.set(key, { ...object, pendingUpload: false });
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) this.objects.delete(key);
  }
}

export class InMemoryTokenStore implements TokenStore {
  readonly records = new Map<string, TokenRecord>();

  async put(token: TokenRecord): Promise<void> {
    this.records.set(token.tokenHash, copy(token));
  }

  async getByHash(tokenHash: string): Promise<TokenRecord | undefined> {
    const token = this.records.get(tokenHash);
    return token && copy(token);
  }

  async list(organizationId: string): Promise<TokenRecord[]> {
    return [...this.records.values()].filter((token) => token.organizationId === organizationId).map(copy);
  }

  async getById(organizationId: string, tokenId: string): Promise<TokenRecord | undefined> {
    return (await this.list(organizationId)).find((token) => token.tokenId === tokenId);
  }

  async delete(tokenHash: string): Promise<void> {
    this.records.delete(tokenHash);
  }

  async recordUse(tokenHash: string, at: string, since: string): Promise<void> {
    const token = this.records.get(tokenHash);
    if (token && (token.lastUsedAt === undefined || token.lastUsedAt < since)) {
      this.records.set(tokenHash, { ...token, lastUsedAt: at });
    }
  }
}

/** `replace` is conditional on the stored `updatedAt`, as the DynamoDB adapter's write. */
export class InMemoryRetrievalConfigStore implements RetrievalConfigStore {
  readonly records = new Map<string, RetrievalConfigRecord>();

  async get(agentId: string, environment: Environment): Promise<RetrievalConfigRecord | undefined> {
    const record = this.records.get(`${agentId}#${environment}`);
    return record && copy(record);
  }

  async put(record: RetrievalConfigRecord): Promise<void> {
    this.records.set(`${record.agentId}#${record.environment}`, copy(record));
  }

  async replace(record: RetrievalConfigRecord, previousUpdatedAt: string): Promise<boolean> {
    const current = this.records.get(`${record.agentId}#${record.environment}`);
    if (current?.updatedAt !== previousUpdatedAt) return false;
    await this.put(record);
    return true;
  }

  async delete(agentId: string, environment: Environment): Promise<void> {
    this.records.delete(`${agentId}#${environment}`);
  }
}

/**
 * A KnowledgeIndex that answers fixed hits per dataset, best first, at most `limit` (no ranking of its own): for
 * use cases that only read the index. It records every query, so a test sees the scope and filters it was given.
 */
export class FixedHitsIndex implements KnowledgeIndex {
  readonly queries: IndexQuery[] = [];
  private readonly hits = new Map<string, IndexHit[]>();

  /** The hits every query of `scope` answers; a chunk's text and score, the rest derived from the scope. */
  setHits(scope: DatasetRef, hits: readonly { documentId: string; text: string; score: number }[]): void {
    const empty: ChunkMetadata = {
      label1: null,
      label2: null,
      svc_internal_meta1: null,
      svc_internal_meta2: null,
      svc_internal_meta3: null,
      svc_internal_meta4: null,
    };
    this.hits.set(
      datasetKey(scope),
      hits.map(({ documentId, text, score }, position) => ({
        score,
        chunk: {
          ...scope,
          ...empty,
          documentId,
          chunkId: `${documentId}#${position}`,
          s3Key: `${scope.agentId}/${scope.environment}/${scope.knowledgeBaseId}/${documentId}/file.txt`,
          position,
          text,
        },
      })),
    );
  }

  async query(query: IndexQuery): Promise<IndexHit[]> {
    this.queries.push(copy(query));
    return copy((this.hits.get(datasetKey(query.scope)) ?? []).slice(0, query.limit));
  }

  async replaceDocument(_ref: DocumentRef, _chunks: readonly IndexedChunk[]): Promise<void> {
    throw new Error('FixedHitsIndex answers queries only');
  }

  async deleteDocument(_ref: DocumentRef): Promise<void> {
    throw new Error('FixedHitsIndex answers queries only');
  }

  async updateDocumentMetadata(_ref: DocumentRef, _metadata: ChunkMetadata): Promise<void> {
    throw new Error('FixedHitsIndex answers queries only');
  }

  async countDocumentChunks(_ref: DocumentRef): Promise<number> {
    throw new Error('FixedHitsIndex answers queries only');
  }

  async listDocumentChunks(_ref: DocumentRef): Promise<undefined> {
    throw new Error('FixedHitsIndex answers queries only');
  }
}

export class RecordingQueue implements ProcessingQueue {
  readonly sent: { message: ProcessingMessage; delaySeconds?: number }[] = [];

  async send(message: ProcessingMessage, options: { delaySeconds?: number } = {}): Promise<void> {
    this.sent.push({ message: copy(message), ...options });
  }

  async sendAll(messages: readonly ProcessingMessage[]): Promise<void> {
    for (const message of messages) await this.send(message);
  }

  get messages(): ProcessingMessage[] {
    return this.sent.map((entry) => entry.message);
  }
}

export class SettableClock implements Clock {
  constructor(private current: Date = new Date('2026-01-01T00:00:00.000Z')) {}

  now(): Date {
    return new Date(this.current);
  }

  set(date: Date | string): void {
    this.current = new Date(date);
  }

  advanceSeconds(seconds: number): void {
    this.current = new Date(this.current.getTime() + seconds * 1000);
  }
}

/** UUID-shaped ids in order: `00000000-0000-4000-8000-000000000001`, …002, … */
export class SequentialIds implements IdGenerator {
  private next = 0;

  uuid(): string {
    this.next += 1;
    return `00000000-0000-4000-8000-${String(this.next).padStart(12, '0')}`;
  }
}

/** RateLimitCounters as the DynamoDB adapter keeps them: one count per key and window (`<key>#<window>`). */
export class InMemoryRateLimitCounters implements RateLimitCounters {
  readonly windows = new Map<string, number>();
  /** The latest window each key counted in. */
  private readonly latest = new Map<string, number>();

  async hit(key: string, window: number, _expiresAtEpoch: number, amount = 1): Promise<number> {
    this.latest.set(key, Math.max(window, this.latest.get(key) ?? window));
    const count = (this.windows.get(`${key}#${window}`) ?? 0) + amount;
    this.windows.set(`${key}#${window}`, count);
    return count;
  }

  /** What `key` has counted in its latest window (0 when it never counted). */
  counted(key: string): number {
    return this.windows.get(`${key}#${this.latest.get(key)}`) ?? 0;
  }
}

export const TEST_UPLOAD_SETTINGS: UploadSettings = {
  uploadUrlTtlSeconds: 900,
  uploadSessionTtlSeconds: 3600,
  maxFileBytes: 1_000_000,
  maxArchiveBytes: 5_000_000,
};

/** A knowledge base in use, with its agent, in organization `org-a` unless told. */
export interface Tenant {
  readonly caller: Caller;
  readonly agentId: string;
  readonly knowledgeBaseId: string;
  readonly dataset: DatasetRef;
}

export function inMemoryKnowledgeDeps(settings: Partial<UploadSettings> = {}) {
  const agents = new InMemoryAgentStore();
  const knowledgeBases = new InMemoryKnowledgeBaseStore();
  const documents = new InMemoryDocumentStore();
  const zipJobs = new InMemoryZipJobStore();
  const uploads = new InMemoryUploadSessionStore();
  const blobs = new InMemoryBlobStore();
  const queue = new RecordingQueue();
  const clock = new SettableClock();
  const ids = new SequentialIds();
  const tokens = new InMemoryTokenStore();
  const retrievalConfigs = new InMemoryRetrievalConfigStore();
  const metrics = recordingMetrics();
  const deps: KnowledgeDeps = {
    agents,
    knowledgeBases,
    documents,
    zipJobs,
    uploads,
    blobs,
    queue,
    clock,
    ids,
    settings: { ...TEST_UPLOAD_SETTINGS, ...settings },
    metrics,
  };

  /** Seeds an agent and a knowledge base of `organizationId` and a caller with every scope for it. */
  async function tenant(organizationId = 'org-a', suffix = organizationId): Promise<Tenant> {
    const agentId = `agent-${suffix}`;
    const knowledgeBaseId = `kb-${suffix}`;
    const createdAt = clock.now().toISOString();
    await agents.put({ organizationId, agentId, displayName: `Agent of ${suffix}`, createdAt });
    await knowledgeBases.put({
      organizationId,
      agentId,
      knowledgeBaseId,
      name: `Knowledge of ${suffix}`,
      description: null,
      createdAt,
      updatedAt: createdAt,
    });
    return {
      caller: { organizationId, tokenId: `token-${suffix}`, scopes: ['knowledge:read', 'knowledge:write'] },
      agentId,
      knowledgeBaseId,
      dataset: { agentId, environment: 'development', knowledgeBaseId },
    };
  }

  /** A second knowledge base of the tenant's agent. */
  async function tenantKnowledgeBase(owner: Tenant, knowledgeBaseId: string): Promise<Tenant> {
    const createdAt = clock.now().toISOString();
    await knowledgeBases.put({
      organizationId: owner.caller.organizationId,
      agentId: owner.agentId,
      knowledgeBaseId,
      name: knowledgeBaseId,
      description: null,
      createdAt,
      updatedAt: createdAt,
    });
    return { ...owner, knowledgeBaseId, dataset: { ...owner.dataset, knowledgeBaseId } };
  }

  return {
    tenantKnowledgeBase,
    deps,
    /** The same stores with those of the dashboard and default retrieval: every use case here takes a subset. */
    allDeps: { ...deps, agents, knowledgeBases, tokens, retrievalConfigs },
    agents,
    knowledgeBases,
    documents,
    zipJobs,
    uploads,
    blobs,
    queue,
    clock,
    ids,
    tokens,
    retrievalConfigs,
    metrics,
    tenant,
  };
}

export type InMemoryKnowledge = ReturnType<typeof inMemoryKnowledgeDeps>;
