/**
 * The AWS KnowledgeIndex: one Amazon Bedrock knowledge base per environment, each with a custom data source whose
 * chunking strategy is NONE. Every chunk of the pipeline is one Bedrock custom document, ingested inline with its
 * metadata (bedrock-documents.ts); retrieval is Bedrock's Retrieve with the tenant scope and the label filters as a
 * RetrievalFilter (bedrock-filters.ts). The mapping, the filter semantics, "ready" and the costs are described in
 * docs/retrieval-aws.md.
 *
 * A chunk's Bedrock id names its document, upload and position (`uploadChunkId`), and the document record knows its
 * uploads and their chunk counts: every write, delete and metadata change addresses its ids directly, in calls that
 * grow with the document's chunks, never with the data source. Bedrock cannot list by document, so only for a record
 * older than that knowledge (the operations' `known` argument undefined) is the whole data source listed.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  type BedrockAgentClient,
  DeleteKnowledgeBaseDocumentsCommand,
  type DeleteKnowledgeBaseDocumentsCommandInput,
  GetKnowledgeBaseDocumentsCommand,
  type GetKnowledgeBaseDocumentsCommandInput,
  IngestKnowledgeBaseDocumentsCommand,
  type IngestKnowledgeBaseDocumentsCommandInput,
  type KnowledgeBaseDocument,
  type KnowledgeBaseDocumentDetail,
  ListKnowledgeBaseDocumentsCommand,
  type ListKnowledgeBaseDocumentsCommandInput,
} from '@aws-sdk/client-bedrock-agent';
import type { BedrockAgentRuntimeClient, RetrievalFilter } from '@aws-sdk/client-bedrock-agent-runtime';
import type { DatasetRef } from '#core/knowledge/document';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import {
  assertChunksOfDocument,
  type ChunkGeneration,
  type ChunkMetadata,
  type DocumentChunkPage,
  type DocumentChunkRange,
  type DocumentRef,
  type IndexedChunk,
  type IndexedChunks,
  type IndexFilter,
  type IndexHit,
  type IndexQuery,
  type KnowledgeIndex,
} from '#ports/processing';
import {
  bedrockDocumentId,
  bedrockDocumentPrefix,
  customIdentifier,
  documentIdOf,
  idOf,
  toBedrockDocument,
  uploadChunkId,
  uploadChunkIds,
} from './bedrock-documents';
import { type BedrockKnowledgeBase, type BedrockKnowledgeBases, BedrockRetrieval } from './bedrock-retrieval';
import type { ChunkManifests } from './chunk-manifests';

export {
  BEDROCK_KNOWLEDGE_BASES_VARIABLE,
  type BedrockKnowledgeBase,
  type BedrockKnowledgeBases,
  MAX_RETRIEVE_RESULTS,
  readKnowledgeBases,
} from './bedrock-retrieval';

/**
 * Documents an IngestKnowledgeBaseDocuments call sends. The API reference gives 1 to 10 items; the User Guide's direct
 * ingestion page speaks of up to 25 (a service quota). 10 is accepted under both readings, and ingestion is priced by
 * document, not by call (lib/stack-check/bedrock-constraints.ts; the stand-in found the 25 refused by the reference).
 */
export const MAX_INGEST_DOCUMENTS = 10;

/** DeleteKnowledgeBaseDocuments and GetKnowledgeBaseDocuments take at most 10 document identifiers a call. */
export const MAX_DELETE_DOCUMENTS = 10;

export const MAX_GET_DOCUMENTS = 10;

/** ListKnowledgeBaseDocuments returns at most 1,000 documents a page. */
export const LIST_PAGE_SIZE = 1000;

/** Bedrock statuses of a document that is on its way out: neither retrievable for long nor worth deleting again. */
const LEAVING = new Set(['DELETING', 'DELETE_IN_PROGRESS', 'NOT_FOUND']);

/** The one status that means "retrievable now". */
const INDEXED = 'INDEXED';

