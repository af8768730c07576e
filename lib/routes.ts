/**
 * THE route table. The CDK stack makes one Lambda function per entry and the local router serves the same entries,
 * so the two cannot drift. Keep this file free of CDK and AWS SDK imports: Lambda bundles read it too.
 *
 * Over 400 lines on purpose: the table is one list, and a route's path, scope, access and handler are read together.
 */

import { SCOPES, type Scope } from '#core/auth/scopes';
import { RESOURCE_ENV, type TableName } from '#shared/resources';

// Owned by the core (scopes) and by the functions' configuration (resource variables); the table re-exports them
// for the stack and the local runtime.
export { RESOURCE_ENV, SCOPES, type Scope, type TableName };

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type Access = 'read' | 'readWrite';
/**
 * A table also: `readUpdate` = read plus UpdateItem (no PutItem, DeleteItem or batch writes); `readPut` = read plus
 * PutItem; `readDelete` = read plus DeleteItem; `update` = UpdateItem alone (the rate limit counters).
 */
export type TableAccess = Access | 'readUpdate' | 'readPut' | 'readDelete' | 'update';

/** The one write each `read…` level adds to reading (`readWrite` adds them all). */
export const SINGLE_WRITE_OF: Partial<Record<TableAccess, string>> = {
  readUpdate: 'dynamodb:UpdateItem',
  readPut: 'dynamodb:PutItem',
  readDelete: 'dynamodb:DeleteItem',
};

export interface ResourceAccess {
  readonly tables?: Partial<Record<TableName, TableAccess>>;
  /** The documents bucket: `read` = HeadObject/GetObject, `readWrite` adds PutObject (pre-signing) and DeleteObject. */
  readonly documentsBucket?: Access;
  /**
   * Only the `attachments/` prefix of the documents bucket (images of flow messages): `read` = GetObject, `readWrite`
   * adds PutObject and DeleteObject.
   */
  readonly attachments?: Access;
  /** Send to the processing queue. */
  readonly processingQueue?: 'send';
  /** Send to the flow runner's queue: hand a run that outlives its request over (docs/flows.md, "Long runs"). */
  readonly flowRunQueue?: 'send';
  /** Send to the status webhooks' queue (lib/constructs/webhook-delivery.ts): publish status events, queue attempts. */
  readonly webhookQueue?: 'send';
  /**
   * `retrieve`: query the knowledge index (Bedrock Retrieve / RetrieveAndGenerate in AWS). `listChunks`: list a
   * document's chunks (the chunk table's read; with Bedrock, GetObject on the chunk manifests of the documents bucket).
   */
  readonly knowledgeIndex?: 'retrieve' | 'listChunks';
  /**
   * `invoke`: call the deployment's Bedrock models (`-c models`: the default as BEDROCK_GENERATE_MODEL_ID, and
   * bedrock:InvokeModel on each); `list`: know them only (BEDROCK_MODELS), to list them and check definitions.
   */
  readonly model?: 'invoke' | 'list';
  /**
   * Agent code deployed as Lambda functions (`-c agentCodeFunctions`, docs/agent-code.md): `invoke` = lambda:
   * InvokeFunction on exactly those functions; `list` = only know them (AGENT_CODE_FUNCTIONS), to check definitions.
   */
  readonly agentCode?: 'invoke' | 'list';
  /**
   * The bearer tokens of MCP servers (`-c mcpSecrets`, docs/flows.md "MCP tools"): MCP_SECRETS (names, origins, ARNs)
   * and GetSecretValue on exactly those secrets; where MCP servers are listed or called.
   */
  readonly mcpSecrets?: 'read';
  /** Run browser tasks in the BrowserTask function (Lambda Invoke); it gets BROWSER_DRIVER=lambda. */
  readonly browserTask?: 'invoke';
  /**
   * People's accounts in the user pool (docs/people.md): `verify` = its ID tokens' issuer and audience (no grant);
   * `signUp` = the pool's public SignUp through the app client (no grant); `manage` = AdminCreateUser (an account for
   * an invited address); `signUpMode` = only whether sign-up is open (SIGNUP_MODE: new organizations), no pool.
   */
  readonly people?: 'verify' | 'signUp' | 'manage' | 'signUpMode';
}

/**
 * The part of the product a route belongs to. In AWS the functions of each area are a nested stack of their own
 * (lib/constructs/platform-api.ts), so that no CloudFormation template comes near its 500 resources as routes are
 * added (docs/ARCHITECTURE.md, "Stacks"). Moving a route to another area replaces its function, nothing stateful.
 */
export const ROUTE_AREAS = {
  knowledge: 'documents, ZIP imports, knowledge bases and retrieval',
  flows: "agents' definitions, their sessions, webhooks and app events",
  dashboard: 'agents, tokens, sign-up, organizations and their people',
  analytics: 'the analytics API: the agent list, the events query and custom events',
  service: 'the public health check and OpenAPI document',
} as const;

export type RouteArea = keyof typeof ROUTE_AREAS;

export interface HttpRoute {
  /** PascalCase, unique: construct id and function name suffix. */
  readonly id: string;
  /** Where its function is deployed: the nested stack of this area (a dashboard mirror is on its route's function). */
  readonly area: RouteArea;
  readonly method: HttpMethod;
  /** API Gateway resource path; path parameters as `{name}`. */
  readonly path: string;
  /** Handler file relative to the repository root; it exports `handler`. */
  readonly handler: string;
  /**
   * Scope the caller's token must carry; a list: any one of them (a route whose operations each need their own, as
   * the MCP server's tools: docs/mcp.md); `null` = no token needed.
   */
  readonly scope: Scope | readonly Scope[] | null;
  readonly access: ResourceAccess;
  readonly summary: string;
  /**
   * Status of a success when it is not 200 (201 for a Create… POST): 201 for another POST that makes something, 202
   * for a route that answers a job.
   */
  readonly successStatus?: 201 | 202;
  /** Largest JSON body the handler reads; default 1 MiB (MAX_JSON_BODY_BYTES, lambdas/shared/http.ts). */
  readonly maxBodyBytes?: number;
  /**
   * A person's own route (core/dashboard/my-account.ts): a person signed in, in no organization; a token is refused
   * (403). Its handler is a `personHandler` (lambdas/shared/http.ts).
   */
  readonly personal?: true;
  /**
   * The route whose function also serves this one (a dashboard mirror, below): the stack adds this route's method to
   * that function instead of making a function of its own. Same handler file and access as that route.
   */
  readonly functionOf?: string;
}

