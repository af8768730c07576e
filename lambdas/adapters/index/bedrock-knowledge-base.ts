/**
 * The AWS KnowledgeIndex: one Amazon Bedrock knowledge base per environment, each with a custom data source whose
 * chunking strategy is NONE. Every chunk of the pipeline is one Bedrock custom document, ingested inline with its
 * metadata; retrieval is Bedrock's Retrieve with the tenant scope and the label filters as a RetrievalFilter.
 * The mapping, the filter semantics, "ready" and the costs are described in docs/retrieval-aws.md.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  BedrockAgentClient,
  DeleteKnowledgeBaseDocumentsCommand,
  type DeleteKnowledgeBaseDocumentsCommandInput,
  type DocumentIdentifier,
  GetKnowledgeBaseDocumentsCommand,
  type GetKnowledgeBaseDocumentsCommandInput,
  IngestKnowledgeBaseDocumentsCommand,
  type IngestKnowledgeBaseDocumentsCommandInput,
  type KnowledgeBaseDocument,
  type KnowledgeBaseDocumentDetail,
  ListKnowledgeBaseDocumentsCommand,
  type ListKnowledgeBaseDocumentsCommandInput,
  type MetadataAttribute,
} from '@aws-sdk/client-bedrock-agent';
import {
  BedrockAgentRuntimeClient,
  type KnowledgeBaseRetrievalResult,
  type RetrievalFilter,
  RetrieveCommand,
  type RetrieveCommandInput,
} from '@aws-sdk/client-bedrock-agent-runtime';
import type { DatasetRef } from '../../core/knowledge/document';
import { ENVIRONMENTS, type Environment } from '../../core/knowledge/fields';
import {
  assertChunksOfDocument,
  type ChunkMetadata,
  type DocumentRef,
  FILTERABLE_KEYS,
  type IndexedChunk,
  type IndexFilter,
  type IndexHit,
  type IndexQuery,
  type KnowledgeIndex,
} from '../../ports/processing';

// ---------------------------------------------------------------------------------------------------------------
// Configuration and limits

/** The environment variable `bedrockIndexFromEnv` reads: JSON `{ "<environment>": { knowledgeBaseId, dataSourceId } }`. */
export const BEDROCK_KNOWLEDGE_BASES_VARIABLE = 'BEDROCK_KNOWLEDGE_BASES';

/** IngestKnowledgeBaseDocuments takes at most 25 documents a call. */
export const MAX_INGEST_DOCUMENTS = 25;
/** DeleteKnowledgeBaseDocuments and GetKnowledgeBaseDocuments take at most 10 document identifiers a call. */
export const MAX_DELETE_DOCUMENTS = 10;
export const MAX_GET_DOCUMENTS = 10;
/** ListKnowledgeBaseDocuments returns at most 1,000 documents a page. */
export const LIST_PAGE_SIZE = 1000;
/** Retrieve returns 1 to 100 results. */
export const MAX_RETRIEVE_RESULTS = 100;
/** A custom document identifier is 1 to 2,048 characters. */
export const MAX_DOCUMENT_ID_LENGTH = 2048;

/** Bedrock statuses of a document that is on its way out: neither retrievable for long nor worth deleting again. */
const LEAVING = new Set(['DELETING', 'DELETE_IN_PROGRESS', 'NOT_FOUND']);
/** The one status that means "retrievable now". */
const INDEXED = 'INDEXED';

// ---------------------------------------------------------------------------------------------------------------
// Metadata: what each Bedrock document carries

/**
 * The label order keys: a label as LABEL_ORDER_PARTS numbers that compare like the label's bytes (see `labelOrder`),
 * so that greaterThan / lessThan, which Bedrock (and S3 Vectors) only apply to numbers, work on string labels.
 */
export const LABEL_ORDER_PARTS = 7;
/** Characters per order part: 80^8 < 2^53, so every part is an integer a double holds exactly. */
export const LABEL_ORDER_CHARS_PER_PART = 8;
const ORDER_BASE = 80;
/** The label alphabet of the spec (`[a-z0-9_-]` and the colon), in byte order. */
const LABEL_ALPHABET = '-0123456789:_abcdefghijklmnopqrstuvwxyz';

export function labelOrderKey(label: 'label1' | 'label2', part: number): string {
  return `${label}_order${part}`;
}