/** Bedrock took the document, then failed to index it: ingested again by a count of its upload. */
const FAILED = 'FAILED';

/**
 * The chunks of a document's current content with their text. Bedrock has no metadata-only update for custom
 * documents and no way to read a document's content back, so a metadata change re-ingests the texts from here.
 */
export interface ChunkTextSource {
  /** The chunks of the document's content; of upload `uploadId` only (none when the document holds another now). */
  chunksOf(ref: DocumentRef, uploadId?: string): Promise<readonly IndexedChunk[]>;
}

export interface BedrockKnowledgeIndexOptions {
  readonly agentClient: BedrockAgentClient;
  readonly runtimeClient: BedrockAgentRuntimeClient;
  /** One Bedrock knowledge base (with its custom data source) per environment. */
  readonly knowledgeBases: BedrockKnowledgeBases;
  readonly chunkTexts: ChunkTextSource;
  /** Every document's chunks as ingested, for the chunk view (chunk-manifests.ts): Bedrock cannot list them. */
  readonly manifests: ChunkManifests;
}

function batches<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

/**
 * A clientToken that is the same for the same request made from the same observed state, so a retried call is
 * deduplicated by Bedrock, and that differs once the documents it touches have changed since (their status and
 * update time are part of it), so a later request with equal content is never swallowed as a duplicate.
 */
export function clientToken(operation: string, request: unknown, priorState: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify([operation, request, priorState]))
    .digest('hex');
}

function stateOf(ids: readonly string[], existing: ReadonlyMap<string, KnowledgeBaseDocumentDetail>) {
  return ids.map((id) => {
    const detail = existing.get(id);
    return detail ? [detail.status ?? null, detail.updatedAt ? new Date(detail.updatedAt).toISOString() : null] : null;
  });
}

function refKey(ref: DocumentRef): string {
  return JSON.stringify([ref.environment, ref.agentId, ref.knowledgeBaseId, ref.documentId]);
}

function checkKey(ref: DocumentRef, upload: ChunkGeneration): string {
  return JSON.stringify([refKey(ref), upload.uploadId, upload.count]);
}

/** How many documents' ingested ids one process remembers for countDocumentChunks. */
const REMEMBERED_DOCUMENTS = 1000;

export class BedrockKnowledgeIndex implements KnowledgeIndex {
  private readonly agent: BedrockAgentClient;
  /** Retrieve: the half of this index the retrieval functions bundle alone (bedrock-retrieval.ts). */
  private readonly retrieval: BedrockRetrieval;
  private readonly knowledgeBases: BedrockKnowledgeBases;
  private readonly chunkTexts: ChunkTextSource;
  private readonly manifests: ChunkManifests;
  /** The ids the last replaceDocument of this process gave each document (insertion-ordered, bounded). */
  private readonly ingestedIds = new Map<string, readonly string[]>();
  /**
   * How many of an upload's new ids its replaceDocument found INDEXED when it checked them (by `checkKey`; a worker
   * processes several documents at once): the count that follows answers from this once instead of looking the same
   * ids up again (GetKnowledgeBaseDocuments is 5 calls a second an account). Insertion-ordered, bounded.
   */
  private readonly checks = new Map<string, number>();

  constructor(options: BedrockKnowledgeIndexOptions) {
    for (const environment of ENVIRONMENTS) {
      const kb = options.knowledgeBases[environment];
      if (!kb?.knowledgeBaseId || !kb.dataSourceId) {
        throw new Error(`No Bedrock knowledge base and data source configured for environment "${environment}"`);
      }
    }
    this.agent = options.agentClient;
    this.retrieval = new BedrockRetrieval(options.runtimeClient, options.knowledgeBases);
    this.knowledgeBases = options.knowledgeBases;
    this.chunkTexts = options.chunkTexts;
    this.manifests = options.manifests;
  }

