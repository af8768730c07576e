/**
 * Composition root of the processing worker: the API's adapters plus extraction, the archive importer and the
 * knowledge index. Kept apart from `container` so API Lambdas do not bundle PDF, DOCX or index libraries.
 * In AWS the index is the Bedrock knowledge base of each environment (BEDROCK_KNOWLEDGE_BASES), on LocalStack the
 * DynamoDB chunk table (CHUNK_INDEX_TABLE); the local runtime installs its embedded index with `useKnowledgeIndex`
 * before the worker starts.
 */

import { ZipArchiveImporter } from '#adapters/archive/zip-importer';
import { DEFAULT_ZIP_LIMITS } from '#adapters/archive/zip-reader';
import { S3ArchiveStore } from '#adapters/blob/s3-archive';
import { IsolatedTextExtractor } from '#adapters/extraction/isolated-extractor';
import { DEFAULT_EXTRACTION_CAPS } from '#adapters/extraction/text-extractor';
import type { AgentDeletionDeps } from '#core/processing/agent-deletion';
import {
  DEFAULT_DELETION_SETTINGS,
  type KnowledgeBaseDeletionDeps,
  type KnowledgeBaseDeletionSettings,
} from '#core/processing/knowledge-base-deletion';
import {
  DEFAULT_REINDEX_SETTINGS,
  type KnowledgeBaseReindexDeps,
  type KnowledgeBaseReindexSettings,
} from '#core/processing/knowledge-base-reindex';
import { buildChunks, type ProcessingDeps, type ProcessingSettings } from '#core/processing/process-document';
import type { ZipImportDeps } from '#core/processing/zip-job';
import type { Embedder, KnowledgeIndex } from '#ports/processing';
import { config, DEFAULT_MAX_ARCHIVE_BYTES, DEFAULT_MAX_FILE_BYTES, positiveInteger } from '#shared/config';
import { logger } from '#shared/logger';
import { s3Client } from './clients/s3';
import { container, uncachedStores } from './container';
import { definitionStore, sessionStore } from './definition-container';
import { deployedKnowledgeIndex, installedKnowledgeIndex } from './knowledge-index';
import { operationalMetrics } from './metrics';
import { once } from './once';
import { statusEventPublisher } from './webhook-container';

const archiveStore = /* @__PURE__ */ once(() => new S3ArchiveStore(s3Client(), config.documentsBucket()));

export { useKnowledgeIndex } from './knowledge-index';

/** Files in one archive unless `ZIP_MAX_ENTRIES` says otherwise: the reader's own default, one number. */
export const DEFAULT_ZIP_MAX_ENTRIES = DEFAULT_ZIP_LIMITS.maxEntries;

let index: KnowledgeIndex | undefined;
let extractor: IsolatedTextExtractor | undefined;
let archives: ZipArchiveImporter | undefined;
let settings: ProcessingSettings | undefined;

/** The bounds of text extraction (docs/processing.md, "Hostile files"). */
export function extractionLimits() {
  const MB = 1024 * 1024;
  return {
    timeoutMs: positiveInteger('EXTRACTION_TIMEOUT_SECONDS', 60) * 1000,
    memoryBytes: positiveInteger('EXTRACTION_MEMORY_MB', 1024) * MB,
    maxPdfPages: positiveInteger('EXTRACTION_MAX_PDF_PAGES', DEFAULT_EXTRACTION_CAPS.maxPdfPages),
    maxDocxXmlBytes: positiveInteger('EXTRACTION_MAX_DOCX_XML_MB', DEFAULT_EXTRACTION_CAPS.maxDocxXmlBytes / MB) * MB,
    maxCharacters: positiveInteger('EXTRACTION_MAX_CHARACTERS', DEFAULT_EXTRACTION_CAPS.maxCharacters),
  };
}

let deletionSettings: KnowledgeBaseDeletionSettings | undefined;
let reindexSettings: KnowledgeBaseReindexSettings | undefined;

