/**
 * Composition root of the processing worker: the API's adapters plus extraction, the archive importer and the
 * knowledge index. Kept apart from `container` so API Lambdas do not bundle PDF, DOCX or index libraries.
 * In AWS the index is the Bedrock knowledge base of each environment (BEDROCK_KNOWLEDGE_BASES), on LocalStack the
 * DynamoDB chunk table (CHUNK_INDEX_TABLE); the local runtime installs its embedded index with `useKnowledgeIndex`
 * before the worker starts.
 */

import { ZipArchiveImporter } from '../adapters/archive/zip-importer';
import { DocumentTextExtractor } from '../adapters/extraction/text-extractor';
import { buildChunks, type ProcessingDeps, type ProcessingSettings } from '../core/processing/process-document';
import type { ZipImportDeps } from '../core/processing/zip-job';
import type { Embedder, KnowledgeIndex } from '../ports/processing';
import { positiveInteger } from './config';
import { container } from './container';
import { deployedKnowledgeIndex, installedKnowledgeIndex } from './knowledge-index';

export { useKnowledgeIndex } from './knowledge-index';

/** Files in one archive: room for a batch of 1,000 documents with its CSV, twice over. */
export const DEFAULT_ZIP_MAX_ENTRIES = 2000;

/** 50 MB per file, the anchor of the issue and Bedrock's own limit. */
export const DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024;

let index: KnowledgeIndex | undefined;
let extractor: DocumentTextExtractor | undefined;
let archives: ZipArchiveImporter | undefined;
let settings: ProcessingSettings | undefined;

export const processingContainer: ProcessingDeps & ZipImportDeps = {
  get documents() {
    return container.documents;
  },
  get blobs() {
    return container.blobs;
  },
  get queue() {
    return container.queue;
  },
  get zipJobs() {
    return container.zipJobs;
  },
  clock: container.clock,
  get index(): KnowledgeIndex {
    index ??= installedKnowledgeIndex()?.index;
    // Bedrock cannot give chunk texts back; a metadata change re-ingests them from the stored file.
    index ??= deployedKnowledgeIndex({
      chunksOf: async (ref) => {
        const doc = await container.documents.get(ref, ref.documentId);
        return doc && doc.status !== 'reserved' ? buildChunks(processingContainer, doc) : [];
      },
    });
    return index;
  },
  get embedder(): Embedder | null {
    return installedKnowledgeIndex()?.embedder ?? null;
  },
  get extractor() {
    extractor ??= new DocumentTextExtractor();
    return extractor;
  },
  get archives() {
    archives ??= new ZipArchiveImporter({
      maxEntryBytes: positiveInteger('MAX_FILE_BYTES', DEFAULT_MAX_FILE_BYTES),
      maxEntries: positiveInteger('ZIP_MAX_ENTRIES', DEFAULT_ZIP_MAX_ENTRIES),
    });
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
