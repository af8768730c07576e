/**
 * The index the local runtime installs at start (its embedded index, and the embedder when one is configured): the
 * processing and retrieval composition roots read it before they build a deployed one. Apart from knowledge-index.ts
 * so that a retrieval function does not bundle the write half of the Bedrock index to learn that nothing is installed.
 */
import type { Embedder, KnowledgeIndex } from '#ports/processing';

let installed: { index: KnowledgeIndex; embedder: Embedder | null } | undefined;

/** Installs the index (and optional embedder) this process uses; the local runtime calls this at start. */
export function useKnowledgeIndex(index: KnowledgeIndex, embedder: Embedder | null = null): void {
  installed = { index, embedder };
}

export function installedKnowledgeIndex() {
  return installed;
}