export const processingContainer: ProcessingDeps &
  ZipImportDeps &
  KnowledgeBaseDeletionDeps &
  KnowledgeBaseReindexDeps &
  AgentDeletionDeps = {
  get documents() {
    return container.documents;
  },
  // The deletion of an agent runs here: its definitions, sessions and knowledge bases, then its row.
  get agents() {
    return uncachedStores.agents;
  },
  get definitions() {
    return definitionStore();
  },
  get sessions() {
    return sessionStore();
  },
  // The deletion of a knowledge base runs here too: its documents, then its row and its retrieval configurations.
  get knowledgeBases() {
    return uncachedStores.knowledgeBases;
  },
  get retrievalConfigs() {
    return container.retrievalConfigs;
  },
  get knowledgeBaseDeletion(): KnowledgeBaseDeletionSettings {
    deletionSettings ??= {
      ...DEFAULT_DELETION_SETTINGS,
      pageSize: positiveInteger('KNOWLEDGE_BASE_DELETION_PAGE_SIZE', DEFAULT_DELETION_SETTINGS.pageSize),
    };
    return deletionSettings;
  },
  get knowledgeBaseReindex(): KnowledgeBaseReindexSettings {
    reindexSettings ??= {
      pageSize: positiveInteger('KNOWLEDGE_BASE_REINDEX_PAGE_SIZE', DEFAULT_REINDEX_SETTINGS.pageSize),
    };
    return reindexSettings;
  },
  // The documents' store, able to stream an archive into a file for a ZIP import (adapters/blob/s3-archive.ts).
  get blobs() {
    return archiveStore();
  },
  get queue() {
    return container.queue;
  },
  get zipJobs() {
    return container.zipJobs;
  },
  clock: container.clock,
  // Status webhooks (docs/webhooks.md): a document ready or failed, a ZIP import completed, a knowledge base deleted.
  get statusEvents() {
    return statusEventPublisher();
  },
  onPublishError: (error, eventType) =>
    logger.warn('a status event was not published: its webhooks are not sent', { eventType, error: error as Error }),
  get metrics() {
    return operationalMetrics();
  },
  get index(): KnowledgeIndex {
    index ??= installedKnowledgeIndex()?.index;
    // Bedrock cannot give chunk texts back; a metadata change re-ingests them from the stored file.
    index ??= deployedKnowledgeIndex({
      chunksOf: async (ref, uploadId) => {
        const doc = await container.documents.get(ref, ref.documentId);
        const current = doc && doc.status !== 'reserved' && (uploadId === undefined || doc.uploadId === uploadId);
        return current ? buildChunks(processingContainer, doc) : [];
      },
    });
    return index;
  },
  get embedder(): Embedder | null {
    return installedKnowledgeIndex()?.embedder ?? null;
  },
  get extractor() {
    extractor ??= new IsolatedTextExtractor(extractionLimits());
    return extractor;
  },
  get archives() {
    archives ??= new ZipArchiveImporter(
      {
        maxEntryBytes: positiveInteger('MAX_FILE_BYTES', DEFAULT_MAX_FILE_BYTES),
        maxEntries: positiveInteger('ZIP_MAX_ENTRIES', DEFAULT_ZIP_MAX_ENTRIES),
      },
      positiveInteger('ZIP_MAX_ARCHIVE_BYTES', DEFAULT_MAX_ARCHIVE_BYTES),
    );
    return archives;
  },
  get settings(): ProcessingSettings {
    settings ??= {
      maxFileBytes: positiveInteger('MAX_FILE_BYTES', DEFAULT_MAX_FILE_BYTES),
      confirmAttempts: positiveInteger('INDEX_CONFIRM_ATTEMPTS', 40),
      confirmDelaySeconds: positiveInteger('INDEX_CONFIRM_DELAY_SECONDS', 15),
    };
    return settings;
  },
};
