/**
 * Every error status each route answers, with the codes it can carry (`error.code`), for the OpenAPI document
 * (openapi-document.ts lists them as an `enum`, so an answer with a code not listed here fails the tests' answer
 * check: lib/local/openapi-check.ts). Common sets by what a route is (a token's, a JSON body's, a dashboard route's),
 * then each route's own. Attributed from the throws of lambdas/core, shared, composition and handlers, and checked
 * against what the integration suites receive.
 */
/** Status → the codes it may carry. */
export type ErrorStatuses = Readonly<Record<number, readonly string[]>>;

/** What each status means, whatever the route (the document's description of the status). */
export const STATUS_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'The request is invalid: `details` names each field and the rule it breaks',
  401: 'No valid credential: a missing, unknown, expired or revoked token (or ID token)',
  403: 'The credential is valid but may not do this (a scope it lacks, an agent it is not given, a role); in AWS also the API firewall’s refusal (REQUEST_BLOCKED)',
  404: 'What the request names does not exist for the caller (or is not theirs)',
  405: 'The path exists but not with this method (answered by the local runtime; in AWS by API Gateway)',
  408: 'The request did not arrive in time (answered by the local runtime; in AWS by API Gateway)',
  409: 'The request conflicts with the current state of what it names',
  410: 'What the request names has expired',
  413: 'The request (its body, or the state it would make) is too large',
  415: 'A body that is not sent as `Content-Type: application/json`',
  429: 'Too many requests: the token’s or organization’s limit (or the client’s, for sign-ups and requests without a valid credential; in AWS also the stage’s throttle and the firewall’s rate rule); `Retry-After` says when to retry',
  431: 'The request headers exceed 16 KB (answered by the local runtime; in AWS by API Gateway)',
  500: 'An internal error: nothing of it is revealed; the request id is in the logs',
  502: 'An upstream (the model or the embedder) failed or answered badly; in AWS, INTERNAL_ERROR: the function failed',
  503: 'A dependency is throttling or briefly unavailable (`Retry-After` says when to retry), or not configured',
  504: 'An upstream (the model or the embedder) did not answer in time; in AWS, INTERNAL_ERROR: the function did not answer within API Gateway’s 29 s',
};

/**
 * Answered for any request before (or instead of) its route's handler: locally by the router (lib/local/router.ts)
 * and Node's HTTP parser, in AWS by API Gateway's gateway responses in the same shape (lib/constructs/platform-api.ts:
 * its own refusals BAD_REQUEST, its throttle and the WAF's rate rule RATE_LIMITED, the WAF's managed rules
 * REQUEST_BLOCKED, a function that failed or timed out INTERNAL_ERROR); and by every handler's error middleware
 * (lambdas/shared/http.ts).
 */
const EVERY_ROUTE: ErrorStatuses = {
  400: ['VALIDATION_ERROR', 'BAD_REQUEST'],
  403: ['REQUEST_BLOCKED'],
  405: ['METHOD_NOT_ALLOWED'],
  408: ['REQUEST_TIMEOUT'],
  // The router's own limit on a body (API Gateway's 10 MiB; 16 KiB on a route without a token).
  413: ['PAYLOAD_TOO_LARGE', 'BAD_REQUEST'],
  429: ['RATE_LIMITED'],
  431: ['HEADERS_TOO_LARGE'],
  500: ['INTERNAL_ERROR'],
  502: ['INTERNAL_ERROR'],
  504: ['INTERNAL_ERROR'],
};

/** A route that reads a JSON body (POST, PUT, PATCH, and DELETE when it has one): lambdas/shared/http.ts readJsonBody. */
const JSON_BODY: ErrorStatuses = {
  400: ['INVALID_JSON'],
  413: ['PAYLOAD_TOO_LARGE'],
  415: ['UNSUPPORTED_MEDIA_TYPE'],
};

/** A route that needs a token: the authorizer, the scope, the rate limit, a throttled dependency. */
const WITH_TOKEN: ErrorStatuses = {
  401: ['UNAUTHORIZED'],
  403: ['FORBIDDEN'],
  429: ['RATE_LIMITED'],
  503: ['SERVICE_BUSY'],
};

/** A dashboard route a person may call too (core/auth/people.ts): which organization they act in. */
const PERSON_IN_ORGANIZATION: ErrorStatuses = {
  400: ['ORGANIZATION_REQUIRED'],
  403: ['NOT_A_MEMBER', 'NO_ORGANIZATION'],
};

