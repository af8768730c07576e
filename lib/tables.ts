/**
 * Key schema of every DynamoDB table, read by the CDK stack and by the local runtime when it creates its tables,
 * so a key can only be changed in one place. No CDK or SDK imports here.
 */
import type { TableName } from './routes';

export interface KeyAttribute {
  readonly name: string;
  /** S (string, the default) or N (number). */
  readonly type?: 'S' | 'N';
}

export interface IndexSchema {
  readonly indexName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** Attributes copied into the index besides the keys; omitted = ALL. `[]` = KEYS_ONLY. */
  readonly nonKeyAttributes?: readonly string[];
}

export interface TableSchema {
  readonly partitionKey: string;
  readonly sortKey?: string;
  /** Type of the sort key; S unless set. */
  readonly sortKeyType?: 'S' | 'N';
  /** Epoch-seconds attribute DynamoDB's TTL deletes by. */
  readonly timeToLiveAttribute?: string;
  /** Global secondary indexes. */
  readonly indexes?: readonly IndexSchema[];
}

export const TABLES: Record<TableName, TableSchema> = {
  /** One item per token: `tokenHash` (SHA-256 hex of the bearer token) → organizationId, scopes. */
  tokens: { partitionKey: 'tokenHash' },
  /** Agents by organization: every lookup carries the caller's organization, so another's agent is simply absent. */
  agents: { partitionKey: 'organizationId', sortKey: 'agentId' },
  knowledgeBases: { partitionKey: 'agentId', sortKey: 'knowledgeBaseId' },
  /** `tenantKey` = `<agentId>#<environment>#<knowledgeBaseId>`: one partition per dataset. */
  documents: { partitionKey: 'tenantKey', sortKey: 'documentId' },
  /** Upload sessions; expired ones are removed by TTL (they are also refused by time, TTL is only cleanup). */
  uploads: { partitionKey: 'uploadId', timeToLiveAttribute: 'expiresAtEpoch' },
  /** ZIP imports: `itemKey` = `job` for the job, `file#<00000>` for each file of the archive. */
  zipJobs: { partitionKey: 'zipJobId', sortKey: 'itemKey' },
  /** Analytics events: designed in issue 6 (see docs/ARCHITECTURE.md). */
  analytics: { partitionKey: 'pk', sortKey: 'sk' },
};
