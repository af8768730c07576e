/**
 * What the knowledge screens share: the environments, a document as the API answers it, the metadata fields and
 * their rules (the service's own functions, lambdas/core/knowledge/labels.ts, so a person's edit is refused here for
 * the reason the API would give), and the polling backoff. Free of the browser's APIs (the unit tests import it).
 */

import { customMetaViolations, labelViolations } from '../../lambdas/core/knowledge/labels';
import type { Answer } from './answers';

export const ENVIRONMENTS = ['development', 'staging', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export type DocumentStatus = 'uploaded' | 'ready' | 'failed';

/**
 * A status's badge colour (outline badges: the text is this colour on white). Each keeps 4.5:1 contrast: Mantine's
 * darkest green (green.9, 4.36:1) does not, so ready is a darker green.
 */
const READY_GREEN = '#226b33';
export const STATUS_COLOR: Record<string, string> = {
  uploaded: 'blue.9',
  processing: 'blue.9',
  ready: READY_GREEN,
  completed: READY_GREEN,
  paused: 'blue.9',
  running: 'blue.9',
  failed: 'red.9',
};

export const METADATA_FIELDS = [
  'label1',
  'label2',
  'customMeta1',
  'customMeta2',
  'customMeta3',
  'customMeta4',
] as const;
export type MetadataField = (typeof METADATA_FIELDS)[number];
export type Metadata = Record<MetadataField, string | null>;

/** A document as the API answers it (GET …/document). */
export type KnowledgeDocument = Omit<
  Answer<'/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/document', 'get'>,
  'success'
>;

export interface Dataset {
  readonly agentId: string;
  readonly environment: Environment;
  readonly knowledgeBaseId: string;
}

/** The first rule a metadata value breaks (the API's rule name and message), or null. Empty means "no value". */
export function metadataProblem(field: MetadataField, value: string): { rule: string; message: string } | null {
  if (value === '') return null;
  const violations = field.startsWith('label') ? labelViolations(value) : customMetaViolations(value);
  return violations[0] ?? null;
}

/** The fields whose value changed, as PATCH takes them: a value sets, null clears. */
export function metadataChanges(before: Metadata, after: Record<MetadataField, string>): Partial<Metadata> {
  const changes: Partial<Metadata> = {};
  for (const field of METADATA_FIELDS) {
    const next = after[field] === '' ? null : after[field];
    if (next !== before[field]) changes[field] = next;
  }
  return changes;
}

/**
 * How long to wait before the next poll of something still being processed: 0.5 s, growing by half while nothing
 * changes, at most 5 s; `unchangedPolls` is how many polls in a row saw the same answer. A document is usually
 * ready within a second or two; one that takes minutes costs a request every 5 s.
 */
export function pollDelay(unchangedPolls: number): number {
  return Math.min(5000, Math.round(500 * 1.5 ** Math.min(unchangedPolls, 6)));
}

/**
 * The chunk view of a document (screens/Chunks.tsx): its dataset, the document by s3Key, and optionally the chunk to
 * open at (a retrieval hit's `chunkId`).
 */
export function chunkViewHref(dataset: Dataset, s3Key: string, chunkId?: string): string {
  const search = new URLSearchParams({
    environment: dataset.environment,
    s3Key,
    ...(chunkId ? { chunk: chunkId } : {}),
  });
  return `/agents/${dataset.agentId}/knowledge/${dataset.knowledgeBaseId}/chunks?${search}`;
}
