/**
 * How a chunk of the pipeline becomes a Bedrock custom document and back: its identifier (prefix-encoded, so "the ids
 * of a document" is a prefix test), its metadata attributes (labels with their order keys, custom metadata, ids),
 * and a retrieval result read back as a chunk with a 0..1 score (docs/retrieval-aws.md).
 */

import type {
  DocumentIdentifier,
  KnowledgeBaseDocument,
  KnowledgeBaseDocumentDetail,
  MetadataAttribute,
} from '@aws-sdk/client-bedrock-agent';
import type { KnowledgeBaseRetrievalResult } from '@aws-sdk/client-bedrock-agent-runtime';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import {
  type ChunkGeneration,
  type ChunkMetadata,
  type DocumentRef,
  FILTERABLE_KEYS,
  type IndexedChunk,
} from '#ports/processing';

/** A custom document identifier is 1 to 2,048 characters. */
export const MAX_DOCUMENT_ID_LENGTH = 2048;

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

/**
 * The Bedrock custom document id of chunk `position` of upload `uploadId`:
 * `<agentId>/<knowledgeBaseId>/<documentId>#u:<uploadId>#<position>`. The document record knows its uploads and their
 * chunk counts (`indexedChunks`), so every id of a document is known without listing the data source. The `u:` keeps
 * these apart from the older ids (`…#<position>#<hash>`, whose part after the `#` is a number), and both start with
 * `bedrockDocumentPrefix`, so the listing fallback still finds both.
 */
export function uploadChunkId(ref: DocumentRef, uploadId: string, position: number): string {
  const id = encodeIdPart(`${ref.agentId}/${ref.knowledgeBaseId}/${ref.documentId}#u:${uploadId}#${position}`);
  if (id.length > MAX_DOCUMENT_ID_LENGTH) {
    throw new Error(
      `Bedrock document id of ${ref.documentId} is ${id.length} characters (max ${MAX_DOCUMENT_ID_LENGTH})`,
    );
  }
  return id;
}

/** Every id of the chunks of these uploads: positions 0..count-1 of each. */
export function uploadChunkIds(ref: DocumentRef, uploads: readonly ChunkGeneration[]): string[] {
  return uploads.flatMap(({ uploadId, count }) =>
    Array.from({ length: count }, (_, position) => uploadChunkId(ref, uploadId, position)),
  );
}

export function customIdentifier(id: string): DocumentIdentifier {
  return { dataSourceType: 'CUSTOM', custom: { id } };
}

export function documentIdOf(document: KnowledgeBaseDocument): string {
  return document.content?.custom?.customDocumentIdentifier?.id as string;
}

export function idOf(detail: KnowledgeBaseDocumentDetail): string | undefined {
  return detail.identifier?.custom?.id;
}

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

/** The chunk as a Bedrock custom document, under `id` (default: its older, content-named id). */
export function toBedrockDocument(
  chunk: IndexedChunk,
  metadata: ChunkMetadata = chunk,
  id: string = bedrockDocumentId(chunk),
): KnowledgeBaseDocument {
  return {
    content: {
      dataSourceType: 'CUSTOM',
      custom: {
        customDocumentIdentifier: { id },
        sourceType: 'IN_LINE',
        inlineContent: { type: 'TEXT', textContent: { data: chunk.text } },
      },
    },
    metadata: { type: 'IN_LINE_ATTRIBUTE', inlineAttributes: metadataAttributes(chunk, metadata) },
  };
}

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