const KNOWLEDGE = '/api/v1/knowledge/documents';
const BASES = '/dashboard/agents/{agentId}/knowledge/bases';
const http = (name: string) => `lambdas/handlers/http/${name}.ts`;

/** Reads and writes that every knowledge-document handler needs to resolve the caller's agent and knowledge base. */
const tenantRead = { agents: 'read', knowledgeBases: 'read' } as const;

const DEFINITION = '/dashboard/agents/{agentId}/definition/{environment}';

/**
 * What running a flow touches: the definition, the session, analytics, and retrieval (default retrieval and the
 * retrieval tools: agents, knowledge bases, the document records, the knowledge index) with the generate model; and
 * the counters, where each node and browser second is counted against the organization's flow work budget
 * (core/flows/work-budget.ts).
 */
const flowRun: ResourceAccess = {
  tables: {
    rateLimits: 'update',
    // readUpdate: an agent without a callback secret gets one at its first callback (core/flows/callback-delivery.ts).
    agents: 'readUpdate',
    knowledgeBases: 'read',
    // Retrieval drops the hits of documents deleted whose chunks are not erased yet.
    documents: 'read',
    agentDefinitions: 'read',
    sessions: 'readWrite',
    analytics: 'readWrite',
    retrievalConfigs: 'read',
  },
  knowledgeIndex: 'retrieve',
  model: 'invoke',
  browserTask: 'invoke',
  agentCode: 'invoke',
  mcpSecrets: 'read',
};

/**
 * The webhook and app-event bodies may carry images inline (base64 `attachments`): 5 MiB, about 3.9 MB of images,
 * the most a synchronous Lambda invocation's payload (6 MB, the event's headers and context included) can carry.
 * Larger images, up to 5 MiB each, are given by `url` (docs/flows.md, "Attachments").
 */
export const FLOW_INPUT_MAX_BODY_BYTES = 5 * 1024 * 1024;

/** A flow trigger route also stores the images attached to its user message, and reads them back for the model. */
const flowInput: ResourceAccess = { ...flowRun, attachments: 'readWrite', flowRunQueue: 'send' };

/** A person's own routes: their memberships, the invitations to them, and the organizations they found. */
const PERSONAL: ResourceAccess = {
  tables: { memberships: 'readWrite', invitations: 'readWrite', organizations: 'readWrite' },
  people: 'signUpMode',
};

const WEBHOOK_ENDPOINTS = '/dashboard/webhook-endpoints';
/**
 * The status webhook endpoints (docs/webhooks.md). Agents: an endpoint scoped to an agent names one of the caller's.
 * The deliveries are only read here; the delivery worker writes them.
 */
const webhookEndpointsRead: ResourceAccess = { tables: { webhookEndpoints: 'read' } };
const webhookEndpointsWrite: ResourceAccess = { tables: { webhookEndpoints: 'readWrite', agents: 'read' } };

