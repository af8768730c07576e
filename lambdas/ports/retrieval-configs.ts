/** Port of the default retrieval configurations (core/retrieval/default-retrieval.ts); DynamoDB in adapters/store. */
import type { Environment } from '#core/knowledge/fields';
import type { RetrievalConfigRecord } from '#core/retrieval/retrieval-config';

export interface RetrievalConfigStore {
  get(agentId: string, environment: Environment): Promise<RetrievalConfigRecord | undefined>;
  put(record: RetrievalConfigRecord): Promise<void>;
  /** Writes `record` only while the stored one still has `previousUpdatedAt`; false when it changed meanwhile. */
  replace(record: RetrievalConfigRecord, previousUpdatedAt: string): Promise<boolean>;
  /** Removes the configuration of the environment (the deletion of its agent); nothing to remove is not an error. */
  delete(agentId: string, environment: Environment): Promise<void>;
}
