/**
 * Deleting a knowledge base is a job, because a large one cannot be emptied inside one request. Primary course:
 * DELETE marks the row `deleting` (from then on the knowledge base does not exist for any caller: lists, GET, the
 * document API, uploads, retrieval), removes it from the agent's default retrieval configurations, and queues page 0.
 * Each page removes up to `pageSize` documents of any environment (chunks, then objects, then the record), then
 * moves the job to the next page and queues it. With no document left, ZIP imports still reading an archive into
 * the knowledge base are waited for (their archives deleted, so an import not yet started adds nothing), then its
 * ZIP jobs go, and the row last.
 *
 * Crash safety comes from the order: a document's record is removed after its chunks and objects, so a page cut
 * off is found again by the next attempt, which lists what is left. Redelivery is safe because every removal is
 * idempotent, and a copy of a message does nothing once the job has moved past its page (the move is one
 * conditional write, so of two copies of a page only one queues the next). A message lost between pages is found by
 * the watchdog (`resumeStuckDeletions`).
 *
 * Built for reuse by an agent delete: `startKnowledgeBaseDeletion` takes any knowledge base record, so deleting an
 * agent can start one job per knowledge base and remove its own row once none of them is left.
 */

import type { DocumentRecord } from '#core/knowledge/document';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import { removeFromDefaultRetrieval } from '#core/retrieval/default-retrieval';
import { knowledgeBaseDeletedEvent } from '#core/webhooks/events';
import { type PublishDeps, publishStatusEvent } from '#core/webhooks/publish';
import { type KnowledgeIndex, withGeneration } from '#ports/processing';
import type { RetrievalConfigStore } from '#ports/retrieval-configs';
import type { BlobStore, Clock, ProcessingMessage, ProcessingQueue } from '#ports/services';
import type { DocumentStore, KnowledgeBaseRecord, KnowledgeBaseStore } from '#ports/stores';
import type { ZipJobStore } from '#ports/zip-jobs';
import type { ProcessingOutcome } from './process-document';
import { wasRead } from './zip-job';

export interface KnowledgeBaseDeletionSettings {
  /** Documents removed by one queue message (of any environment). */
  readonly pageSize: number;
  /** How long the job waits before looking again while an import still reads an archive into the knowledge base. */
  readonly importWaitSeconds: number;
}

export const DEFAULT_DELETION_SETTINGS: KnowledgeBaseDeletionSettings = { pageSize: 100, importWaitSeconds: 10 };

/** Documents of a page whose chunks, then records, are removed at once (the index serializes its own writes). */
const DOCUMENTS_IN_FLIGHT = 4;

export interface KnowledgeBaseDeletionDeps extends PublishDeps {
  readonly knowledgeBases: KnowledgeBaseStore;
  readonly documents: DocumentStore;
  readonly zipJobs: ZipJobStore;
  readonly retrievalConfigs: RetrievalConfigStore;
  readonly blobs: BlobStore;
  readonly index: KnowledgeIndex;
  readonly queue: ProcessingQueue;
  readonly clock: Clock;
  readonly knowledgeBaseDeletion: KnowledgeBaseDeletionSettings;
}

type DeletionMessage = Extract<ProcessingMessage, { kind: 'delete-knowledge-base' }>;

/** What DELETE answers, the first time and every time after while the job runs. */
export interface DeletionJobView {
  readonly knowledgeBaseId: string;
  readonly agentId: string;
  readonly status: 'deleting';
  readonly startedAt: string;
  /** Environments whose default retrieval configuration named the knowledge base and no longer does. */
  readonly defaultRetrievalChanged: readonly Environment[];
}

export function deletionJobView(kb: KnowledgeBaseRecord): DeletionJobView {
  return {
    knowledgeBaseId: kb.knowledgeBaseId,
    agentId: kb.agentId,
    status: 'deleting',
    startedAt: kb.deletion?.startedAt ?? kb.updatedAt,
    defaultRetrievalChanged: kb.deletion?.defaultRetrievalChanged ?? [],
  };
}

/**
 * Starts the job, or answers the one already running. The mark comes first: from that write on nothing new can start
 * in the knowledge base (and a crash before the first message is queued leaves a job the watchdog resumes).
 * Undefined when the knowledge base is gone.
 */