  /**
   * Ingests every chunk (10 a call; re-ingesting an id overwrites it), deletes the document's ids that are not in the
   * new set, then checks that the new ids exist and ingests again any that do not (an ingest Bedrock took for a
   * duplicate of an earlier request whose documents have since been deleted).
   */
  async replaceDocument(
    ref: DocumentRef,
    chunks: readonly IndexedChunk[],
    known?: { readonly uploadId: string; readonly previous: IndexedChunks },
  ): Promise<void> {
    assertChunksOfDocument(ref, chunks);
    if (known) return this.replaceUpload(ref, chunks, known.uploadId, known.previous);
    const documents = chunks.map((chunk) => toBedrockDocument(chunk));
    const ids = documents.map(documentIdOf);
    const existing = await this.listDocument(ref);
    await this.ingest(ref.environment, documents, (request, batchIds) =>
      clientToken('ingest', request, stateOf(batchIds, existing)),
    );
    const keep = new Set(ids);
    const stale = [...existing.values()]
      .filter((detail) => !keep.has(idOf(detail) as string) && !LEAVING.has(detail.status ?? ''))
      .map((detail) => idOf(detail) as string);
    await this.delete(ref.environment, stale, existing);

    await this.ingestMissing(ref.environment, documents, ids);
    this.remember(ref, ids);
    await this.manifests.write(ref, null, chunks);
  }

  /** The chunks go, then the manifest: a deletion cut off between the two is done again whole by its redelivery. */
  async deleteDocument(ref: DocumentRef, known?: IndexedChunks): Promise<void> {
    this.ingestedIds.delete(refKey(ref));
    if (known !== undefined) {
      await this.deleteIds(ref.environment, uploadChunkIds(ref, known));
    } else {
      const existing = await this.listDocument(ref);
      const ids = [...existing.values()]
        .filter((detail) => !LEAVING.has(detail.status ?? ''))
        .map((detail) => idOf(detail) as string);
      await this.delete(ref.environment, ids, existing);
    }
    await this.manifests.remove(ref);
  }

  /** The document's chunks as ingested, from its manifest; undefined for a document indexed before manifests were kept. */
  listDocumentChunks(ref: DocumentRef, range: DocumentChunkRange): Promise<DocumentChunkPage | undefined> {
    return this.manifests.listDocumentChunks(ref, range);
  }

  /**
   * Bedrock has no metadata-only update for custom documents: the chunks that are in the index now are ingested
   * again, with their text from the ChunkTextSource and the new metadata (Bedrock re-embeds them). Chunks the source
   * gives that are not in the index (content changed meanwhile) are left to the processing of that content.
   */
  async updateDocumentMetadata(
    ref: DocumentRef,
    metadata: ChunkMetadata,
    known?: { readonly uploadId: string; readonly indexed: IndexedChunks },
  ): Promise<void> {
    if (known?.indexed !== undefined) await this.updateUploadMetadata(ref, metadata, known.uploadId, known.indexed);
    else await this.updateListedMetadata(ref, metadata);
    await this.manifests.setMetadata(ref, metadata, known?.uploadId);
  }

  /** updateDocumentMetadata of an older record, which knows no uploads: the data source is listed. */
  private async updateListedMetadata(ref: DocumentRef, metadata: ChunkMetadata): Promise<void> {
    const existing = await this.listDocument(ref);
    if (existing.size === 0) return;
    const chunks = await this.chunkTexts.chunksOf(ref);
    const documents = chunks
      .map((chunk) => ({ chunk, id: bedrockDocumentId(chunk) }))
      .filter(({ id }) => existing.has(id) && !LEAVING.has(existing.get(id)?.status ?? ''))
      .map(({ chunk }) => toBedrockDocument(chunk, metadata));
    await this.ingest(ref.environment, documents, (request, batchIds) =>
      clientToken('ingest', request, stateOf(batchIds, existing)),
    );
  }