const AGENT: ErrorStatuses = { 404: ['AGENT_NOT_FOUND'] };
const KNOWLEDGE_BASE: ErrorStatuses = { 404: ['AGENT_NOT_FOUND', 'KNOWLEDGE_BASE_NOT_FOUND'] };
const DOCUMENT: ErrorStatuses = { 404: ['AGENT_NOT_FOUND', 'KNOWLEDGE_BASE_NOT_FOUND', 'DOCUMENT_NOT_FOUND'] };
const UPLOAD_COMPLETE: ErrorStatuses = {
  404: ['AGENT_NOT_FOUND', 'KNOWLEDGE_BASE_NOT_FOUND', 'UPLOAD_NOT_FOUND', 'DOCUMENT_NOT_FOUND'],
  409: ['UPLOAD_NOT_RECEIVED'],
  410: ['UPLOAD_EXPIRED'],
};
const RETRY: ErrorStatuses = { ...DOCUMENT, 409: ['DOCUMENT_NOT_FAILED', 'DOCUMENT_NOT_RETRYABLE'] };
const DEFINITION: ErrorStatuses = { 404: ['AGENT_NOT_FOUND', 'DEFINITION_NOT_FOUND'] };
const SESSION: ErrorStatuses = { 404: ['AGENT_NOT_FOUND', 'SESSION_NOT_FOUND'] };
/** A run in the request (core/flows/runtime.ts): a failed flow is a 200 with `status: "failed"`; these are refusals. */
const FLOW_RUN: ErrorStatuses = {
  404: ['AGENT_NOT_FOUND', 'DEFINITION_NOT_FOUND', 'TRIGGER_NOT_FOUND', 'SESSION_NOT_FOUND'],
  409: ['SESSION_BUSY'],
  // Over the route's 5 MiB body, or a session state that would exceed its limit.
  413: ['PAYLOAD_TOO_LARGE', 'SESSION_TOO_LARGE'],
  // The flow work budget of the organization (core/flows/work-budget.ts).
  429: ['RATE_LIMITED'],
};
const EMBEDDER: ErrorStatuses = { 502: ['EMBEDDER_ERROR'], 504: ['EMBEDDER_TIMEOUT'] };
const PEOPLE: ErrorStatuses = { 409: ['PEOPLE_NOT_CONFIGURED'] };

/** Each route's own statuses and codes, beside the common sets (a dashboard mirror has its customer route's). */
const ROUTE_ERRORS: Readonly<Record<string, ErrorStatuses>> = {
  UploadLink: { ...KNOWLEDGE_BASE, 409: ['DUPLICATE_CUSTOM_DOCUMENT_ID'] },
  UploadComplete: UPLOAD_COMPLETE,
  UpdateUploadLink: DOCUMENT,
  UpdateUploadComplete: UPLOAD_COMPLETE,
  PatchMetadata: DOCUMENT,
  GetDocument: DOCUMENT,
  ListDocumentChunks: { ...DOCUMENT, 409: ['DOCUMENT_FAILED', 'CHUNKS_NOT_LISTED'] },
  DeleteDocument: DOCUMENT,
  ListDocuments: KNOWLEDGE_BASE,
  RetryDocument: RETRY,
  ListZipJobs: KNOWLEDGE_BASE,
  GetZipJob: { 404: ['ZIP_JOB_NOT_FOUND'] },
  QueryEvents: AGENT,
  TrackEvent: AGENT,
  GetAgent: AGENT,
  RenameAgent: AGENT,
  DeleteAgent: AGENT,
  RotateCallbackSecret: { ...AGENT, 409: ['CALLBACK_SECRET_CONFLICT'] },
  CreateKnowledgeBase: AGENT,
  ListKnowledgeBases: AGENT,
  GetKnowledgeBase: KNOWLEDGE_BASE,
  UpdateKnowledgeBase: KNOWLEDGE_BASE,
  DeleteKnowledgeBase: KNOWLEDGE_BASE,
  ReindexKnowledgeBase: { ...KNOWLEDGE_BASE, 409: ['REINDEX_RUNNING'] },
  GetKnowledgeBaseReindex: { 404: ['AGENT_NOT_FOUND', 'KNOWLEDGE_BASE_NOT_FOUND', 'REINDEX_NOT_FOUND'] },
  QueryKnowledgeBase: { ...KNOWLEDGE_BASE, ...EMBEDDER },
  GenerateFromKnowledgeBase: {
    ...KNOWLEDGE_BASE,
    502: ['MODEL_ERROR', 'EMBEDDER_ERROR'],
    503: ['MODEL_NOT_CONFIGURED'],
    504: ['MODEL_TIMEOUT', 'EMBEDDER_TIMEOUT'],
  },
  GetRetrievalConfig: AGENT,
  PutRetrievalConfig: KNOWLEDGE_BASE,
  PreviewDefaultRetrieval: { ...KNOWLEDGE_BASE, ...EMBEDDER },
  PutAgentDefinition: { ...AGENT, 409: ['VERSION_CONFLICT'] },
  GetAgentDefinition: DEFINITION,
  ListAgentDefinitionVersions: DEFINITION,
  GetAgentDefinitionVersion: { 404: ['AGENT_NOT_FOUND', 'DEFINITION_VERSION_NOT_FOUND'] },
  RestoreAgentDefinitionVersion: {
    404: ['AGENT_NOT_FOUND', 'DEFINITION_NOT_FOUND', 'DEFINITION_VERSION_NOT_FOUND'],
    409: ['VERSION_CONFLICT'],
  },
  ValidateAgentDefinition: AGENT,
  ListSessions: AGENT,
  GetSession: SESSION,
  GetSessionTrace: SESSION,
  InvokeWebhook: FLOW_RUN,
  SendAppEvent: FLOW_RUN,
  // A token restricted to agents names them (agentIds): each must be the organization's.
  CreateToken: AGENT,
  RevokeToken: { 404: ['TOKEN_NOT_FOUND'] },
  SignUp: {
    403: ['SIGNUP_CLOSED'],
    409: ['EMAIL_TAKEN', ...PEOPLE[409]],
    // The per-client limit of sign-ups (lib/local/client-limits.ts; the web ACL in AWS).
    429: ['RATE_LIMITED'],
    503: ['SERVICE_BUSY'],
  },
  // Only inviting reaches the people directory (core/dashboard/members.ts): an address with an account is invited too.
  InviteMember: { 409: ['ALREADY_MEMBER', 'INVITATION_LIMIT', ...PEOPLE[409]] },
  RemoveMember: { 404: ['MEMBER_NOT_FOUND'], 409: ['LAST_OWNER'] },
  AcceptInvitation: { 404: ['INVITATION_NOT_FOUND'], 409: ['ALREADY_MEMBER', 'ORGANIZATION_LIMIT'] },
  DeclineInvitation: { 404: ['INVITATION_NOT_FOUND'] },
  CreateOrganization: { 403: ['SIGNUP_CLOSED'], 409: ['ORGANIZATION_LIMIT'] },
};

