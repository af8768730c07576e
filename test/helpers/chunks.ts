/** Chunks as the pipeline makes them, for tests of KnowledgeIndex adapters. */
import { createHash } from 'node:crypto';
import type { ChunkMetadata, DocumentRef, IndexedChunk } from '#ports/processing';

export const NO_METADATA: ChunkMetadata = {
  label1: null,
  label2: null,
  svc_internal_meta1: null,
  svc_internal_meta2: null,
  svc_internal_meta3: null,
  svc_internal_meta4: null,
};

/** One chunk per text, with ids of the pipeline's shape (`<documentId>#<position>#<hash>`). */
export function chunksOf(
  doc: DocumentRef,
  texts: readonly string[],
  metadata: Partial<ChunkMetadata> = {},
): IndexedChunk[] {
  return texts.map((text, position) => ({
    ...doc,
    ...NO_METADATA,
    ...metadata,
    chunkId: `${doc.documentId}#${position}#${createHash('sha256').update(text).digest('hex').slice(0, 12)}`,
    s3Key: `${doc.agentId}/${doc.knowledgeBaseId}/${doc.documentId}`,
    position,
    text,
  }));
}
