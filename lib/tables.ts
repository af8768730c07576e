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

/**
 * A sparse index of the items waiting on something, oldest first: `pendingKey` exists only while an item waits (a
 * document to be processed, an import to be read, a knowledge base or agent to be deleted) and `updatedAt` is its
 * last progress, so the watchdog reads just those whose progress stopped. Keys only.
 */
function waitingIndex(indexName: string): IndexSchema {
  return { indexName, partitionKey: { name: 'pendingKey' }, sortKey: { name: 'updatedAt' }, nonKeyAttributes: [] };
}

export const TABLES: Record<TableName, TableSchema> = {
  /**
   * One item per token: `tokenHash` (SHA-256 hex of the bearer token) → organizationId, scopes. Index
   * `byOrganization` lists an organization's tokens and finds one by its id (the dashboard's list and revoke).
   */
  tokens: {
    partitionKey: 'tokenHash',
    indexes: [{ indexName: 'byOrganization', partitionKey: { name: 'organizationId' }, sortKey: { name: 'tokenId' } }],
  },
  /**
   * Agents by organization: every lookup carries the caller's organization, so another's agent is simply absent.
   * Sparse index `deleting`: `pendingKey` exists only while an agent is being deleted (`updatedAt` is then the job's
   * last progress), so the watchdog finds a deletion whose message was lost.
   */
  agents: {
    partitionKey: 'organizationId',
    sortKey: 'agentId',
    indexes: [waitingIndex('deleting')],
  },
  /**
   * Sparse index `deleting`: `pendingKey` exists only while a knowledge base is being deleted (`updatedAt` is then
   * the job's last progress), so the watchdog finds a deletion whose message was lost.
   */
  knowledgeBases: {
    partitionKey: 'agentId',
    sortKey: 'knowledgeBaseId',
    indexes: [
      waitingIndex('deleting'),
      // Sparse: `reindexKey` exists only while a reindex runs, `reindexUpdatedAt` its last progress, so the
      // watchdog finds a reindex whose message was lost (the row's own `updatedAt` is the knowledge base's).
      {
        indexName: 'reindexing',
        partitionKey: { name: 'reindexKey' },
        sortKey: { name: 'reindexUpdatedAt' },
        nonKeyAttributes: [],
      },
    ],
  },
  /**
   * `tenantKey` = `<agentId>#<environment>#<knowledgeBaseId>`: one partition per dataset, which also holds the
   * dataset's counters item (documentId `#counts`) and the items of owed work (documentId `#owed#<work>#<id>`).
   */
  documents: {
    partitionKey: 'tenantKey',
    sortKey: 'documentId',
    indexes: [
      // Sparse: `pendingKey` exists only while a document is `uploaded` (value `uploaded`) and on the items of owed
      // work (`#owed#<work>#<documentId>`, value the work: `delete-document`, `sync-metadata`), so the watchdog reads
      // just those.
      waitingIndex('pending'),
      // Sparse: `zipPendingKey` (the zipJobId) exists only while a document a ZIP import created still holds that
      // import's content and has not finished (reserved or uploaded): a job's list status reads it.
      {
        indexName: 'zipPending',
        partitionKey: { name: 'zipPendingKey' },
        sortKey: { name: 'documentId' },
        nonKeyAttributes: [],
      },
      // Sparse: `zipFailedKey` (the upload it failed with) exists only while a document is `failed`: a ZIP import
      // counts its failed files (the zipJobId is the upload of every document it created).
      {
        indexName: 'zipFailed',
        partitionKey: { name: 'zipFailedKey' },
        sortKey: { name: 'documentId' },
        nonKeyAttributes: [],
      },
      // The document list, newest first: `listKey` = `<createdAt>#<documentId>`, written when a document is
      // created (never on a reservation or the counters), with every attribute, as GET answers.
      { indexName: 'byCreation', partitionKey: { name: 'tenantKey' }, sortKey: { name: 'listKey' } },
    ],
  },
  /**
   * Upload sessions; expired ones are removed by TTL (they are also refused by time, TTL is only cleanup). Sparse
   * index `open`: `openKey` exists only until a session is completed or swept, so the watchdog finds the uploads
   * nobody completed and removes their objects when their session ends.
   */
  uploads: {
    partitionKey: 'uploadId',
    timeToLiveAttribute: 'expiresAtEpoch',
    indexes: [
      { indexName: 'open', partitionKey: { name: 'openKey' }, sortKey: { name: 'expiresAt' }, nonKeyAttributes: [] },
    ],
  },
  /** ZIP imports: `itemKey` = `job` for the job, `file#<00000>` for each file of the archive. */
  zipJobs: {
    partitionKey: 'zipJobId',
    sortKey: 'itemKey',
    // Sparse: `pendingKey` exists only on a job whose archive is not read through yet, for the watchdog.
    // `knowledgeBaseKey` (`<agentId>#<knowledgeBaseId>`) only on the job item: the jobs a knowledge base deletion removes.
    indexes: [
      waitingIndex('pending'),
      {
        indexName: 'byKnowledgeBase',
        partitionKey: { name: 'knowledgeBaseKey' },
        sortKey: { name: 'zipJobId' },
        nonKeyAttributes: [],
      },
      // The list of a dataset's jobs, newest first: `datasetKey` (`<agentId>#<environment>#<knowledgeBaseId>`) and
      // `listKey` (`<createdAt>#<zipJobId>`) only on the job item, with all its attributes.
      { indexName: 'byDataset', partitionKey: { name: 'datasetKey' }, sortKey: { name: 'listKey' } },
    ],
  },
  /**
   * The members table of before issue 33: `email` → `organizationId`, `role`, one organization per person. Nothing
   * writes it now; each row becomes a membership at its person's next sign-in and is deleted (docs/people.md,
   * "From the members table"). Kept, not dropped: a stack update must not orphan the rows of a deployment.
   */
  members: {
    partitionKey: 'email',
    indexes: [{ indexName: 'byOrganization', partitionKey: { name: 'organizationId' }, sortKey: { name: 'email' } }],
  },
  /**
   * People of the organizations (docs/people.md): one item per person (`sub`, Cognito's id of them) and
   * organization, with `email` and `role` (`owner` | `member`). Index `byOrganization` lists an organization's people.
   */
  memberships: {
    partitionKey: 'sub',
    sortKey: 'organizationId',
    indexes: [{ indexName: 'byOrganization', partitionKey: { name: 'organizationId' }, sortKey: { name: 'email' } }],
  },
  /**
   * Invitations (offers of a membership): one item per invited `email` and `organizationId`, with `role`,
   * `invitedBy`, `expiresAt`; TTL `expiresAtEpoch` removes them once expired. Index `byOrganization` lists an
   * organization's.
   */
  invitations: {
    partitionKey: 'email',
    sortKey: 'organizationId',
    timeToLiveAttribute: 'expiresAtEpoch',
    indexes: [{ indexName: 'byOrganization', partitionKey: { name: 'organizationId' }, sortKey: { name: 'email' } }],
  },
  /** Organizations made by a sign-up: `organizationId` → `name`, `createdAt` (docs/people.md). */
  organizations: { partitionKey: 'organizationId' },
  /**
   * The rate limit counters (core/auth/rate-limit.ts, docs/rate-limits.md): `key` = `<counter>#<window>`, one item per
   * counter (`organization#<organizationId>`, `token#<tokenId>`, `work#<organizationId>`) and fixed window, holding
   * the `count` in it; TTL `expiresAt` removes it a minute after its window. Also the schedule tick's
   * `schedule#<agentId>#<environment>#<trigger>` (docs/flows.md, "Schedules"), and the analytics query's offset marks,
   * `analytics-marks#<index>#<partition>` (docs/analytics.md, "Shared between processes").
   */
  rateLimits: { partitionKey: 'key', timeToLiveAttribute: 'expiresAt' },
  /**
   * Analytics events (docs/analytics.md). `pk` = `event#<agentId>#<eventKey>`, one item per event key so a retried
   * write cannot store an event twice, or `counter#<agentId>`, the agent's last id. Each filter combination is one
   * index keyed `<agentId>#<environment>[#<sessionId>][#<eventName>]`, sorted by `position` =
   * `<created_at>#<id, 16 digits>`: read backwards it is newest first, and a date range is a key range. The indexes
   * hold keys (and `expiresAt`) only, so skipping an `offset` reads small entries; records come from the table.
   */
  /** Default retrieval configuration: one item per agent and environment. */
  retrievalConfigs: { partitionKey: 'agentId', sortKey: 'environment' },
  /**
   * Agent definitions: one item per agent and environment, the definition as JSON text. Sparse index `scheduled`
   * (`scheduleKey` is set only on definitions with a schedule trigger) is what the scheduler's tick reads.
   */
  agentDefinitions: {
    partitionKey: 'agentId',
    sortKey: 'environment',
    indexes: [{ indexName: 'scheduled', partitionKey: { name: 'scheduleKey' }, sortKey: { name: 'agentKey' } }],
  },
  /**
   * Flow sessions: `sessionKey` = `<agentId>#<environment>`; removed by TTL after SESSION_RETENTION_DAYS idle. Index
   * `byCreation` (`createdKey` = `<createdAt>#<sessionId>`) lists them newest first with what a list shows.
   */
  sessions: {
    partitionKey: 'sessionKey',
    sortKey: 'sessionId',
    timeToLiveAttribute: 'expiresAt',
    indexes: [
      {
        indexName: 'byCreation',
        partitionKey: { name: 'sessionKey' },
        sortKey: { name: 'createdKey' },
        nonKeyAttributes: ['status', 'flowName', 'currentNode', 'trigger', 'createdAt', 'updatedAt'],
      },
    ],
  },
  /**
   * Status webhook endpoints (docs/webhooks.md): one item per organization and endpoint, with its URL, events, optional
   * agent, secrets (never answered after the create and rotate calls) and its failure streak.
   */
  webhookEndpoints: { partitionKey: 'organizationId', sortKey: 'endpointId' },
  /**
   * Each delivery attempt of a status webhook: `attemptKey` = `<attemptedAt>#<webhook-id>#<attempt, 3 digits>` under
   * its endpoint, read backwards for newest first; TTL `expiresAt` removes it after WEBHOOK_DELIVERY_RETENTION_DAYS.
   */
  webhookDeliveries: { partitionKey: 'endpointId', sortKey: 'attemptKey', timeToLiveAttribute: 'expiresAt' },
  analytics: {
    partitionKey: 'pk',
    timeToLiveAttribute: 'expiresAt',
    indexes: [
      { indexName: 'byEnvironment', partitionKey: { name: 'environmentKey' }, sortKey: { name: 'position' } },
      { indexName: 'bySession', partitionKey: { name: 'sessionKey' }, sortKey: { name: 'position' } },
      { indexName: 'byEventName', partitionKey: { name: 'eventNameKey' }, sortKey: { name: 'position' } },
      {
        indexName: 'bySessionAndEventName',
        partitionKey: { name: 'sessionEventNameKey' },
        sortKey: { name: 'position' },
      },
    ].map((index) => ({ ...index, nonKeyAttributes: ['expiresAt'] })),
  },
};

/**
 * The knowledge index of a deployment without Bedrock (`-c knowledgeIndex=dynamodb`, for LocalStack): not a table of
 * TABLES, since neither AWS with Bedrock nor the local runtime has it. One partition per dataset (`tenantKey`), a
 * document's chunks under its `chunkId` prefix (`<documentId>#…`). See lambdas/adapters/index/dynamodb-chunks.ts.
 */
export const CHUNK_INDEX_TABLE: TableSchema = { partitionKey: 'tenantKey', sortKey: 'chunkId' };