/** Merges sets: a status's codes are the union of its codes in each. */
function merge(...sets: ErrorStatuses[]): Record<number, string[]> {
  const merged: Record<number, string[]> = {};
  for (const set of sets) {
    for (const [status, codes] of Object.entries(set)) {
      const list = merged[Number(status)] ?? [];
      for (const code of codes) if (!list.includes(code)) list.push(code);
      merged[Number(status)] = list;
    }
  }
  return merged;
}

/** Every error status `route` (of lib/routes.ts) can answer, each with its codes in a stable order. */
export function errorStatusesOf(route: {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly scope: string | null;
  readonly personal?: true;
}): ErrorStatuses {
  const own = ROUTE_ERRORS[route.id] ?? ROUTE_ERRORS[route.id.replace(/^Dashboard(?=[A-Z])/, '')] ?? {};
  const person = route.scope !== null && route.path.startsWith('/dashboard') && !route.personal;
  // The token's first, so a status's example (its first code) is the one a caller meets most.
  return merge(
    route.scope === null ? {} : WITH_TOKEN,
    EVERY_ROUTE,
    route.method === 'GET' ? {} : JSON_BODY,
    person ? PERSON_IN_ORGANIZATION : {},
    own,
  );
}

/** An example error answer of `code`, for the document. */
export function errorExample(status: number, code: string): { success: false; error: Record<string, unknown> } {
  const message = EXAMPLE_MESSAGES[code] ?? STATUS_DESCRIPTIONS[status] ?? 'Error';
  const details =
    code === 'VALIDATION_ERROR'
      ? [{ field: 'knowledgeBaseId', rule: 'format', message: 'knowledgeBaseId must be a UUID' }]
      : [];
  return { success: false, error: { code, message, details } };
}

const EXAMPLE_MESSAGES: Readonly<Record<string, string>> = {
  VALIDATION_ERROR: 'knowledgeBaseId must be a UUID',
  UNAUTHORIZED: 'A valid bearer token is required',
  FORBIDDEN: 'This route needs a token with scope knowledge-management',
  RATE_LIMITED: 'Too many requests: at most 100 every 1 s for this token and for its organization; retry in 1 s',
  SERVICE_BUSY: 'The service is busy; retry in 5 seconds',
  INTERNAL_ERROR: 'Internal error',
  METHOD_NOT_ALLOWED: 'PUT is not allowed here; use GET',
  PAYLOAD_TOO_LARGE: 'The request body is too large',
  UNSUPPORTED_MEDIA_TYPE: 'The request body must be JSON sent with Content-Type: application/json',
  HEADERS_TOO_LARGE: 'The request headers exceed 16 KB',
  REQUEST_TIMEOUT: 'The request did not arrive in time',
};
