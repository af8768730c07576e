/**
 * Ports of document processing: text extraction, embedding, and the knowledge index a document's chunks go to
 * (an embedded index locally, an Amazon Bedrock knowledge base per environment in AWS).
 */
import { AppError } from '#core/errors';
import type { ChunkGeneration, DatasetRef } from '#core/knowledge/document';

export type { ChunkGeneration } from '#core/knowledge/document';

export interface ExtractedText {
  readonly text: string;
  /** What the bytes turned out to be: `text`, `markdown`, `html`, `csv`, `json`, `pdf`, `docx`. */
  readonly format: string;
}

export interface TextExtractor {
  /** Text of a file, judged by its bytes first and its name second; throws ProcessingError when it cannot. */
  extract(bytes: Buffer, hints: { fileName: string; contentType: string }): Promise<ExtractedText>;
}

export interface DocumentRef extends DatasetRef {
  readonly documentId: string;
}

/** Metadata every chunk carries, so retrieval can filter by labels and return the custom metadata. */
export interface ChunkMetadata {
  readonly label1: string | null;
  readonly label2: string | null;
  readonly svc_internal_meta1: string | null;
  readonly svc_internal_meta2: string | null;
  readonly svc_internal_meta3: string | null;
  readonly svc_internal_meta4: string | null;
}

/** The keys of ChunkMetadata, in the order every index stores them. */
export const CHUNK_METADATA_KEYS = [
  'label1',
  'label2',
  'svc_internal_meta1',
  'svc_internal_meta2',
  'svc_internal_meta3',
  'svc_internal_meta4',
] as const satisfies readonly (keyof ChunkMetadata)[];

export interface IndexedChunk extends DocumentRef, ChunkMetadata {
  /** Stable for the same document and content: `<documentId>#<position>#<hash of text>`. */
  readonly chunkId: string;
  readonly s3Key: string;
  /** 0-based order of the chunk in its document. */
  readonly position: number;
  readonly text: string;
  /** Present when an embedder is configured. */
  readonly vector?: readonly number[];
}

export type FilterOperator = 'equals' | 'notEquals' | 'greaterThan' | 'lessThan';
export const FILTERABLE_KEYS = ['label1', 'label2'] as const;
export type FilterableKey = (typeof FILTERABLE_KEYS)[number];

export interface IndexFilter {
  readonly key: FilterableKey;
  readonly operator: FilterOperator;
  readonly value: string;
}

export interface IndexQuery {
  /** The tenant scope: always ANDed in, never overridable by filters. */
  readonly scope: DatasetRef;
  readonly text: string;
  /** Vector of `text` when an embedder is configured (hybrid search); lexical only otherwise. */
  readonly vector?: readonly number[];
  readonly filters: readonly IndexFilter[];
  readonly limit: number;
}

export interface IndexHit {
  readonly chunk: Omit<IndexedChunk, 'vector'>;
  /** Higher is better, on a fixed 0..1 scale that does not depend on the other results. */
  readonly score: number;
  /** The lexical and vector scores a hybrid score combines (absent otherwise), for `explain`. */
  readonly parts?: { readonly lexical: number; readonly vector: number };
}

/** A page of one document's chunks, in position order (`listDocumentChunks`). */
export interface DocumentChunkPage {
  readonly chunks: readonly Omit<IndexedChunk, 'vector'>[];
  /** How many chunks the document has in the index, the pages before and after this one included. */
  readonly total: number;
}

/** Where a page of a document's chunks starts and how many it holds at most. */
export interface DocumentChunkRange {
  /** The page starts after this position; null: at the first chunk. */
  readonly afterPosition: number | null;
  readonly limit: number;
}

/**
 * What a document record knows of its chunks in the index: every upload whose chunks may be there (written before
 * they are indexed, narrowed once the others are removed). Undefined for a record written before this was kept: the
 * index then finds the chunks by itself (Bedrock: by listing the whole data source).
 */
export type IndexedChunks = readonly ChunkGeneration[] | undefined;

/** `indexed` with `generation` in it (the larger count when the upload is there already). */
export function withGeneration(indexed: readonly ChunkGeneration[], generation: ChunkGeneration): ChunkGeneration[] {
  const others = indexed.filter((g) => g.uploadId !== generation.uploadId);
  const count = Math.max(generation.count, indexed.find((g) => g.uploadId === generation.uploadId)?.count ?? 0);
  return [...others, { uploadId: generation.uploadId, count }];
}

/**
 * The index operations take what the document record knows (`known`) as an optional last argument. An index that
 * finds a document's chunks by the document (the embedded and DynamoDB ones) ignores it; Bedrock addresses the
 * chunks by the ids it derives from it, and lists its data source only when the record knows nothing (`undefined`).
 */