const TABLE_OF_ROUTES: readonly HttpRoute[] = [
  {
    id: 'Health',
    area: 'service',
    method: 'GET',
    path: '/health',
    handler: http('health'),
    scope: null,
    access: {},
    summary: 'Liveness check',
  },
  {
    id: 'OpenApi',
    area: 'service',
    method: 'GET',
    path: '/api/v1/openapi.json',
    handler: http('openapi'),
    scope: null,
    access: {},
    summary: 'The OpenAPI document of every route',
  },
  {
    id: 'UploadLink',
    area: 'knowledge',
    method: 'POST',
    path: `${KNOWLEDGE}/upload-link`,
    handler: http('knowledge/upload-link'),
    scope: 'knowledge-management',
    access: { tables: { ...tenantRead, documents: 'readWrite', uploads: 'readWrite' }, documentsBucket: 'readWrite' },
    summary: 'Get a pre-signed URL for a new document',
  },
  {
    id: 'UploadComplete',
    area: 'knowledge',
    method: 'POST',
    path: `${KNOWLEDGE}/upload-complete`,
    handler: http('knowledge/upload-complete'),
    scope: 'knowledge-management',
    access: {
      tables: { ...tenantRead, documents: 'readWrite', uploads: 'readWrite', zipJobs: 'readWrite' },
      // readWrite for s3:PutObjectTagging: the completed upload loses its pending-upload tag.
      documentsBucket: 'readWrite',
      processingQueue: 'send',
    },
    summary: 'Finalize a new upload',
  },
  {
    id: 'UpdateUploadLink',
    area: 'knowledge',
    method: 'POST',
    path: `${KNOWLEDGE}/update/upload-link`,
    handler: http('knowledge/update-upload-link'),
    scope: 'knowledge-management',
    access: { tables: { ...tenantRead, documents: 'read', uploads: 'readWrite' }, documentsBucket: 'readWrite' },
    summary: 'Get a pre-signed URL to replace the content of a document',
  },
  {
    id: 'UpdateUploadComplete',
    area: 'knowledge',
    method: 'POST',
    path: `${KNOWLEDGE}/update/upload-complete`,
    handler: http('knowledge/update-upload-complete'),
    scope: 'knowledge-management',
    access: {
      tables: { ...tenantRead, documents: 'readWrite', uploads: 'readWrite' },
      documentsBucket: 'readWrite',
      processingQueue: 'send',
    },
    summary: 'Finalize an update; reprocessing starts',
  },
  {
    id: 'PatchMetadata',
    area: 'knowledge',
    method: 'PATCH',
    path: `${KNOWLEDGE}/metadata`,
    handler: http('knowledge/patch-metadata'),
    scope: 'knowledge-management',
    access: { tables: { ...tenantRead, documents: 'readWrite' }, processingQueue: 'send' },
    summary: 'Update labels and custom metadata',
  },
  {
    id: 'GetDocument',
    area: 'knowledge',
    method: 'GET',
    path: KNOWLEDGE,
    handler: http('knowledge/get-document'),
    scope: 'knowledge-management',
    access: { tables: { ...tenantRead, documents: 'read' } },
    summary: 'Get document metadata',
  },
  {
    id: 'ListDocumentChunks',
    area: 'knowledge',
    method: 'GET',
    path: `${KNOWLEDGE}/chunks`,
    handler: http('knowledge/list-document-chunks'),
    scope: 'knowledge-management',
    access: { tables: { ...tenantRead, documents: 'read' }, knowledgeIndex: 'listChunks' },
    summary:
      "A ready document's chunks in position order, each with its text and the metadata a retrieval hit carries; q searches the text",
  },
  {
    id: 'DeleteDocument',
    area: 'knowledge',
    method: 'DELETE',
    path: KNOWLEDGE,
    handler: http('knowledge/delete-document'),
    scope: 'knowledge-management',
    access: {
      tables: { ...tenantRead, documents: 'readWrite' },
      documentsBucket: 'readWrite',
      processingQueue: 'send',
    },
    summary: 'Delete a document',
  },
  {
    id: 'ListDocuments',
    area: 'knowledge',
    method: 'GET',
    path: `${KNOWLEDGE}/list`,
    handler: http('knowledge/list-documents'),
    scope: 'knowledge-management',
    access: { tables: { ...tenantRead, documents: 'read' } },
    summary: 'Documents of a knowledge base, newest first, with the counts per status of the whole dataset',
  },
  {
    id: 'RetryDocument',
    area: 'knowledge',
    method: 'POST',
    path: `${KNOWLEDGE}/retry`,
    handler: http('knowledge/retry-document'),
    scope: 'knowledge-management',
    access: { tables: { ...tenantRead, documents: 'readWrite' }, processingQueue: 'send' },
    summary: 'Process a failed document again from its stored file',
  },
  {
    id: 'ListZipJobs',
    area: 'knowledge',
    method: 'GET',
    path: '/api/v1/knowledge/zip-jobs',
    handler: http('knowledge/list-zip-jobs'),
    scope: 'knowledge-management',
    access: { tables: { ...tenantRead, zipJobs: 'read', documents: 'read' } },
    summary: 'ZIP imports of a knowledge base, newest first, each with its status and file count',
  },
  {
    id: 'GetZipJob',
    area: 'knowledge',
    method: 'GET',
    path: '/api/v1/knowledge/zip-jobs/{zipJobId}',
    handler: http('knowledge/get-zip-job'),
    scope: 'knowledge-management',
    access: { tables: { zipJobs: 'read', documents: 'read' } },
    summary: 'Status of a ZIP import and of each file in it',
  },
  {
    id: 'AgentsList',
    area: 'analytics',
    method: 'GET',
    path: '/api/v1/agents/list',
    handler: http('agents/list-agents'),
    scope: 'analytics',
    access: { tables: { agents: 'read' } },
    summary: "List the organization's agents",
  },
  {
    id: 'QueryEvents',
    area: 'analytics',
    method: 'POST',
    path: '/api/v1/events/agent',
    handler: http('analytics/query-events'),
    scope: 'analytics',
    // rateLimits readUpdate: the offset marks it shares with its other containers, one item per index partition
    // (docs/analytics.md), beside its requests' counters; it only reads the events.
    access: { tables: { agents: 'read', analytics: 'read', rateLimits: 'readUpdate' } },
    summary: "Query an agent's analytics events, newest first",
  },
  {
    id: 'TrackEvent',
    area: 'analytics',
    method: 'POST',
    path: '/api/v1/events/track',
    handler: http('analytics/track-event'),
    scope: 'analytics',
    access: { tables: { agents: 'read', analytics: 'readWrite' } },
    successStatus: 201,
    summary: 'Record a custom analytics event of an agent from agent code (ANALYTICS_EVENT), outside a flow',
  },
  {
    id: 'CreateAgent',
    area: 'dashboard',
    method: 'POST',
    path: '/dashboard/agents',
    handler: http('dashboard/create-agent'),
    scope: 'dashboard',
    access: { tables: { agents: 'readWrite' } },
    summary: 'Create an agent',
  },
  {
    id: 'ListAgents',
    area: 'dashboard',
    method: 'GET',
    path: '/dashboard/agents',
    handler: http('agents/list-agents'),
    scope: 'dashboard',
    access: { tables: { agents: 'read' } },
    summary: "List the organization's agents",
  },
  {
    id: 'GetAgent',
    area: 'dashboard',
    method: 'GET',
    path: '/dashboard/agents/{agentId}',
    handler: http('dashboard/get-agent'),
    scope: 'dashboard',
    access: { tables: { agents: 'read' } },
    summary: 'Get an agent',
  },
  {
    id: 'RenameAgent',
    area: 'dashboard',
    method: 'PATCH',
    path: '/dashboard/agents/{agentId}',
    handler: http('dashboard/rename-agent'),
    scope: 'dashboard',
    access: { tables: { agents: 'readWrite' } },
    summary: 'Rename an agent (its displayName)',
  },
  {
    id: 'DeleteAgent',
    area: 'dashboard',
    method: 'DELETE',
    path: '/dashboard/agents/{agentId}',
    handler: http('dashboard/delete-agent'),
    scope: 'dashboard',
    // readUpdate: it marks the agent `deleting`; the processing worker's job removes the rest, and the row last.
    access: { tables: { agents: 'readUpdate' }, processingQueue: 'send' },
    successStatus: 202,
    summary: 'Delete an agent with its knowledge bases, definitions and sessions (a job: 202, then gone)',
  },
  {
    id: 'RotateCallbackSecret',
    area: 'dashboard',
    method: 'POST',
    path: '/dashboard/agents/{agentId}/callback-secret',
    handler: http('dashboard/rotate-callback-secret'),
    scope: 'dashboard',
    // readUpdate: it reads the agent and sets its secrets with one conditional UpdateItem; it never puts or deletes.
    access: { tables: { agents: 'readUpdate' } },
    successStatus: 201,
    summary:
      "Make a new secret that signs the agent's AI-message callbacks, shown only in this answer (owners); the previous one signs too for 24 hours",
  },
  {
    id: 'CreateKnowledgeBase',
    area: 'knowledge',
    method: 'POST',
    path: BASES,
    handler: http('dashboard/create-knowledge-base'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', knowledgeBases: 'readWrite' } },
    summary: 'Create a knowledge base',
  },
  {
    id: 'ListKnowledgeBases',
    area: 'knowledge',
    method: 'GET',
    path: BASES,
    handler: http('dashboard/list-knowledge-bases'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', knowledgeBases: 'read' } },
    summary: "List an agent's knowledge bases",
  },
  {
    id: 'GetKnowledgeBase',
    area: 'knowledge',
    method: 'GET',
    path: `${BASES}/{knowledgeBaseId}`,
    handler: http('dashboard/get-knowledge-base'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', knowledgeBases: 'read' } },
    summary: 'Get a knowledge base',
  },
  {
    id: 'UpdateKnowledgeBase',
    area: 'knowledge',
    method: 'PATCH',
    path: `${BASES}/{knowledgeBaseId}`,
    handler: http('dashboard/update-knowledge-base'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', knowledgeBases: 'readWrite' } },
    summary: 'Rename or re-describe a knowledge base',
  },
  {
    id: 'DeleteKnowledgeBase',
    area: 'knowledge',
    method: 'DELETE',
    path: `${BASES}/{knowledgeBaseId}`,
    handler: http('dashboard/delete-knowledge-base'),
    scope: 'dashboard',
    // Marks it `deleting` and takes it out of the default retrieval configurations; the processing worker does the rest.
    access: {
      tables: { agents: 'read', knowledgeBases: 'readWrite', retrievalConfigs: 'readWrite' },
      processingQueue: 'send',
    },
    successStatus: 202,
    summary: 'Delete a knowledge base and its documents in every environment (a job: 202)',
  },
  {
    id: 'ReindexKnowledgeBase',
    area: 'knowledge',
    method: 'POST',
    path: `${BASES}/{knowledgeBaseId}/reindex`,
    handler: http('dashboard/reindex-knowledge-base'),
    scope: 'dashboard',
    // readUpdate: the job is set on the row with one conditional UpdateItem; the documents' counters give its total.
    access: { tables: { agents: 'read', knowledgeBases: 'readUpdate', documents: 'read' }, processingQueue: 'send' },
    successStatus: 202,
    summary:
      "Write the chunks of a knowledge base's ready documents to the index again, from their stored files, in one environment or all three (a job: 202)",
  },
  {
    id: 'GetKnowledgeBaseReindex',
    area: 'knowledge',
    method: 'GET',
    path: `${BASES}/{knowledgeBaseId}/reindex`,
    handler: http('dashboard/get-knowledge-base-reindex'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', knowledgeBases: 'read' } },
    summary: "The knowledge base's last reindex: running or completed, with its counts",
  },
  {
    id: 'QueryKnowledgeBase',
    area: 'knowledge',
    method: 'POST',
    path: '/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/query',
    handler: http('retrieval/query'),
    scope: 'dashboard',
    // Documents: a hit of a document deleted, its chunks not erased yet, is dropped (docs/processing.md, "Owed work").
    access: { tables: { agents: 'read', knowledgeBases: 'read', documents: 'read' }, knowledgeIndex: 'retrieve' },
    summary: 'Retrieve chunks of a knowledge base (with filters, minScore and explain)',
  },
  {
    id: 'GenerateFromKnowledgeBase',
    area: 'knowledge',
    method: 'POST',
    path: '/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/generate',
    handler: http('retrieval/generate'),
    scope: 'dashboard',
    access: {
      tables: { agents: 'read', knowledgeBases: 'read', documents: 'read' },
      knowledgeIndex: 'retrieve',
      model: 'invoke',
    },
    summary: 'Retrieve, then answer with citations that point at the retrieved chunks',
  },
  {
    id: 'GetRetrievalConfig',
    area: 'knowledge',
    method: 'GET',
    path: '/dashboard/agents/{agentId}/retrieval/{environment}',
    handler: http('retrieval/get-config'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', retrievalConfigs: 'read' } },
    summary: 'Default retrieval configuration of an environment',
  },
  {
    id: 'PutRetrievalConfig',
    area: 'knowledge',
    method: 'PUT',
    path: '/dashboard/agents/{agentId}/retrieval/{environment}',
    handler: http('retrieval/put-config'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', knowledgeBases: 'read', retrievalConfigs: 'readWrite' } },
    summary: 'Set the default retrieval configuration of an environment',
  },
  {
    id: 'PreviewDefaultRetrieval',
    area: 'knowledge',
    method: 'POST',
    path: '/dashboard/agents/{agentId}/retrieval/{environment}/preview',
    handler: http('retrieval/preview'),
    scope: 'dashboard',
    access: {
      tables: { agents: 'read', knowledgeBases: 'read', documents: 'read', retrievalConfigs: 'read' },
      knowledgeIndex: 'retrieve',
    },
    summary: 'Run default retrieval as the flow runtime would after a trigger, and show the system message',
  },
  {
    id: 'PutAgentDefinition',
    area: 'flows',
    method: 'PUT',
    path: `${DEFINITION}`,
    handler: http('flows/put-definition'),
    scope: 'dashboard',
    access: {
      tables: { agents: 'read', agentDefinitions: 'readWrite' },
      model: 'list',
      agentCode: 'list',
      mcpSecrets: 'read',
    },
    summary: "Validate and store an agent's definition (its flows, tools and variables) in one environment",
  },
  {
    id: 'GetAgentDefinition',
    area: 'flows',
    method: 'GET',
    path: `${DEFINITION}`,
    handler: http('flows/get-definition'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', agentDefinitions: 'read' } },
    summary: "An agent's stored definition in one environment",
  },
  {
    id: 'ListAgentDefinitionVersions',
    area: 'flows',
    method: 'GET',
    path: `${DEFINITION}/versions`,
    handler: http('flows/list-definition-versions'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', agentDefinitions: 'read' } },
    summary: "The versions of an agent's definition in one environment, newest first: who stored each and when",
  },
  {
    id: 'GetAgentDefinitionVersion',
    area: 'flows',
    method: 'GET',
    path: `${DEFINITION}/versions/{version}`,
    handler: http('flows/get-definition-version'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', agentDefinitions: 'read' } },
    summary: "One version of an agent's definition in one environment, whole",
  },
  {
    id: 'RestoreAgentDefinitionVersion',
    area: 'flows',
    method: 'POST',
    path: `${DEFINITION}/versions/{version}/restore`,
    handler: http('flows/restore-definition-version'),
    scope: 'dashboard',
    access: {
      tables: { agents: 'read', agentDefinitions: 'readWrite' },
      model: 'list',
      agentCode: 'list',
      mcpSecrets: 'read',
    },
    summary: 'Store an earlier version of the definition again, as the next version (checked as a PUT is)',
  },
  {
    id: 'ValidateAgentDefinition',
    area: 'flows',
    method: 'POST',
    path: `${DEFINITION}/validate`,
    handler: http('flows/validate-definition'),
    scope: 'dashboard',
    access: { tables: { agents: 'read' }, model: 'list', agentCode: 'list', mcpSecrets: 'read' },
    summary: 'Check a definition without storing it: every problem at once, with its flow, node, field and rule',
  },
  {
    id: 'ListSessions',
    area: 'flows',
    method: 'GET',
    path: '/dashboard/agents/{agentId}/sessions/{environment}',
    handler: http('flows/list-sessions'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', sessions: 'read' } },
    summary: "An agent's sessions in one environment, newest first: status, flow, node, trigger, times",
  },
  {
    id: 'GetSession',
    area: 'flows',
    method: 'GET',
    path: '/dashboard/agents/{agentId}/sessions/{environment}/{sessionId}',
    handler: http('flows/get-session'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', sessions: 'read' } },
    summary: 'A session: status, memory, messages, node outputs and AI messages',
  },
  {
    id: 'ListModels',
    area: 'flows',
    method: 'GET',
    path: '/dashboard/models',
    handler: http('flows/list-models'),
    scope: 'dashboard',
    access: { model: 'list' },
    summary: 'The models this deployment may call (Bedrock, OpenAI-compatible, offline), the default marked',
  },
  {
    id: 'GetSessionTrace',
    area: 'flows',
    method: 'GET',
    path: '/dashboard/agents/{agentId}/sessions/{environment}/{sessionId}/trace',
    handler: http('flows/get-session-trace'),
    scope: 'dashboard',
    access: { tables: { agents: 'read', sessions: 'read', analytics: 'read' } },
    summary: "A session's steps, oldest first: each node run's input, output, time, edge taken and error",
  },
  {
    id: 'InvokeWebhook',
    area: 'flows',
    method: 'POST',
    path: '/api/v1/webhooks/{agentId}/{environment}/{triggerName}',
    handler: http('flows/webhook'),
    scope: 'webhook',
    access: flowInput,
    maxBodyBytes: FLOW_INPUT_MAX_BODY_BYTES,
    summary: 'Start a session at a webhook trigger, or resume one (sessionId), and answer its result',
  },
  {
    id: 'SendAppEvent',
    area: 'flows',
    method: 'POST',
    path: '/api/v1/app-events/{agentId}/{environment}',
    handler: http('flows/app-event'),
    scope: 'webhook',
    access: flowInput,
    maxBodyBytes: FLOW_INPUT_MAX_BODY_BYTES,
    summary: 'Deliver an external app event to the app trigger that listens to it',
  },
  {
    id: 'Mcp',
    area: 'knowledge',
    method: 'POST',
    path: '/api/v1/mcp',
    handler: http('mcp/server'),
    // Any scope of one of its tools: each tool then needs its REST twin's (search, generate and the list: dashboard;
    // invoke_agent: webhook), and tools/list shows only those the token may call (docs/mcp.md).
    scope: ['dashboard', 'webhook'],
    // The union of what its tools touch: invoke_agent runs a flow as the webhook does, which covers retrieval and
    // generate as well.
    access: flowInput,
    summary:
      'The MCP server (Streamable HTTP, stateless, JSON answers): tools to list and search knowledge bases, generate from them, and invoke agents',
  },
  {
    id: 'CreateToken',
    area: 'dashboard',
    method: 'POST',
    path: '/dashboard/tokens',
    handler: http('dashboard/create-token'),
    scope: 'dashboard',
    // agents: a token restricted to agents (agentIds) is minted only for agents of the caller's organization.
    access: { tables: { tokens: 'readWrite', agents: 'read' } },
    summary: "Create a token of the caller's organization",
  },
  {
    id: 'ListTokens',
    area: 'dashboard',
    method: 'GET',
    path: '/dashboard/tokens',
    handler: http('dashboard/list-tokens'),
    scope: 'dashboard',
    access: { tables: { tokens: 'read' } },
    summary: "List the organization's tokens (never their secrets)",
  },
  {
    id: 'RevokeToken',
    area: 'dashboard',
    method: 'DELETE',
    path: '/dashboard/tokens/{tokenId}',
    handler: http('dashboard/revoke-token'),
    scope: 'dashboard',
    access: { tables: { tokens: 'readWrite' } },
    summary: 'Revoke a token of the organization',
  },
  {
    id: 'CreateWebhookEndpoint',
    area: 'dashboard',
    method: 'POST',
    path: WEBHOOK_ENDPOINTS,
    handler: http('webhooks/create-endpoint'),
    scope: 'dashboard',
    access: webhookEndpointsWrite,
    summary:
      'Register an endpoint for status webhooks (document.ready, document.failed, zip_import.completed, knowledge_base.deleted), of the organization or one agent (owners); its signing secret is shown only in this answer',
  },
  {
    id: 'ListWebhookEndpoints',
    area: 'dashboard',
    method: 'GET',
    path: WEBHOOK_ENDPOINTS,
    handler: http('webhooks/list-endpoints'),
    scope: 'dashboard',
    access: webhookEndpointsRead,
    summary: "The organization's status webhook endpoints (never their secrets)",
  },
  {
    id: 'GetWebhookEndpoint',
    area: 'dashboard',
    method: 'GET',
    path: `${WEBHOOK_ENDPOINTS}/{endpointId}`,
    handler: http('webhooks/get-endpoint'),
    scope: 'dashboard',
    access: webhookEndpointsRead,
    summary: 'A status webhook endpoint: its URL, events, and whether it is enabled or failing',
  },
  {
    id: 'UpdateWebhookEndpoint',
    area: 'dashboard',
    method: 'PATCH',
    path: `${WEBHOOK_ENDPOINTS}/{endpointId}`,
    handler: http('webhooks/update-endpoint'),
    scope: 'dashboard',
    access: webhookEndpointsWrite,
    summary: "Change a status webhook endpoint's URL, events or description, or enable it again (owners)",
  },
  {
    id: 'DeleteWebhookEndpoint',
    area: 'dashboard',
    method: 'DELETE',
    path: `${WEBHOOK_ENDPOINTS}/{endpointId}`,
    handler: http('webhooks/delete-endpoint'),
    scope: 'dashboard',
    access: webhookEndpointsWrite,
    summary: 'Delete a status webhook endpoint: nothing more is sent to it (owners)',
  },
  {
    id: 'RotateWebhookEndpointSecret',
    area: 'dashboard',
    method: 'POST',
    path: `${WEBHOOK_ENDPOINTS}/{endpointId}/secret`,
    handler: http('webhooks/rotate-secret'),
    scope: 'dashboard',
    // readUpdate: it reads the endpoint and sets its secrets with one conditional UpdateItem.
    access: { tables: { webhookEndpoints: 'readUpdate' } },
    successStatus: 201,
    summary:
      "Make a new secret that signs the endpoint's deliveries, shown only in this answer (owners); the previous one signs too for 24 hours",
  },
  {
    id: 'ListWebhookDeliveries',
    area: 'dashboard',
    method: 'GET',
    path: `${WEBHOOK_ENDPOINTS}/{endpointId}/deliveries`,
    handler: http('webhooks/list-deliveries'),
    scope: 'dashboard',
    access: { tables: { webhookEndpoints: 'read', webhookDeliveries: 'read' } },
    summary:
      "A status webhook endpoint's delivery attempts, newest first: event, attempt, status code, error, next try",
  },
  {
    id: 'SignUp',
    area: 'dashboard',
    method: 'POST',
    path: '/dashboard/signup',
    handler: http('dashboard/signup'),
    // Public: the person has no account yet. Closed (403 SIGNUP_CLOSED) unless the deployment opens it.
    scope: null,
    access: { tables: { memberships: 'readWrite', organizations: 'readWrite' }, people: 'signUp' },
    maxBodyBytes: 4096,
    successStatus: 201,
    summary: 'Sign up: a person and a new organization they own',
  },
  {
    id: 'GetOrganization',
    area: 'dashboard',
    method: 'GET',
    path: '/dashboard/organization',
    handler: http('dashboard/get-organization'),
    scope: 'dashboard',
    access: { tables: { organizations: 'read' } },
    summary: "The caller's organization, and who the caller is in it",
  },
  {
    id: 'InviteMember',
    area: 'dashboard',
    method: 'POST',
    path: '/dashboard/members',
    handler: http('dashboard/invite-member'),
    scope: 'dashboard',
    // people: an account (and its temporary password) for an address the pool does not have yet.
    access: {
      tables: { memberships: 'read', invitations: 'readWrite', organizations: 'read' },
      people: 'manage',
    },
    successStatus: 201,
    summary: 'Invite a person to the organization (owners signed in): an offer they accept',
  },
  {
    id: 'ListMembers',
    area: 'dashboard',
    method: 'GET',
    path: '/dashboard/members',
    handler: http('dashboard/list-members'),
    scope: 'dashboard',
    access: { tables: { memberships: 'read', invitations: 'read' } },
    summary: "List the organization's people and open invitations",
  },
  {
    id: 'RemoveMember',
    area: 'dashboard',
    method: 'DELETE',
    path: '/dashboard/members/{email}',
    handler: http('dashboard/remove-member'),
    scope: 'dashboard',
    // tokens: the tokens the person made there end with their membership.
    access: { tables: { memberships: 'readWrite', invitations: 'readWrite', tokens: 'readWrite' } },
    summary:
      'Remove a person from the organization, with the tokens they made, or cancel an invitation (owners signed in)',
  },
  /**
   * A person's own routes (core/dashboard/my-account.ts): no organization needed, no token taken. One function serves
   * the four (`functionOf`), with the access they share.
   */
  {
    id: 'GetMe',
    area: 'dashboard',
    personal: true,
    method: 'GET',
    path: '/dashboard/me',
    handler: http('dashboard/me'),
    scope: 'dashboard',
    access: PERSONAL,
    summary: 'The person signed in: their organizations and the invitations to their address',
  },
  {
    id: 'AcceptInvitation',
    area: 'dashboard',
    personal: true,
    method: 'POST',
    path: '/dashboard/me/invitations/{organizationId}',
    handler: http('dashboard/me'),
    scope: 'dashboard',
    access: PERSONAL,
    functionOf: 'GetMe',
    successStatus: 201,
    summary: 'Accept an invitation to an organization: a membership of the person signed in',
  },
  {
    id: 'DeclineInvitation',
    area: 'dashboard',
    personal: true,
    method: 'DELETE',
    path: '/dashboard/me/invitations/{organizationId}',
    handler: http('dashboard/me'),
    scope: 'dashboard',
    access: PERSONAL,
    functionOf: 'GetMe',
    summary: 'Decline an invitation to an organization',
  },
  {
    id: 'CreateOrganization',
    area: 'dashboard',
    personal: true,
    method: 'POST',
    path: '/dashboard/me/organizations',
    handler: http('dashboard/me'),
    scope: 'dashboard',
    access: PERSONAL,
    functionOf: 'GetMe',
    successStatus: 201,
    maxBodyBytes: 4096,
    summary: 'Found an organization the person signed in owns (where sign-up is open)',
  },
];

/**
 * The routes that make an organization on a caller's own say: limited per client address (lib/local/client-limits.ts;
 * the web ACL's sign-up rule in AWS, lib/constructs/api-firewall.ts).
 */
export const SIGN_UP_ROUTES: readonly string[] = ['SignUp', 'CreateOrganization'];

/** A knowledge base in one environment, as the dashboard addresses it. */
const DATASET = '/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}';

/**
 * The customer API's document routes, its analytics query and its webhooks (the flow playground) as the dashboard
 * offers them (docs/console.md): a person's ID token is never taken on `/api/v1`, so the console reaches the same
 * handlers through these, with the `dashboard` scope and the dataset in the path. Each is `Dashboard<id of the customer route>`, served by the customer route's own function
 * (`functionOf`: one more method on it, not a function of its own), so both run the same code with the same access;
 * the handler answers both (lambdas/shared/http.ts, `dashboardMirrorsOf`).
 */
const DASHBOARD_MIRRORS: readonly { readonly of: string; readonly method: HttpMethod; readonly path: string }[] = [
  { of: 'ListDocuments', method: 'GET', path: `${DATASET}/documents` },
  { of: 'GetDocument', method: 'GET', path: `${DATASET}/document` },
  { of: 'ListDocumentChunks', method: 'GET', path: `${DATASET}/document/chunks` },
  { of: 'DeleteDocument', method: 'DELETE', path: `${DATASET}/document` },
  { of: 'PatchMetadata', method: 'PATCH', path: `${DATASET}/document/metadata` },
  { of: 'RetryDocument', method: 'POST', path: `${DATASET}/document/retry` },
  { of: 'UploadLink', method: 'POST', path: `${DATASET}/documents/upload-link` },
  { of: 'UploadComplete', method: 'POST', path: '/dashboard/knowledge/upload-complete' },
  { of: 'ListZipJobs', method: 'GET', path: `${DATASET}/zip-jobs` },
  { of: 'GetZipJob', method: 'GET', path: '/dashboard/knowledge/zip-jobs/{zipJobId}' },
  { of: 'QueryEvents', method: 'POST', path: '/dashboard/agents/{agentId}/events' },
  { of: 'InvokeWebhook', method: 'POST', path: '/dashboard/agents/{agentId}/webhooks/{environment}/{triggerName}' },
];

const MIRRORED: readonly HttpRoute[] = DASHBOARD_MIRRORS.map((mirror) => {
  const original = TABLE_OF_ROUTES.find((route) => route.id === mirror.of);
  if (!original) throw new Error(`dashboard mirror of unknown route ${mirror.of}`);
  return {
    ...original,
    id: `Dashboard${original.id}`,
    method: mirror.method,
    path: mirror.path,
    scope: 'dashboard',
    summary: `${original.summary} (dashboard)`,
    functionOf: original.id,
  };
});

/** The dashboard routes that share the handler of route `id` (none for most routes). */
export function dashboardMirrorsOf(id: string): readonly HttpRoute[] {
  return MIRRORED.filter((route) => route.id === `Dashboard${id}`);
}

/**
 * Every route. Each that takes a token counts its requests against its organization's rate limit (or its token's,
 * core/auth/rate-limit.ts, in shared/http.ts): it updates the counters table, and only that, unless the route names
 * more (the analytics query reads and updates its offset marks there).
 */
export const ROUTES: readonly HttpRoute[] = [...TABLE_OF_ROUTES, ...MIRRORED].map((route) =>
  route.scope === null
    ? route
    : {
        ...route,
        access: {
          ...route.access,
          tables: { ...route.access.tables, rateLimits: route.access.tables?.rateLimits ?? 'update' },
        },
      },
);

/** The Lambda authorizer (cached by API Gateway) that turns a bearer token into organization and scopes. */
export const AUTHORIZER = {
  handler: 'lambdas/handlers/auth/authorizer.ts',
  // readUpdate: it records each token's last use (once a minute); it never creates or deletes one. Memberships: a
  // person's organizations and roles, and whether the owner at a token's root still is one. readPut and readDelete:
  // the one move of a row of the members table of before issue 33 to a membership, at its person's first sign-in
  // (docs/people.md). Writing a membership gives it nothing it lacks: its answer alone decides who a caller is.
  access: { tables: { tokens: 'readUpdate', memberships: 'readPut', members: 'readDelete' }, people: 'verify' },
} as const;

/** Functions that are not routes: the processing queue's consumer and the scheduled watchdog. */
export const WORKERS = {
  processing: {
    handler: 'lambdas/handlers/queue/process-documents.ts',
    // Knowledge bases and retrieval configurations: the deletion job of a knowledge base ends with its row, and its
    // reindex job moves on its row. Agents,
    // definitions and sessions: the deletion job of an agent removes them.
    access: {
      tables: {
        documents: 'readWrite',
        zipJobs: 'readWrite',
        knowledgeBases: 'readWrite',
        retrievalConfigs: 'readWrite',
        agents: 'readWrite',
        agentDefinitions: 'readWrite',
        sessions: 'readWrite',
      },
      documentsBucket: 'readWrite',
      processingQueue: 'send',
      // Status webhooks: a document ready or failed, a ZIP import completed, a knowledge base deleted.
      webhookQueue: 'send',
    },
  },
  watchdog: {
    handler: 'lambdas/handlers/scheduled/watchdog.ts',
    // The bucket and the upload sessions: it deletes what uploads nobody completed wrote. Knowledge bases and
    // agents: it resumes a deletion job or a reindex whose message was lost.
    access: {
      tables: {
        documents: 'readWrite',
        zipJobs: 'readWrite',
        uploads: 'readWrite',
        knowledgeBases: 'readWrite',
        agents: 'readWrite',
      },
      documentsBucket: 'readWrite',
      processingQueue: 'send',
      // Status webhooks: a document it fails (stuck) is `document.failed`.
      webhookQueue: 'send',
    },
  },
  /**
   * Every minute: sends each fire of the schedule triggers (their cron in their time zone) to the flow runner's queue,
   * which runs it. Reads the definitions that hold schedule triggers, and reads and moves forward the latest fire
   * sent of each trigger (an item of the rate limits table); runs no flow, so nothing of the flow runtime.
   */
  scheduleTick: {
    handler: 'lambdas/handlers/scheduled/schedule-tick.ts',
    access: { tables: { agentDefinitions: 'read', rateLimits: 'readUpdate' }, flowRunQueue: 'send' },
  },
  /**
   * Consumes the flow runner's queue: goes on with runs handed over by a webhook or app event, and runs the fires
   * the schedule tick sends (lib/constructs/flow-runner.ts). Reads the images of the conversation; sends to its own
   * queue when it reaches its own deadline.
   */
  flowRunner: {
    handler: 'lambdas/handlers/queue/flow-runner.ts',
    access: { ...flowRun, attachments: 'read', flowRunQueue: 'send' },
  },
  /**
   * Consumes the status webhooks' queue (lib/constructs/webhook-delivery.ts; docs/webhooks.md): fans each event out to
   * its endpoints, signs and sends each attempt through the outbound guard, records it, queues the next one after a
   * failure, and disables an endpoint after a day of failures.
   */
  webhookDelivery: {
    handler: 'lambdas/handlers/queue/deliver-webhooks.ts',
    access: {
      tables: { webhookEndpoints: 'readUpdate', webhookDeliveries: 'readPut' },
      webhookQueue: 'send',
    },
  },
  /** Runs one browser task in Chromium for a flow function (lib/constructs/browser-task.ts): its model, no table. */
  browserTask: {
    handler: 'lambdas/handlers/browser/browser-task.ts',
    access: { model: 'invoke' },
  },
} as const satisfies Record<string, { handler: string; access: ResourceAccess }>;

/** What a handler reads of its routes when it runs (lambdas/shared/http.ts). */
export type RouteFacts = Pick<HttpRoute, 'id' | 'method' | 'path' | 'scope' | 'personal' | 'maxBodyBytes'>;

/** Replaced in a function's bundle by the JSON of its routes' facts (bundledRoutesDefine); unset anywhere else. */
export const BUNDLED_ROUTES_EXPRESSION = 'process.env.AGENT_PLATFORM_BUNDLED_ROUTES';

/**
 * The esbuild `define` that gives the bundle of `handlerFile` the facts of every route it handles (its own, its
 * dashboard mirrors, the routes that share the file), so that the bundle carries those instead of this whole table:
 * about 18 KB less in every API function. None for a file that no route names.
 */
export function bundledRoutesDefine(handlerFile: string): Record<string, string> {
  const facts: RouteFacts[] = ROUTES.filter((route) => route.handler === handlerFile).map(
    ({ id, method, path, scope, personal, maxBodyBytes }) => ({ id, method, path, scope, personal, maxBodyBytes }),
  );
  // The replacement is an expression: a string literal of the JSON.
  return facts.length === 0 ? {} : { [BUNDLED_ROUTES_EXPRESSION]: JSON.stringify(JSON.stringify(facts)) };
}

export function routeById(id: string): HttpRoute {
  const route = ROUTES.find((r) => r.id === id);
  if (!route) throw new Error(`no route with id ${id}`);
  return route;
}