/** Custom metadata is stored with this prefix, so an empty string (Bedrock refuses empty values) survives the trip. */
const CUSTOM_META_PREFIX = '=';
const CUSTOM_META_KEYS = [
  'svc_internal_meta1',
  'svc_internal_meta2',
  'svc_internal_meta3',
  'svc_internal_meta4',
] as const;

/**
 * Metadata keys the vector index stores but never filters on. S3 Vectors allows 2 KB of filterable metadata a vector
 * and up to 10 non-filterable keys per index; Bedrock's own text and metadata fields must be among them, and so must
 * our long values (s3Key up to 1,024 characters, four custom metadata fields up to 500 each). The CDK construct
 * creates the vector index with exactly this list.
 */
export const NON_FILTERABLE_METADATA_KEYS = [
  'AMAZON_BEDROCK_TEXT',
  'AMAZON_BEDROCK_METADATA',
  'chunkId',
  's3Key',
  ...CUSTOM_META_KEYS,
] as const;

// ---------------------------------------------------------------------------------------------------------------
// Public types

export interface BedrockKnowledgeBase {
  readonly knowledgeBaseId: string;
  readonly dataSourceId: string;
}

export type BedrockKnowledgeBases = Readonly<Record<Environment, BedrockKnowledgeBase>>;

/**
 * The chunks of a document's current content with their text. Bedrock has no metadata-only update for custom
 * documents and no way to read a document's content back, so a metadata change re-ingests the texts from here.
 */
export interface ChunkTextSource {
  chunksOf(ref: DocumentRef): Promise<readonly IndexedChunk[]>;
}

export interface BedrockKnowledgeIndexOptions {
  readonly agentClient: BedrockAgentClient;
  readonly runtimeClient: BedrockAgentRuntimeClient;
  /** One Bedrock knowledge base (with its custom data source) per environment. */
  readonly knowledgeBases: BedrockKnowledgeBases;
  readonly chunkTexts: ChunkTextSource;
}

// ---------------------------------------------------------------------------------------------------------------
// Identifiers

/**
 * Percent-encodes every character outside `[A-Za-z0-9._:#/-]` (UTF-8 bytes, `%XX`). Injective, and the encoding of a
 * prefix is a prefix of the encoding, so "the ids of a document" stays a prefix test.
 */