  /**
   * Chunks of the document Bedrock reports INDEXED. With the upload known (or after a replaceDocument in this
   * process), exactly its ids are looked up (10 a call); otherwise the data source is listed and the document's ids
   * are counted.
   */
  async countDocumentChunks(ref: DocumentRef, known?: ChunkGeneration): Promise<number> {
    if (known) {
      const checked = this.checks.get(checkKey(ref, known));
      if (checked !== undefined) {
        this.checks.delete(checkKey(ref, known));
        return checked;
      }
      return this.countUpload(ref, known);
    }
    const remembered = this.ingestedIds.get(refKey(ref));
    const details = remembered ? await this.getDocuments(ref.environment, remembered) : await this.listDocument(ref);
    let indexed = 0;
    for (const detail of details.values()) if (detail.status === INDEXED) indexed++;
    return indexed;
  }

  describeFilter(scope: DatasetRef, filters: readonly IndexFilter[]): RetrievalFilter {
    return this.retrieval.describeFilter(scope, filters);
  }

  query(query: IndexQuery): Promise<IndexHit[]> {
    return this.retrieval.query(query);
  }

  /**
   * Removes the chunks of these uploads: their ids are looked up (10 a call) and those Bedrock holds are deleted, so
   * a repeated deletion sends no delete at all and an id Bedrock never had is never sent.
   */
  async deleteUploads(ref: DocumentRef, uploads: readonly ChunkGeneration[]): Promise<void> {
    await this.deleteIds(ref.environment, uploadChunkIds(ref, uploads));
    await this.manifests.removeUploads(ref, uploads);
  }

  // -------------------------------------------------------------------------------------------------------------

  /**
   * replaceDocument of a document whose record knows its uploads: the chunks go in under the ids of `uploadId`
   * (re-ingesting an id overwrites it), the other uploads' ids are deleted (and this upload's beyond its new count),
   * then the new ids are looked up and any Bedrock does not hold is ingested again. Calls: 2 per 10 chunks (ingest,
   * check; the check also answers the count that follows), plus 2 per 10 chunks removed (look up, delete). `previous` undefined (an older record): the data source is listed once to find
   * what else the document has there, the older content-named ids included.
   */
  /**
   * Ingests again, with a fresh token, those of `documents` (whose ids are `ids`) Bedrock does not hold or is removing:
   * an ingest it took for a duplicate of an earlier one (the deterministic token) whose documents were deleted since.
   * Returns what it found of them before.
   */
  private async ingestMissing(
    environment: DocumentRef['environment'],
    documents: readonly ReturnType<typeof toBedrockDocument>[],
    ids: readonly string[],
  ) {
    const details = await this.getDocuments(environment, ids);
    const missing = new Set(ids.filter((id) => !details.has(id) || LEAVING.has(details.get(id)?.status ?? '')));
    if (missing.size > 0) {
      await this.ingest(
        environment,
        documents.filter((_, i) => missing.has(ids[i])),
        () => randomUUID(),
      );
    }
    return details;
  }

  private async replaceUpload(
    ref: DocumentRef,
    chunks: readonly IndexedChunk[],
    uploadId: string,
    previous: IndexedChunks,
  ): Promise<void> {
    const ids = chunks.map((_, position) => uploadChunkId(ref, uploadId, position));
    const documents = chunks.map((chunk, position) => toBedrockDocument(chunk, chunk, ids[position]));
    // The same upload gives the same request: a redelivered message is deduplicated by Bedrock. An ingest taken for
    // a duplicate of one whose documents were deleted since is found below and sent again.
    await this.ingest(ref.environment, documents, (request) => clientToken('ingest', request, uploadId));
    const keep = new Set(ids);
    if (previous === undefined) {
      const existing = await this.listDocument(ref);
      const stale = [...existing.values()]
        .filter((detail) => !keep.has(idOf(detail) as string) && !LEAVING.has(detail.status ?? ''))
        .map((detail) => idOf(detail) as string);
      await this.delete(ref.environment, stale, existing);
    } else {
      const others = previous.filter((upload) => upload.uploadId !== uploadId);
      const beyond = uploadChunkIds(
        ref,
        previous.filter((upload) => upload.uploadId === uploadId),
      ).filter((id) => !keep.has(id));
      await this.deleteIds(ref.environment, [...uploadChunkIds(ref, others), ...beyond]);
    }
    const details = await this.ingestMissing(ref.environment, documents, ids);
    this.remember(ref, ids);
    await this.manifests.write(ref, uploadId, chunks);
    let indexed = 0;
    for (const detail of details.values()) if (detail.status === INDEXED) indexed++;
    this.checks.set(checkKey(ref, { uploadId, count: ids.length }), indexed);
    if (this.checks.size > REMEMBERED_DOCUMENTS) this.checks.delete(this.checks.keys().next().value as string);
  }

