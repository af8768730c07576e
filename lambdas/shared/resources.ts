/**
 * The stateful resources a function may touch, and the environment variable that carries each one's physical name
 * into it: the stack (lib/constructs/resource-access.ts) sets them, the functions' config (config.ts) reads them.
 */

/** Logical names of the stateful resources a handler may touch; the stack grants exactly these. */
export type TableName =
  | 'tokens'
  | 'agents'
  | 'knowledgeBases'
  | 'documents'
  | 'uploads'
  | 'zipJobs'
  | 'analytics'
  | 'retrievalConfigs'
  | 'agentDefinitions'
  | 'sessions'
  | 'rateLimits'
  | 'members'
  | 'memberships'
  | 'invitations'
  | 'organizations'
  | 'webhookEndpoints'
  | 'webhookDeliveries';

/** Environment variable that carries each stateful resource's physical name into a function. */
export const RESOURCE_ENV = {
  tables: {
    tokens: 'TOKENS_TABLE',
    agents: 'AGENTS_TABLE',
    knowledgeBases: 'KNOWLEDGE_BASES_TABLE',
    documents: 'DOCUMENTS_TABLE',
    uploads: 'UPLOADS_TABLE',
    zipJobs: 'ZIP_JOBS_TABLE',
    analytics: 'ANALYTICS_TABLE',
    retrievalConfigs: 'RETRIEVAL_CONFIGS_TABLE',
    agentDefinitions: 'AGENT_DEFINITIONS_TABLE',
    sessions: 'SESSIONS_TABLE',
    rateLimits: 'RATE_LIMITS_TABLE',
    members: 'MEMBERS_TABLE',
    memberships: 'MEMBERSHIPS_TABLE',
    invitations: 'INVITATIONS_TABLE',
    organizations: 'ORGANIZATIONS_TABLE',
    webhookEndpoints: 'WEBHOOK_ENDPOINTS_TABLE',
    webhookDeliveries: 'WEBHOOK_DELIVERIES_TABLE',
  },
  documentsBucket: 'DOCUMENTS_BUCKET',
  processingQueue: 'PROCESSING_QUEUE_URL',
  flowRunQueue: 'FLOW_RUN_QUEUE_URL',
  webhookQueue: 'WEBHOOK_QUEUE_URL',
  browserTask: 'BROWSER_TASK_FUNCTION',
} as const satisfies {
  tables: Record<TableName, string>;
  documentsBucket: string;
  processingQueue: string;
  flowRunQueue: string;
  webhookQueue: string;
  browserTask: string;
};