export async function startKnowledgeBaseDeletion(
  deps: Pick<KnowledgeBaseDeletionDeps, 'knowledgeBases' | 'retrievalConfigs' | 'queue' | 'clock'>,
  kb: KnowledgeBaseRecord,
): Promise<DeletionJobView | undefined> {
  const { agentId, knowledgeBaseId } = kb;
  const now = deps.clock.now().toISOString();
  const marked = await deps.knowledgeBases.markDeleting(
    agentId,
    knowledgeBaseId,
    { startedAt: now, page: 0, defaultRetrievalChanged: [] },
    now,
  );
  if (!marked) {
    const current = await deps.knowledgeBases.get(agentId, knowledgeBaseId);
    return current?.status === 'deleting' ? deletionJobView(current) : undefined;
  }
  const changed = await removeFromDefaultRetrieval(deps, agentId, knowledgeBaseId);
  if (changed.length > 0) await deps.knowledgeBases.recordDefaultRetrievalChanged(agentId, knowledgeBaseId, changed);
  await deps.queue.send({ kind: 'delete-knowledge-base', agentId, knowledgeBaseId, page: 0 });
  return deletionJobView({ ...marked, deletion: { startedAt: now, page: 0, defaultRetrievalChanged: changed } });
}

/** Message `delete-knowledge-base`: one page of the job. */
export async function runKnowledgeBaseDeletionPage(
  deps: KnowledgeBaseDeletionDeps,
  message: DeletionMessage,
): Promise<ProcessingOutcome> {
  const { agentId, knowledgeBaseId } = message;
  const kb = await deps.knowledgeBases.get(agentId, knowledgeBaseId);
  // A copy of a page the job has moved past (redelivered, or superseded by the watchdog) does nothing. A crash
  // between moving the job and queueing the next page leaves the job still: the watchdog resumes it.
  if (kb?.status !== 'deleting' || kb.deletion?.page !== message.page) return 'skipped';

  const { pageSize, importWaitSeconds } = deps.knowledgeBaseDeletion;
  const documents = await firstDocuments(deps, agentId, knowledgeBaseId, pageSize);
  if (documents.length > 0) {
    await removeDocuments(deps, documents);
    return nextPage(deps, message, 0);
  }
  const jobs = await deps.zipJobs.listOfKnowledgeBase(agentId, knowledgeBaseId);
  const reading = jobs.filter((job) => job.status !== 'failed' && !wasRead(job));
  if (reading.length > 0) {
    // An import that has not opened its archive yet then fails (the archive is gone) instead of adding documents;
    // one that is reading goes on from its own copy, and its documents are removed by the pages after it.
    await deps.blobs.delete(reading.map((job) => job.s3Key));
    return nextPage(deps, message, importWaitSeconds);
  }
  // An import may have finished between the document listing and the job listing.
  if ((await firstDocuments(deps, agentId, knowledgeBaseId, 1)).length > 0) return nextPage(deps, message, 0);
  // An import fails without deleting its archive when the watchdog gives up on it.
  await deps.blobs.delete(jobs.map((job) => job.s3Key));
  for (const job of jobs) await deps.zipJobs.delete(job.zipJobId);
  // Again: a configuration PUT that checked the knowledge base just before it was marked may have named it since.
  await removeFromDefaultRetrieval(deps, agentId, knowledgeBaseId);
  for (const environment of ENVIRONMENTS) await deps.documents.forgetCounts({ agentId, environment, knowledgeBaseId });
  // Published once the row is gone: a copy of this page that comes later finds it gone and publishes nothing.
  if (await deps.knowledgeBases.removeDeleted(agentId, knowledgeBaseId)) {
    await publishStatusEvent(
      deps,
      knowledgeBaseDeletedEvent({
        organizationId: kb.organizationId,
        agentId,
        knowledgeBaseId,
        name: kb.name,
        deletedAt: deps.clock.now().toISOString(),
      }),
    );
  }
  return 'ready';
}

/**
 * The watchdog's part: a job that has not moved for `timeoutSeconds` lost its message (or the queue gave up on it).
 * It is moved to the next page and that page queued, so a late copy of the lost one does nothing. A deletion has no
 * failed outcome: it is resumed as often as it stalls.
 */