export interface KnowledgeIndex {
  /**
   * Makes `chunks` the document's only chunks (idempotent: the same call twice leaves one set). `known.uploadId` is
   * the upload the chunks are of, `known.previous` what the record knew before: every other upload's chunks go.
   */
  replaceDocument(
    ref: DocumentRef,
    chunks: readonly IndexedChunk[],
    known?: { readonly uploadId: string; readonly previous: IndexedChunks },
  ): Promise<void>;
  /**
   * replaceDocument for a document too large to hold whole: its chunks arrive in parts (positions 0, 1, … in order)
   * and become the document's chunks at once when the last part is written, a staged commit: a reader sees the old
   * chunks or the new ones, never a mix or a part; a failure midway leaves the old ones. Resolves with how many were
   * written. Only an index that can stage writes has it (the embedded one); the others are given the chunks whole.
   */
  replaceDocumentInParts?(
    ref: DocumentRef,
    parts: AsyncIterable<readonly IndexedChunk[]>,
    known?: { readonly uploadId: string; readonly previous: IndexedChunks },
  ): Promise<number>;
  /** Removes every chunk of the document; nothing to remove is not an error. */
  deleteDocument(ref: DocumentRef, known?: IndexedChunks): Promise<void>;
  /**
   * Removes the chunks of these uploads of the document only, leaving those of its other uploads. Only an index that
   * names chunks by upload has it (Bedrock); the others keep chunks by document, and replaceDocument removes them all.
   */
  deleteUploads?(ref: DocumentRef, uploads: readonly ChunkGeneration[]): Promise<void>;
  /**
   * Sets labels and custom metadata on every chunk of the document, without re-embedding. `known.uploadId` is the
   * upload the document holds now; chunks of other uploads are on their way out and are left alone.
   */
  updateDocumentMetadata(
    ref: DocumentRef,
    metadata: ChunkMetadata,
    known?: { readonly uploadId: string; readonly indexed: IndexedChunks },
  ): Promise<void>;
  /**
   * How many chunks of the document (of upload `known`, when given) are retrievable now. An index that can fail a
   * chunk after taking it (Bedrock) may send such chunks again here: the caller's next count sees them.
   */
  countDocumentChunks(ref: DocumentRef, known?: ChunkGeneration): Promise<number>;
  query(query: IndexQuery): Promise<IndexHit[]>;
  /**
   * The document's chunks in position order, each exactly as a query hit would give it (text, position, labels, custom
   * metadata): the chunk view of a document (core/knowledge/list-document-chunks.ts). Undefined when the index cannot
   * say (Bedrock, for a document indexed before it kept a chunk manifest: a reindex writes one).
   */
  listDocumentChunks(ref: DocumentRef, range: DocumentChunkRange): Promise<DocumentChunkPage | undefined>;
  /** The filter exactly as the backend receives it (SQL where clause, Bedrock RetrievalFilter), for `explain`. */
  describeFilter?(scope: DatasetRef, filters: readonly IndexFilter[]): unknown;
}

/** What retrieval needs of an index: the retrieval functions are given only this (and bundle only the read half). */
export type KnowledgeRetrieval = Pick<KnowledgeIndex, 'query' | 'describeFilter'>;

/** What the chunk view needs of an index: listing one document's chunks (the API function bundles only this). */
export type KnowledgeChunkListing = Pick<KnowledgeIndex, 'listDocumentChunks'>;

/** The contract of `replaceDocument`: every chunk is of `ref`, and no chunkId repeats. Throws otherwise. */
export function assertChunksOfDocument(ref: DocumentRef, chunks: readonly IndexedChunk[]): void {
  const seen = new Set<string>();
  for (const chunk of chunks) {
    if (
      chunk.agentId !== ref.agentId ||
      chunk.environment !== ref.environment ||
      chunk.knowledgeBaseId !== ref.knowledgeBaseId ||
      chunk.documentId !== ref.documentId
    ) {
      throw new Error(`Chunk ${chunk.chunkId} does not belong to document ${ref.documentId} of this dataset`);
    }
    if (seen.has(chunk.chunkId)) throw new Error(`Duplicate chunkId ${chunk.chunkId}`);
    seen.add(chunk.chunkId);
  }
}

export interface Embedder {
  readonly dimensions: number;
  /**
   * The model whose vector space the vectors are in (`openai-compatible:nomic-embed-text`). Vectors of two models
   * are not comparable even when their dimensions agree, so an index keeps them apart by this name. Absent: the
   * dimensions alone tell the space (Titan V2, one model).
   */
  readonly vectorSpace?: string;
  /** One vector per text, in order; rejects with EmbedderError when the model fails. */
  embed(texts: readonly string[]): Promise<number[][]>;
}

/**
 * The embedding model failed: 502 when it answered badly or could not be reached, 504 when it did not answer in
 * time. Processing treats it as transient (the message is redelivered); retrieval answers the caller with it. The
 * message names the embedder and model, never the endpoint, key or body; `detail` holds those for the log.
 */
export class EmbedderError extends AppError {
  constructor(
    message: string,
    readonly detail: string,
    kind: 'unavailable' | 'timeout' = 'unavailable',
  ) {
    super(kind === 'timeout' ? 504 : 502, kind === 'timeout' ? 'EMBEDDER_TIMEOUT' : 'EMBEDDER_ERROR', message);
  }
}
