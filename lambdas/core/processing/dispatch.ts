/** Runs the work of one queue message. Transient errors propagate, so the queue redelivers the message. */

import { publishZipImportIfCompleted } from '#core/webhooks/publish';
import { type AgentDeletionDeps, runAgentDeletionPage } from './agent-deletion';
import { type KnowledgeBaseDeletionDeps, runKnowledgeBaseDeletionPage } from './knowledge-base-deletion';
import { type KnowledgeBaseReindexDeps, runKnowledgeBaseReindexPage } from './knowledge-base-reindex';
import type { ProcessingDeps, ProcessingOutcome } from './process-document';
import { confirmIndexed, deleteDocumentChunks, processDocument, syncMetadata } from './process-document';
import type { Work } from './work';
import { importZip, type ZipImportDeps } from './zip-job';

export async function runWork(
  deps: ProcessingDeps & ZipImportDeps & KnowledgeBaseDeletionDeps & KnowledgeBaseReindexDeps & AgentDeletionDeps,
  work: Work,
): Promise<ProcessingOutcome> {
  if (work.kind === 'ignore') return 'skipped';
  if (work.kind === 's3-object') {
    const doc = await deps.documents.get(work, work.documentId);
    if (!doc || doc.objectKey !== work.objectKey) return 'skipped';
    // A file of a ZIP import: the import queues the document's processing itself, once it is `uploaded`
    // (zip-job.ts), so the event of its object would only process it a second time, side by side with the first.
    if (doc.zipJobId !== undefined && doc.uploadId === doc.zipJobId) return 'skipped';
    // The record just read is the one processing checks: one read, not two (a reserved document is skipped there).
    return processDocument(deps, work, doc.uploadId, doc);
  }
  const message = work.message;
  switch (message.kind) {
    case 'process-document':
      return processDocument(deps, message, message.uploadId);
    case 'confirm-indexed':
      return confirmIndexed(deps, message, message.uploadId, message.attempt);
    case 'sync-metadata':
      return syncMetadata(deps, message);
    case 'delete-document':
      return deleteDocumentChunks(deps, message, message.indexedChunks);
    case 'process-zip':
      return importZip(deps, message);
    case 'delete-knowledge-base':
      return runKnowledgeBaseDeletionPage(deps, message);
    case 'reindex-knowledge-base':
      return runKnowledgeBaseReindexPage(deps, message);
    case 'delete-agent':
      return runAgentDeletionPage(deps, message);
    case 'check-zip-completion':
      await publishZipImportIfCompleted(deps, message.zipJobId);
      return 'ready';
  }
}