  /**
   * updateDocumentMetadata of a document whose record knows its uploads: the chunks of its current upload that
   * Bedrock holds (looked up by id, 10 a call) are ingested again with the new metadata. Other uploads' chunks are on
   * their way out (the processing of the current upload removes them) and are left alone.
   */
  private async updateUploadMetadata(
    ref: DocumentRef,
    metadata: ChunkMetadata,
    uploadId: string,
    indexed: readonly ChunkGeneration[],
  ): Promise<void> {
    const upload = indexed.find((generation) => generation.uploadId === uploadId);
    if (!upload || upload.count === 0) return;
    const ids = uploadChunkIds(ref, [upload]);
    const existing = await this.getDocuments(ref.environment, ids);
    if (existing.size === 0) return;
    const chunks = (await this.chunkTexts.chunksOf(ref, uploadId)).slice(0, upload.count);
    const documents = chunks
      .map((chunk, position) => ({ chunk, id: ids[position] }))
      .filter(({ id }) => existing.has(id) && !LEAVING.has(existing.get(id)?.status ?? ''))
      .map(({ chunk, id }) => toBedrockDocument(chunk, metadata, id));
    await this.ingest(ref.environment, documents, (request, batchIds) =>
      clientToken('ingest', request, stateOf(batchIds, existing)),
    );
  }

  /**
   * The upload's chunks Bedrock reports INDEXED. Those it reports FAILED (it accepted them, then could not embed or
   * store them: under a bulk import, a throttled embedding model is one cause) are ingested again, with a fresh
   * token, from the document's current content, so a transient failure inside Bedrock does not end the document
   * INDEXING_FAILED; the confirm attempts that call this bound how often.
   */
  private async countUpload(ref: DocumentRef, upload: ChunkGeneration): Promise<number> {
    const ids = uploadChunkIds(ref, [upload]);
    const details = await this.getDocuments(ref.environment, ids);
    let indexed = 0;
    const failed = new Set<string>();
    for (const [id, detail] of details) {
      if (detail.status === INDEXED) indexed++;
      else if (detail.status === FAILED) failed.add(id);
    }
    if (failed.size > 0) {
      const chunks = await this.chunkTexts.chunksOf(ref, upload.uploadId);
      // Another count means other content (the document moved on): its own processing indexes it.
      if (chunks.length === upload.count) {
        const documents = chunks
          .map((chunk, position) => ({ chunk, id: ids[position] }))
          .filter(({ id }) => failed.has(id))
          .map(({ chunk, id }) => toBedrockDocument(chunk, chunk, id));
        await this.ingest(ref.environment, documents, () => randomUUID());
      }
    }
    return indexed;
  }

  /** Deletes those of `ids` Bedrock holds and is not deleting already (looked up first, 10 a call). */
  private async deleteIds(environment: Environment, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const existing = await this.getDocuments(environment, ids);
    const present = ids.filter((id) => existing.has(id) && !LEAVING.has(existing.get(id)?.status ?? ''));
    await this.delete(environment, present, existing);
  }

  private knowledgeBase(environment: Environment): BedrockKnowledgeBase {
    const kb = this.knowledgeBases[environment];
    if (!kb) throw new Error(`No Bedrock knowledge base configured for environment "${environment}"`);
    return kb;
  }