export async function resumeStuckDeletions(
  deps: Pick<KnowledgeBaseDeletionDeps, 'knowledgeBases' | 'queue' | 'clock'>,
  options: { timeoutSeconds: number; batch?: number },
): Promise<number> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - options.timeoutSeconds * 1000).toISOString();
  let resumed = 0;
  for (const { agentId, knowledgeBaseId } of await deps.knowledgeBases.listDeleting(cutoff, options.batch ?? 100)) {
    const kb = await deps.knowledgeBases.get(agentId, knowledgeBaseId);
    if (kb?.status !== 'deleting' || !kb.deletion || kb.updatedAt >= cutoff) continue;
    const { page } = kb.deletion;
    if (await deps.knowledgeBases.advanceDeletion(agentId, knowledgeBaseId, page, now.toISOString())) {
      await deps.queue.send({ kind: 'delete-knowledge-base', agentId, knowledgeBaseId, page: page + 1 });
      resumed += 1;
    }
  }
  return resumed;
}

async function nextPage(
  deps: KnowledgeBaseDeletionDeps,
  message: DeletionMessage,
  delaySeconds: number,
): Promise<ProcessingOutcome> {
  const moved = await deps.knowledgeBases.advanceDeletion(
    message.agentId,
    message.knowledgeBaseId,
    message.page,
    deps.clock.now().toISOString(),
  );
  // Another copy of this page moved the job first, and queued the next page itself.
  if (!moved) return 'skipped';
  await deps.queue.send({ ...message, page: message.page + 1 }, delaySeconds > 0 ? { delaySeconds } : undefined);
  return 'ready';
}

/** Up to `limit` records of the knowledge base, reservations included, environment by environment. */
async function firstDocuments(
  deps: Pick<KnowledgeBaseDeletionDeps, 'documents'>,
  agentId: string,
  knowledgeBaseId: string,
  limit: number,
): Promise<DocumentRecord[]> {
  const found: DocumentRecord[] = [];
  for (const environment of ENVIRONMENTS) {
    const dataset = { agentId, environment, knowledgeBaseId };
    for await (const doc of deps.documents.listDataset(dataset, { pageSize: limit - found.length })) {
      found.push(doc);
      if (found.length >= limit) return found;
    }
  }
  return found;
}

/**
 * Chunks, objects, then the records: until its record is gone a document is listed again, so a page cut off is done
 * again from what is left. The objects of a page go in one request. Processing of an upload that runs meanwhile may
 * index after the chunks were removed; it finds its `ready` refused once the record is gone and removes its chunks
 * itself, and when it won that race the removed record tells (it was `uploaded`, or holds another upload) and its
 * chunks and objects are removed once more.
 */
async function removeDocuments(deps: KnowledgeBaseDeletionDeps, page: readonly DocumentRecord[]): Promise<void> {
  const refOf = (doc: DocumentRecord) => ({
    agentId: doc.agentId,
    environment: doc.environment,
    knowledgeBaseId: doc.knowledgeBaseId,
    documentId: doc.documentId,
  });
  await eachLimited(page, DOCUMENTS_IN_FLIGHT, (doc) => deps.index.deleteDocument(refOf(doc), doc.indexedChunks));
  await deps.blobs.delete([...new Set(page.flatMap((doc) => [doc.s3Key, doc.objectKey]))]);
  await eachLimited(page, DOCUMENTS_IN_FLIGHT, async (doc) => {
    const removed = await deps.documents.delete(doc, doc.documentId);
    const raced =
      removed !== undefined &&
      (doc.status === 'uploaded' || removed.status === 'uploaded' || removed.uploadId !== doc.uploadId);
    if (!raced) return;
    const known =
      doc.indexedChunks === undefined || removed.indexedChunks === undefined
        ? undefined
        : removed.indexedChunks.reduce(withGeneration, [...doc.indexedChunks]);
    await deps.index.deleteDocument(refOf(doc), known);
    await deps.blobs.delete([...new Set([removed.s3Key, removed.objectKey])]);
  });
}

async function eachLimited<T>(items: readonly T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await run(items[next++]);
    }),
  );
}