function encodeIdPart(value: string): string {
  return value.replace(/[^A-Za-z0-9._:#/-]/gu, (char) =>
    [...Buffer.from(char, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/** Every Bedrock id of the document starts with this: `<agentId>/<knowledgeBaseId>/<documentId>#`. */
export function bedrockDocumentPrefix(ref: DocumentRef): string {
  return encodeIdPart(`${ref.agentId}/${ref.knowledgeBaseId}/${ref.documentId}#`);
}

/** The Bedrock custom document id of a chunk: `<agentId>/<knowledgeBaseId>/<chunkId>` (chunkId starts `<documentId>#`). */
export function bedrockDocumentId(chunk: Pick<IndexedChunk, 'agentId' | 'knowledgeBaseId' | 'documentId' | 'chunkId'>) {
  if (!chunk.chunkId.startsWith(`${chunk.documentId}#`)) {
    throw new Error(`chunkId "${chunk.chunkId}" must start with "<documentId>#" (${chunk.documentId}#)`);
  }
  const id = encodeIdPart(`${chunk.agentId}/${chunk.knowledgeBaseId}/${chunk.chunkId}`);
  if (id.length > MAX_DOCUMENT_ID_LENGTH) {
    throw new Error(
      `Bedrock document id of chunk ${chunk.chunkId} is ${id.length} characters (max ${MAX_DOCUMENT_ID_LENGTH})`,
    );
  }
  return id;
}

function customIdentifier(id: string): DocumentIdentifier {
  return { dataSourceType: 'CUSTOM', custom: { id } };
}

function documentIdOf(document: KnowledgeBaseDocument): string {
  return document.content?.custom?.customDocumentIdentifier?.id as string;
}

function idOf(detail: KnowledgeBaseDocumentDetail): string | undefined {
  return detail.identifier?.custom?.id;
}

// ---------------------------------------------------------------------------------------------------------------
// Label order: greaterThan / lessThan on string labels

function orderDigit(codePoint: number): number {
  // Alphabet characters get even digits 2..78 and 0 ends the label; a character outside the alphabet (only a filter
  // value can have one) gets the odd digit between its alphabet neighbours, so comparisons stay exact.
  let below = 0;
  for (const symbol of LABEL_ALPHABET) {
    const code = symbol.codePointAt(0) as number;
    if (code === codePoint) return 2 * (below + 1);
    if (code < codePoint) below++;
  }
  return 2 * below + 1;
}

/**
 * A string as LABEL_ORDER_PARTS integers, LABEL_ORDER_CHARS_PER_PART characters each in base 80 and padded with 0,
 * so that comparing the tuples lexicographically compares the strings byte-wise (as the local index does) for labels
 * of the spec's alphabet and up to 56 characters; longer strings are cut (labels have at most 50).
 */
export function labelOrder(value: string): number[] {
  const digits = [...value].slice(0, LABEL_ORDER_PARTS * LABEL_ORDER_CHARS_PER_PART).map((char) => {
    return orderDigit(char.codePointAt(0) as number);
  });
  const parts: number[] = [];
  for (let part = 0; part < LABEL_ORDER_PARTS; part++) {
    let number = 0;
    for (let i = 0; i < LABEL_ORDER_CHARS_PER_PART; i++) {
      number = number * ORDER_BASE + (digits[part * LABEL_ORDER_CHARS_PER_PART + i] ?? 0);
    }
    parts.push(number);
  }
  return parts;
}

// ---------------------------------------------------------------------------------------------------------------
// Chunk → Bedrock document

function stringAttribute(key: string, value: string): MetadataAttribute {
  return { key, value: { type: 'STRING', stringValue: value } };
}

function numberAttribute(key: string, value: number): MetadataAttribute {
  return { key, value: { type: 'NUMBER', numberValue: value } };
}

/**
 * The inline attributes of a chunk. A null label or custom metadata field is left out (Bedrock stores no null), which
 * is what makes notEquals match chunks without the label, as the local index's `IS NULL OR <>` does.
 */
export function metadataAttributes(chunk: IndexedChunk, metadata: ChunkMetadata = chunk): MetadataAttribute[] {
  const attributes: MetadataAttribute[] = [
    stringAttribute('agentId', chunk.agentId),
    stringAttribute('knowledgeBaseId', chunk.knowledgeBaseId),
    stringAttribute('environment', chunk.environment),
    stringAttribute('documentId', chunk.documentId),
    stringAttribute('chunkId', chunk.chunkId),
    stringAttribute('s3Key', chunk.s3Key),
    numberAttribute('position', chunk.position),
  ];
  for (const label of FILTERABLE_KEYS) {
    const value = metadata[label];
    // An empty label breaks the label rules and cannot be stored (Bedrock needs 1+ characters): it reads as no label.
    if (value === null || value === '') continue;
    attributes.push(stringAttribute(label, value));
    labelOrder(value).forEach((part, i) => {
      attributes.push(numberAttribute(labelOrderKey(label, i), part));
    });
  }
  for (const key of CUSTOM_META_KEYS) {
    const value = metadata[key];
    if (value !== null) attributes.push(stringAttribute(key, `${CUSTOM_META_PREFIX}${value}`));
  }
  return attributes;
}

export function toBedrockDocument(chunk: IndexedChunk, metadata: ChunkMetadata = chunk): KnowledgeBaseDocument {
  return {
    content: {
      dataSourceType: 'CUSTOM',
      custom: {
        customDocumentIdentifier: { id: bedrockDocumentId(chunk) },
        sourceType: 'IN_LINE',
        inlineContent: { type: 'TEXT', textContent: { data: chunk.text } },
      },
    },
    metadata: { type: 'IN_LINE_ATTRIBUTE', inlineAttributes: metadataAttributes(chunk, metadata) },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Filters → RetrievalFilter

/** AND of conditions, nested so that every andAll has 2 to 5 members (Bedrock's bounds); one condition stays bare. */
function allOf(conditions: readonly RetrievalFilter[]): RetrievalFilter {
  if (conditions.length === 0) throw new Error('allOf needs at least one condition');
  if (conditions.length === 1) return conditions[0];
  if (conditions.length <= 5) return { andAll: [...conditions] };
  return { andAll: [...conditions.slice(0, 4), allOf(conditions.slice(4))] };
}

/**
 * label > value (or <): the lexicographic comparison of the order tuples, written out as
 * `p0 > a0 OR (p0 = a0 AND (p1 > a1 OR (p1 = a1 AND ...)))` over the parts the value reaches. A chunk without the
 * label has no order keys, so it never matches, like a NULL in the local index.
 */
function rangeFilter(label: 'label1' | 'label2', operator: 'greaterThan' | 'lessThan', value: string): RetrievalFilter {
  const target = labelOrder(value);
  const length = [...value].length;
  const parts = Math.min(LABEL_ORDER_PARTS, Math.floor(length / LABEL_ORDER_CHARS_PER_PART) + 1);
  const compare = (part: number): RetrievalFilter => {
    const attribute = { key: labelOrderKey(label, part), value: target[part] };
    const strict: RetrievalFilter = operator === 'greaterThan' ? { greaterThan: attribute } : { lessThan: attribute };
    if (part === parts - 1) return strict;
    return { orAll: [strict, { andAll: [{ equals: attribute }, compare(part + 1)] }] };
  };
  return compare(0);
}

function labelFilter(filter: IndexFilter): RetrievalFilter {
  if (!(FILTERABLE_KEYS as readonly string[]).includes(filter.key)) {
    throw new Error(`Cannot filter on "${filter.key}": only ${FILTERABLE_KEYS.join(', ')} are filterable`);
  }
  switch (filter.operator) {
    case 'equals':
      return { equals: { key: filter.key, value: filter.value } };
    case 'notEquals':
      // Bedrock's notEquals also matches a chunk without the key: the same as the local `IS NULL OR <>`.
      return { notEquals: { key: filter.key, value: filter.value } };
    case 'greaterThan':
    case 'lessThan':
      return rangeFilter(filter.key, filter.operator, filter.value);
    default:
      throw new Error(`Unknown filter operator "${String(filter.operator)}"`);
  }
}

/**
 * The RetrievalFilter a query sends: the tenant scope (agent, knowledge base and environment; the environment also
 * picks the Bedrock knowledge base) ANDed with every label filter. Exported for `explain` and for tests.
 */
export function toRetrievalFilter(scope: DatasetRef, filters: readonly IndexFilter[]): RetrievalFilter {
  return allOf([
    { equals: { key: 'agentId', value: scope.agentId } },
    { equals: { key: 'knowledgeBaseId', value: scope.knowledgeBaseId } },
    { equals: { key: 'environment', value: scope.environment } },
    ...filters.map(labelFilter),
  ]);
}

/** The same filters evaluated on a returned chunk: a second line of defence, never a substitute for the filter. */
function matches(chunk: Omit<IndexedChunk, 'vector'>, scope: DatasetRef, filters: readonly IndexFilter[]): boolean {
  if (
    chunk.agentId !== scope.agentId ||
    chunk.knowledgeBaseId !== scope.knowledgeBaseId ||
    chunk.environment !== scope.environment
  ) {
    return false;
  }
  return filters.every((filter) => {
    const value = chunk[filter.key];
    if (value === null) return filter.operator === 'notEquals';
    // Byte-wise, as the local index compares strings.
    const order = Buffer.compare(Buffer.from(value, 'utf8'), Buffer.from(filter.value, 'utf8'));
    switch (filter.operator) {
      case 'equals':
        return order === 0;
      case 'notEquals':
        return order !== 0;
      case 'greaterThan':
        return order > 0;
      case 'lessThan':
        return order < 0;
      default:
        return false;
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Retrieve result → IndexHit

/** Bedrock's score is higher-is-better; it is clamped onto 0..1 (a missing or invalid score is 0). */
export function normalizeScore(score: number | undefined): number {
  if (typeof score !== 'number' || Number.isNaN(score)) return 0;
  return Math.min(1, Math.max(0, score));
}

function stringOf(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function customMetaOf(value: unknown): string | null {
  return typeof value === 'string' && value.startsWith(CUSTOM_META_PREFIX)
    ? value.slice(CUSTOM_META_PREFIX.length)
    : null;
}

/** A Retrieve result as the chunk it came from; undefined when it lacks the metadata every chunk of ours has. */
export function chunkOfResult(result: KnowledgeBaseRetrievalResult): Omit<IndexedChunk, 'vector'> | undefined {
  const metadata = (result.metadata ?? {}) as Record<string, unknown>;
  const agentId = stringOf(metadata.agentId);
  const knowledgeBaseId = stringOf(metadata.knowledgeBaseId);
  const environment = stringOf(metadata.environment);
  const documentId = stringOf(metadata.documentId);
  const chunkId = stringOf(metadata.chunkId);
  const s3Key = stringOf(metadata.s3Key);
  const position = Number(metadata.position);
  if (!agentId || !knowledgeBaseId || !documentId || !chunkId || !s3Key || !Number.isInteger(position))
    return undefined;
  if (!(ENVIRONMENTS as readonly string[]).includes(environment ?? '')) return undefined;
  return {
    chunkId,
    agentId,
    environment: environment as Environment,
    knowledgeBaseId,
    documentId,
    s3Key,
    position,
    text: result.content?.text ?? '',
    label1: stringOf(metadata.label1),
    label2: stringOf(metadata.label2),
    svc_internal_meta1: customMetaOf(metadata.svc_internal_meta1),
    svc_internal_meta2: customMetaOf(metadata.svc_internal_meta2),
    svc_internal_meta3: customMetaOf(metadata.svc_internal_meta3),
    svc_internal_meta4: customMetaOf(metadata.svc_internal_meta4),
  };
}

// ---------------------------------------------------------------------------------------------------------------

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

/** How many documents' ingested ids one process remembers for countDocumentChunks. */
const REMEMBERED_DOCUMENTS = 1000;

export class BedrockKnowledgeIndex implements KnowledgeIndex {
  private readonly agent: BedrockAgentClient;
  private readonly runtime: BedrockAgentRuntimeClient;
  private readonly knowledgeBases: BedrockKnowledgeBases;
  private readonly chunkTexts: ChunkTextSource;
  /** The ids the last replaceDocument of this process gave each document (insertion-ordered, bounded). */
  private readonly ingestedIds = new Map<string, readonly string[]>();

  constructor(options: BedrockKnowledgeIndexOptions) {
    for (const environment of ENVIRONMENTS) {
      const kb = options.knowledgeBases[environment];
      if (!kb?.knowledgeBaseId || !kb.dataSourceId) {
        throw new Error(`No Bedrock knowledge base and data source configured for environment "${environment}"`);
      }
    }
    this.agent = options.agentClient;
    this.runtime = options.runtimeClient;
    this.knowledgeBases = options.knowledgeBases;
    this.chunkTexts = options.chunkTexts;
  }

  /**
   * Ingests every chunk (25 a call; re-ingesting an id overwrites it), deletes the document's ids that are not in the
   * new set, then checks that the new ids exist and ingests again any that do not (an ingest Bedrock took for a
   * duplicate of an earlier request whose documents have since been deleted).
   */
  async replaceDocument(ref: DocumentRef, chunks: readonly IndexedChunk[]): Promise<void> {
    assertChunksOfDocument(ref, chunks);
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

    const details = await this.getDocuments(ref.environment, ids);
    const missing = new Set(ids.filter((id) => !details.has(id) || LEAVING.has(details.get(id)?.status ?? '')));
    if (missing.size > 0) {
      // A fresh token: the deterministic one is exactly what Bedrock took for a duplicate.
      await this.ingest(
        ref.environment,
        documents.filter((_, i) => missing.has(ids[i])),
        () => randomUUID(),
      );
    }
    this.remember(ref, ids);
  }

  async deleteDocument(ref: DocumentRef): Promise<void> {
    this.ingestedIds.delete(refKey(ref));
    const existing = await this.listDocument(ref);
    const ids = [...existing.values()]
      .filter((detail) => !LEAVING.has(detail.status ?? ''))
      .map((detail) => idOf(detail) as string);
    await this.delete(ref.environment, ids, existing);
  }

  /**
   * Bedrock has no metadata-only update for custom documents: the chunks that are in the index now are ingested
   * again, with their text from the ChunkTextSource and the new metadata (Bedrock re-embeds them). Chunks the source
   * gives that are not in the index (content changed meanwhile) are left to the processing of that content.
   */
  async updateDocumentMetadata(ref: DocumentRef, metadata: ChunkMetadata): Promise<void> {
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
   * Chunks of the document Bedrock reports INDEXED. After a replaceDocument in this process, exactly the new ids are
   * looked up (10 a call); otherwise the data source is listed and the document's ids are counted.
   */
  async countDocumentChunks(ref: DocumentRef): Promise<number> {
    const remembered = this.ingestedIds.get(refKey(ref));
    const details = remembered ? await this.getDocuments(ref.environment, remembered) : await this.listDocument(ref);
    let indexed = 0;
    for (const detail of details.values()) if (detail.status === INDEXED) indexed++;
    return indexed;
  }

  /** The Bedrock RetrievalFilter a query with this scope and these filters sends (for `explain`). */
  describeFilter(scope: DatasetRef, filters: readonly IndexFilter[]): RetrievalFilter {
    return toRetrievalFilter(scope, filters);
  }

  async query(query: IndexQuery): Promise<IndexHit[]> {
    if (!(query.limit > 0) || query.text.trim() === '') return [];
    const { knowledgeBaseId } = this.knowledgeBase(query.scope.environment);
    const input: RetrieveCommandInput = {
      knowledgeBaseId,
      retrievalQuery: { text: query.text },
      retrievalConfiguration: {
        vectorSearchConfiguration: {
          numberOfResults: Math.min(MAX_RETRIEVE_RESULTS, Math.floor(query.limit)),
          filter: toRetrievalFilter(query.scope, query.filters),
        },
      },
    };
    const response = await this.runtime.send(new RetrieveCommand(input));
    const hits: IndexHit[] = [];
    for (const result of response.retrievalResults ?? []) {
      const chunk = chunkOfResult(result);
      if (chunk && matches(chunk, query.scope, query.filters))
        hits.push({ chunk, score: normalizeScore(result.score) });
    }
    return hits.sort((a, b) => b.score - a.score).slice(0, query.limit);
  }

  // -------------------------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------------------------
// Configuration from the environment

/** Reads BEDROCK_KNOWLEDGE_BASES; a missing or malformed value fails loudly, naming the variable. */
export function readKnowledgeBases(
  env: Readonly<Record<string, string | undefined>> = process.env,
): BedrockKnowledgeBases {
  const raw = env[BEDROCK_KNOWLEDGE_BASES_VARIABLE];
  if (raw === undefined || raw === '') {
    throw new Error(`Missing configuration: environment variable ${BEDROCK_KNOWLEDGE_BASES_VARIABLE}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`Invalid configuration: ${BEDROCK_KNOWLEDGE_BASES_VARIABLE} is not JSON`);
  }
  const result = {} as Record<Environment, BedrockKnowledgeBase>;
  for (const environment of ENVIRONMENTS) {
    const entry = (parsed as Record<string, unknown> | null)?.[environment] as Record<string, unknown> | undefined;
    const knowledgeBaseId = entry?.knowledgeBaseId;
    const dataSourceId = entry?.dataSourceId;
    if (
      typeof knowledgeBaseId !== 'string' ||
      knowledgeBaseId === '' ||
      typeof dataSourceId !== 'string' ||
      dataSourceId === ''
    ) {
      throw new Error(
        `Invalid configuration: ${BEDROCK_KNOWLEDGE_BASES_VARIABLE} needs "${environment}": { "knowledgeBaseId", "dataSourceId" }`,
      );
    }
    result[environment] = { knowledgeBaseId, dataSourceId };
  }
  return result;
}

/** The adapter as a Lambda function builds it once per cold start: clients from the default chain, ids from the env. */
export function bedrockIndexFromEnv(
  chunkTexts: ChunkTextSource,
  env: Readonly<Record<string, string | undefined>> = process.env,
  /** Wraps each client as it is built (the workers' X-Ray capture, composition/clients/capture.ts). */
  wrapClient: <Client>(client: Client) => Client = (client) => client,
): BedrockKnowledgeIndex {
  return new BedrockKnowledgeIndex({
    agentClient: wrapClient(new BedrockAgentClient({})),
    runtimeClient: wrapClient(new BedrockAgentRuntimeClient({})),
    knowledgeBases: readKnowledgeBases(env),
    chunkTexts,
  });
}
