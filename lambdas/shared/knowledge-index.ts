/**
 * Which knowledge index this process uses. In AWS: the Bedrock knowledge base of each environment, built from
 * BEDROCK_KNOWLEDGE_BASES by whoever needs it. The local runtime installs its embedded index here at start, and
 * the processing and retrieval composition roots both read it.
 */
import type { Embedder, KnowledgeIndex } from '../ports/processing';

let installed: { index: KnowledgeIndex; embedder: Embedder | null } | undefined;

/** Installs the index (and optional embedder) this process uses; the local runtime calls this at start. */
export function useKnowledgeIndex(index: KnowledgeIndex, embedder: Embedder | null = null): void {
  installed = { index, embedder };
}

export function installedKnowledgeIndex() {
  return installed;
}