  private remember(ref: DocumentRef, ids: readonly string[]): void {
    const key = refKey(ref);
    this.ingestedIds.delete(key);
    this.ingestedIds.set(key, ids);
    if (this.ingestedIds.size > REMEMBERED_DOCUMENTS) {
      this.ingestedIds.delete(this.ingestedIds.keys().next().value as string);
    }
  }

  /**
   * The document's Bedrock documents by id. Bedrock cannot list by metadata or prefix, so this pages through the whole
   * data source (1,000 a page) and keeps the ids with the document's prefix: its cost grows with the environment.
   */
  private async listDocument(ref: DocumentRef): Promise<Map<string, KnowledgeBaseDocumentDetail>> {
    const { knowledgeBaseId, dataSourceId } = this.knowledgeBase(ref.environment);
    const prefix = bedrockDocumentPrefix(ref);
    const found = new Map<string, KnowledgeBaseDocumentDetail>();
    let nextToken: string | undefined;
    do {
      const input: ListKnowledgeBaseDocumentsCommandInput = {
        knowledgeBaseId,
        dataSourceId,
        maxResults: LIST_PAGE_SIZE,
        ...(nextToken ? { nextToken } : {}),
      };
      const page = await this.agent.send(new ListKnowledgeBaseDocumentsCommand(input));
      for (const detail of page.documentDetails ?? []) {
        const id = idOf(detail);
        if (id?.startsWith(prefix)) found.set(id, detail);
      }
      nextToken = page.nextToken;
    } while (nextToken);
    return found;
  }

  private async getDocuments(
    environment: Environment,
    ids: readonly string[],
  ): Promise<Map<string, KnowledgeBaseDocumentDetail>> {
    const { knowledgeBaseId, dataSourceId } = this.knowledgeBase(environment);
    const found = new Map<string, KnowledgeBaseDocumentDetail>();
    for (const batch of batches(ids, MAX_GET_DOCUMENTS)) {
      const input: GetKnowledgeBaseDocumentsCommandInput = {
        knowledgeBaseId,
        dataSourceId,
        documentIdentifiers: batch.map(customIdentifier),
      };
      const response = await this.agent.send(new GetKnowledgeBaseDocumentsCommand(input));
      for (const detail of response.documentDetails ?? []) {
        const id = idOf(detail);
        if (id && detail.status !== 'NOT_FOUND') found.set(id, detail);
      }
    }
    return found;
  }

  private async ingest(
    environment: Environment,
    documents: readonly KnowledgeBaseDocument[],
    tokenFor: (request: IngestKnowledgeBaseDocumentsCommandInput, ids: readonly string[]) => string,
  ): Promise<void> {
    const { knowledgeBaseId, dataSourceId } = this.knowledgeBase(environment);
    for (const batch of batches(documents, MAX_INGEST_DOCUMENTS)) {
      const request: IngestKnowledgeBaseDocumentsCommandInput = { knowledgeBaseId, dataSourceId, documents: batch };
      const input: IngestKnowledgeBaseDocumentsCommandInput = {
        ...request,
        clientToken: tokenFor(request, batch.map(documentIdOf)),
      };
      await this.agent.send(new IngestKnowledgeBaseDocumentsCommand(input));
    }
  }

  private async delete(
    environment: Environment,
    ids: readonly string[],
    priorState: ReadonlyMap<string, KnowledgeBaseDocumentDetail>,
  ): Promise<void> {
    const { knowledgeBaseId, dataSourceId } = this.knowledgeBase(environment);
    for (const batch of batches(ids, MAX_DELETE_DOCUMENTS)) {
      const request = { knowledgeBaseId, dataSourceId, documentIdentifiers: batch.map(customIdentifier) };
      const input: DeleteKnowledgeBaseDocumentsCommandInput = {
        ...request,
        clientToken: clientToken('delete', request, stateOf(batch, priorState)),
      };
      await this.agent.send(new DeleteKnowledgeBaseDocumentsCommand(input));
    }
  }
}
