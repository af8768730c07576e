/**
 * Key schema of every DynamoDB table, read by the CDK stack and by the local runtime when it creates its tables,
 * so a key can only be changed in one place. No CDK or SDK imports here.
 */
import type { TableName } from './routes';

export interface TableSchema {
  readonly partitionKey: string;
  readonly sortKey?: string;
  /** Epoch-seconds attribute DynamoDB's TTL deletes by. */
  readonly timeToLiveAttribute?: string;
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
};
