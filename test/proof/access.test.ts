/**
 * Access matrix (issue 7, part 3): every route of lib/routes.ts × { no token, bad token, wrong scope, other
 * organization, right token } → the status the README promises, each cell a named test; then the pre-signed upload
 * URLs: tampered, expired, and replayed after upload-complete.
 *
 * Issue 22 adds two matrices: every scope set a caller (with `dashboard`) can hold × every scope set it can ask
 * POST /dashboard/tokens for (a wider one → 403 FORBIDDEN and no token stored), and every scoped route with a token
 * of org A restricted to one of its agents: with another agent of org A → the 404 another organization gets, with
 * its own agent → the right token's answer.
 *
 * The table is keyed by route id and checked against ROUTES, so a new route without a row fails here. Org A's
 * resources are made through the public API before the matrix runs; every route that deletes or consumes something
 * gets a resource of its own, so the order of the cells does not matter for the others.
 */

import { type HttpRoute, ROUTES, routeById, SCOPES, type Scope } from '../../lib/routes';
import { createDataset, type Dataset, putFile, type UploadLink, uploadDocument } from '../helpers/fixtures';
import { helloAndTicketDefinition as definition } from '../helpers/flow-definitions';
import { cognitoOf, confirmAddress, signIn as signInWith } from '../helpers/people';
import { pollUntil } from '../helpers/poll';
import { type ApiResponse, client, startService, type TestService } from '../helpers/service';
import { tokenTable } from '../helpers/token-table';
import { printFigures } from './size';

type Call = ReturnType<typeof client>;
type Body = Record<string, unknown>;

const CASES = ['no token', 'bad token', 'wrong scope', 'other organization', 'right'] as const;
type Case = (typeof CASES)[number];

const BAD_TOKEN = 'aps_this-token-was-never-issued-0000000000';
const DOCS = '/api/v1/knowledge/documents';

/** What a cell sends: path parameters (filled into the route's own path), query and JSON body. */
interface Request {
  readonly params?: Record<string, string>;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
}

/** Org B's all-scope token on the same request. */
type OtherOrg =
  | { readonly status: 404; readonly code: string }
  /** Routes that address no resource of org A (lists, creations): they act in org B only. */
  | { readonly status: 200 | 201; readonly check: (body: Body) => Promise<void> | void };

type Row =
  | {
      readonly public: true;
      /** What each cell sends (a fresh one per cell); no request: a GET of the route's path. */
      readonly request?: () => Request;
      /** Its status whatever the token (default 200). */
      readonly success?: 200 | 201;
    }
  | {
      readonly public?: false;
      /** A valid request for the resources of one agent of org A (`fx` in the main matrix). */
      readonly request: (f: Fixtures) => Request;
      /** The documented success status of the right token. */
      readonly success: 200 | 201 | 202;
      readonly otherOrg: OtherOrg;
      /** Extra checks of the right token's answer. */
      readonly check?: (body: Body, f: Fixtures) => Promise<void> | void;
      /** What a token restricted to one agent gets; by default (otherOrg 404) as described at Restricted. */
      readonly restricted?: Restricted;
      /**
       * Only a person signed in may (issue 33): the right caller is org A's owner signed in (ID token), the other
       * organization's is another organization's owner, and a token of org A with every scope is the wrong credential
       * (the `wrong scope` cell: 403).
       */
      readonly person?: true;
    };

/**
 * A token of org A restricted to agent `own`, against `sibling`, another agent of org A.
 * - `agent` (the default of every row whose otherOrg is a 404): `request(sibling)` → that same 404 (or `code`),
 *   `request(own)` → the right token's status and checks; `request` here replaces the row's.
 * - `organization`: the route addresses no agent; `check` gets the answer (lists show `own` alone), or `forbidden`.
 */
type Restricted =
  | { readonly addresses: 'agent'; readonly code?: string; readonly request?: (f: Fixtures) => Request }
  | { readonly addresses: 'organization'; readonly status: 200; readonly check: (body: Body) => void }
  | { readonly addresses: 'organization'; readonly status: 403 };

/** Everything the rows address, made in beforeAll. */
interface Fixtures {
  a: Dataset;
  /** A second knowledge base of org A's agent, deleted by the DeleteKnowledgeBase cell. */
  kbToDelete: string;
  /** An agent of org A with nothing in it, deleted by the DeleteAgent row. */
  agentToDelete: string;
  s3Key: string;
  /** A document deleted by the DeleteDocument cell. */
  s3KeyToDelete: string;
  /** A `failed` document (empty), processed again by the RetryDocument cell. */
  failedS3Key: string;
  /** A PUT but not completed upload, completed by the UploadComplete cell. */
  pendingUploadId: string;
  /** Its document's key: not found until the upload is completed. */
  pendingS3Key: string;
  /** A PUT but not completed update, completed by the UpdateUploadComplete cell. */
  pendingUpdateId: string;
  zipJobId: string;
  sessionId: string;
  /** A token of org A (scope analytics), revoked by the RevokeToken cell. */
  tokenToRevoke: string;
  /** A person invited to org A, removed by the RemoveMember cell. */
  memberToRemove: string;
  /** What the dashboard's mirrors of the consuming document routes consume instead (DashboardDeleteDocument…). */
  dashboard: Pick<Fixtures, 's3KeyToDelete' | 'failedS3Key' | 'pendingUploadId'>;
  /** A status webhook endpoint scoped to the agent, and another deleted by the DeleteWebhookEndpoint cell. */
  webhookEndpointId: string;
  webhookEndpointToDelete: string;
}

let service: TestService;
let shortTtl: TestService;
let orgA: Call;
let orgB: Call;
let fx: Fixtures;
/** Org B's own agent, which its lists must show. */
let agentB: string;
/** Two more agents of org A, with everything `fx` has: the restricted token's own agent, and one it must not see. */
let own: Fixtures;
let sibling: Fixtures;
/** An org A token with every scope, restricted to `own`'s agent. */
let restrictedToken: string;
/** Org A tokens with every scope but one. */
const allBut = {} as Record<Scope, string>;
/** Org A tokens with none of the scopes of a route that takes any of several (the MCP server), by those scopes. */
const noneOf = new Map<string, string>();
/** An upload link of the short-TTL runtime, issued in beforeAll; its URL lives one second. */
let expiringLink: { link: UploadLink; issuedAt: number };

const dataset = (f: Fixtures) => ({ ...f.a });
const agentPath = (f: Fixtures) => ({ agentId: f.a.agentId });
const envPath = (f: Fixtures) => ({ agentId: f.a.agentId, environment: f.a.environment });
const kbPath = (f: Fixtures) => ({ agentId: f.a.agentId, knowledgeBaseId: f.a.knowledgeBaseId });
const kbInEnvPath = (f: Fixtures) => ({ ...envPath(f), knowledgeBaseId: f.a.knowledgeBaseId });
const notFound = (code: string): OtherOrg => ({ status: 404, code });
const ids = (body: Body, key = 'agentId', list = 'data') =>
  (body[list] as Record<string, string>[]).map((item) => item[key]);

const MCP_LIST_KNOWLEDGE_BASES = {
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'list_knowledge_bases', arguments: {} },
};
/** The knowledge bases of an MCP answer to MCP_LIST_KNOWLEDGE_BASES. */
const mcpKnowledgeBases = (body: Body) =>
  ((body.result as Body).structuredContent as { knowledgeBases: { agentId: string; knowledgeBaseId: string }[] })
    .knowledgeBases;

/** Org B lists its own agents: its agent is there, org A's is not. */
const onlyOrgBAgents: OtherOrg = {
  status: 200,
  check: (body) => {
    expect(ids(body)).toContain(agentB);
    expect(ids(body)).not.toContain(fx.a.agentId);
  },
};

/** Org A's owner signed in (DEV_USER of the runtime), and another organization's owner (a sign-up). */
/** Org A's owner: the local runtime's DEV_USER, or the deployment's (TEST_PEOPLE). */
let ANN = { email: 'ann.matrix@example.com', password: 'Matrix-pass-1' };
/** The password of the people the matrix signs up. */
const PASSWORD = 'Matrix-pass-1';
let annToken: string;
let orgAId: string;
let beaToken: string;
/** Organizations that invited Ann, for the AcceptInvitation and DeclineInvitation cells. */
let invitedBy: { accept: string; decline: string };

/** The headers of a person's request: the organization it acts in. */
function personHeaders(token: string | null): Record<string, string> | undefined {
  if (token === annToken) return { 'x-organization-id': orgAId };
  return undefined;
}

/** An e-mail no cell has used. */
let people = 0;
const newEmail = (prefix: string) => `${prefix}-${process.pid}-${++people}@matrix.example.com`;

const ROWS: Record<string, Row> = {
  Health: { public: true },
  OpenApi: { public: true },
  // Open locally (the local runtime's sign-up is open); every cell signs a new person up, whatever it sends.
  SignUp: {
    public: true,
    request: () => ({ body: { email: newEmail('signup'), password: 'Matrix-pass-1', organizationName: 'Matrix' } }),
    success: 201,
  },
  UploadLink: {
    request: (f) => ({ body: { ...dataset(f), fileName: 'matrix.txt' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body.uploadUrl).toEqual(expect.any(String)),
  },
  UploadComplete: {
    request: (f) => ({ body: { uploadId: f.pendingUploadId } }),
    success: 200,
    otherOrg: notFound('UPLOAD_NOT_FOUND'),
    check: (body) => expect(body).toMatchObject({ type: 'document', status: 'uploaded' }),
  },
  UpdateUploadLink: {
    request: (f) => ({ body: { ...dataset(f), s3Key: f.s3Key, fileName: 'matrix-v2.txt' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body.s3Key).toBe(f.s3Key),
  },
  UpdateUploadComplete: {
    request: (f) => ({ body: { uploadId: f.pendingUpdateId } }),
    success: 200,
    otherOrg: notFound('UPLOAD_NOT_FOUND'),
    check: (body) => expect(body).toMatchObject({ type: 'document', status: 'uploaded' }),
  },
  PatchMetadata: {
    request: (f) => ({ body: { ...dataset(f), s3Key: f.s3Key, label2: 'checked:matrix' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body).toMatchObject({ s3Key: f.s3Key, label2: 'checked:matrix' }),
  },
  GetDocument: {
    request: (f) => ({ query: { ...dataset(f), s3Key: f.s3Key } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body.s3Key).toBe(f.s3Key),
  },
  ListDocumentChunks: {
    request: (f) => ({ query: { ...dataset(f), s3Key: f.s3Key, limit: '10' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    // Ready, or uploaded again by the UpdateUploadComplete cell: either way its chunks (the previous ones) are there.
    check: (body) => expect(body.total).toBeGreaterThan(0),
  },
  DeleteDocument: {
    request: (f) => ({ body: { ...dataset(f), s3Key: f.s3KeyToDelete } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body).toMatchObject({ s3Key: f.s3KeyToDelete, deleted: true }),
  },
  ListDocuments: {
    request: (f) => ({ query: { ...dataset(f), limit: '100' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => {
      expect(ids(body, 's3Key', 'documents')).toContain(f.s3Key);
      expect((body.counts as { total: number }).total).toBeGreaterThan(0);
    },
  },
  RetryDocument: {
    request: (f) => ({ body: { ...dataset(f), s3Key: f.failedS3Key } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body).toMatchObject({ s3Key: f.failedS3Key, status: 'uploaded', error: null }),
  },
  ListZipJobs: {
    request: (f) => ({ query: dataset(f) }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(ids(body, 'zipJobId')).toContain(f.zipJobId),
  },
  GetZipJob: {
    request: (f) => ({ params: { zipJobId: f.zipJobId } }),
    success: 200,
    otherOrg: notFound('ZIP_JOB_NOT_FOUND'),
    check: (body, f) => expect(body.zipJobId).toBe(f.zipJobId),
  },
  AgentsList: {
    request: () => ({}),
    success: 200,
    otherOrg: onlyOrgBAgents,
    check: (b) => expectAgentA(b),
    restricted: { addresses: 'organization', status: 200, check: (b) => expectOwnAgentOnly(b) },
  },
  QueryEvents: {
    request: (f) => ({ body: { agentId: f.a.agentId } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect((body.data as unknown[]).length).toBeGreaterThan(0),
  },
  TrackEvent: {
    request: (f) => ({ body: { agentId: f.a.agentId, eventName: 'matrix.checked', payload: { cell: true } } }),
    success: 201,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) =>
      expect(body).toMatchObject({ agentId: f.a.agentId, eventName: 'matrix.checked', duplicate: false }),
  },
  CreateAgent: {
    request: () => ({ body: { displayName: 'Matrix bot' } }),
    // An agent it made would be one it cannot use: creating agents is the organization's.
    restricted: { addresses: 'organization', status: 403 },
    success: 201,
    otherOrg: {
      status: 201,
      // Created in org B: org A does not see it.
      check: async (body) => {
        const listA = await orgA<Body>('GET', '/dashboard/agents');
        expect(ids(listA.body)).not.toContain(body.agentId);
      },
    },
  },
  ListAgents: {
    request: () => ({}),
    success: 200,
    otherOrg: onlyOrgBAgents,
    check: (b) => expectAgentA(b),
    restricted: { addresses: 'organization', status: 200, check: (b) => expectOwnAgentOnly(b) },
  },
  CreateKnowledgeBase: {
    request: (f) => ({ params: agentPath(f), body: { name: 'Matrix' } }),
    success: 201,
    otherOrg: notFound('AGENT_NOT_FOUND'),
  },
  GetAgent: {
    request: (f) => ({ params: agentPath(f) }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body).toMatchObject({ agentId: f.a.agentId, displayName: expect.any(String) }),
  },
  RenameAgent: {
    // A fixed name: no other row reads the agent's name, and a rerun renames it to the same.
    request: (f) => ({ params: agentPath(f), body: { displayName: 'Matrix agent (renamed)' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) =>
      expect(body).toMatchObject({
        agentId: f.a.agentId,
        displayName: 'Matrix agent (renamed)',
        createdAt: expect.any(String),
      }),
  },
  RotateCallbackSecret: {
    // Every cell rotates again: the answer is a new secret each time, the one it replaced valid for 24 hours.
    request: (f) => ({ params: agentPath(f), body: {} }),
    success: 201,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) =>
      expect(body).toEqual({
        success: true,
        secret: expect.stringMatching(/^whsec_/),
        createdAt: expect.any(String),
        previousSecretValidUntil: expect.any(String),
      }),
  },
  CreateWebhookEndpoint: {
    request: (f) => ({
      body: { url: 'https://93.184.215.14/matrix', events: ['zip_import.completed'], agentId: f.a.agentId },
    }),
    success: 201,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) =>
      expect(body).toMatchObject({ agentId: f.a.agentId, enabled: true, secret: expect.stringMatching(/^whsec_/) }),
  },
  ListWebhookEndpoints: {
    request: () => ({}),
    success: 200,
    otherOrg: {
      status: 200,
      // Org B's own endpoints only: none of org A's.
      check: (body) => {
        const listed = (body.endpoints as { endpointId: string }[]).map((e) => e.endpointId);
        expect(listed).not.toContain(fx.webhookEndpointId);
      },
    },
    check: (body) =>
      expect((body.endpoints as { endpointId: string }[]).map((e) => e.endpointId)).toContain(fx.webhookEndpointId),
    // A token restricted to an agent sees that agent's endpoints only.
    restricted: {
      addresses: 'organization',
      status: 200,
      check: (body) => {
        const agents = (body.endpoints as { agentId: string }[]).map((e) => e.agentId);
        expect(agents.length).toBeGreaterThan(0);
        expect(new Set(agents)).toEqual(new Set([own.a.agentId]));
      },
    },
  },
  GetWebhookEndpoint: {
    request: (f) => ({ params: { endpointId: f.webhookEndpointId } }),
    success: 200,
    otherOrg: notFound('WEBHOOK_ENDPOINT_NOT_FOUND'),
    check: (body, f) => {
      expect(body).toMatchObject({ endpointId: f.webhookEndpointId, agentId: f.a.agentId });
      expect(body).not.toHaveProperty('secret');
    },
  },
  UpdateWebhookEndpoint: {
    // A fixed description: a rerun sets the same.
    request: (f) => ({ params: { endpointId: f.webhookEndpointId }, body: { description: 'Matrix endpoint' } }),
    success: 200,
    otherOrg: notFound('WEBHOOK_ENDPOINT_NOT_FOUND'),
    check: (body, f) => expect(body).toMatchObject({ endpointId: f.webhookEndpointId, description: 'Matrix endpoint' }),
  },
  DeleteWebhookEndpoint: {
    request: (f) => ({ params: { endpointId: f.webhookEndpointToDelete } }),
    success: 200,
    otherOrg: notFound('WEBHOOK_ENDPOINT_NOT_FOUND'),
    check: (body, f) => expect(body).toEqual({ success: true, endpointId: f.webhookEndpointToDelete, deleted: true }),
  },
  RotateWebhookEndpointSecret: {
    // Every cell rotates again: a new secret each time.
    request: (f) => ({ params: { endpointId: f.webhookEndpointId }, body: {} }),
    success: 201,
    otherOrg: notFound('WEBHOOK_ENDPOINT_NOT_FOUND'),
    check: (body, f) =>
      expect(body).toMatchObject({ endpointId: f.webhookEndpointId, secret: expect.stringMatching(/^whsec_/) }),
  },
  ListWebhookDeliveries: {
    request: (f) => ({ params: { endpointId: f.webhookEndpointId } }),
    success: 200,
    otherOrg: notFound('WEBHOOK_ENDPOINT_NOT_FOUND'),
    check: (body) => expect(body).toEqual({ success: true, deliveries: [], nextToken: null }),
  },
  ListKnowledgeBases: {
    request: (f) => ({ params: agentPath(f) }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) =>
      expect((body.data as { knowledgeBaseId: string }[]).map((kb) => kb.knowledgeBaseId)).toContain(
        f.a.knowledgeBaseId,
      ),
  },
  GetKnowledgeBase: {
    request: (f) => ({ params: kbPath(f) }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body.knowledgeBaseId).toBe(f.a.knowledgeBaseId),
  },
  UpdateKnowledgeBase: {
    request: (f) => ({ params: kbPath(f), body: { description: 'Checked by the access matrix' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body.description).toBe('Checked by the access matrix'),
  },
  DeleteAgent: {
    request: (f) => ({ params: { agentId: f.agentToDelete } }),
    success: 202,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body).toMatchObject({ agentId: f.agentToDelete, status: 'deleting' }),
    // Deleting an agent is the organization's decision, as creating one.
    restricted: { addresses: 'organization', status: 403 },
  },
  DeleteKnowledgeBase: {
    request: (f) => ({ params: { agentId: f.a.agentId, knowledgeBaseId: f.kbToDelete } }),
    success: 202,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body).toMatchObject({ knowledgeBaseId: f.kbToDelete, status: 'deleting' }),
  },
  // The right cell starts the knowledge base's reindex (each fixture's once: ROUTES orders it before its GET).
  ReindexKnowledgeBase: {
    request: (f) => ({ params: kbPath(f), body: { environment: f.a.environment } }),
    success: 202,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) =>
      expect(body).toMatchObject({ knowledgeBaseId: f.a.knowledgeBaseId, environments: [f.a.environment] }),
  },
  GetKnowledgeBaseReindex: {
    request: (f) => ({ params: kbPath(f) }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) =>
      expect(body).toMatchObject({ knowledgeBaseId: f.a.knowledgeBaseId, environments: [f.a.environment] }),
  },
  QueryKnowledgeBase: {
    request: (f) => ({ params: kbInEnvPath(f), body: { query: 'power button' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect((body.results as unknown[]).length).toBeGreaterThan(0),
  },
  GenerateFromKnowledgeBase: {
    request: (f) => ({ params: kbInEnvPath(f), body: { query: 'power button' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body.answer).toEqual(expect.any(String)),
  },
  GetRetrievalConfig: {
    request: (f) => ({ params: envPath(f) }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
  },
  PutRetrievalConfig: {
    request: (f) => ({
      params: envPath(f),
      body: { enabled: true, knowledgeBases: [{ knowledgeBaseId: f.a.knowledgeBaseId }] },
    }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body.enabled).toBe(true),
  },
  PreviewDefaultRetrieval: {
    request: (f) => ({ params: envPath(f), body: { query: 'power button' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
  },
  PutAgentDefinition: {
    request: (f) => ({ params: envPath(f), body: definition }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body.version).toEqual(expect.any(Number)),
  },
  GetAgentDefinition: {
    request: (f) => ({ params: envPath(f) }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body.definition).toMatchObject({ flows: expect.any(Array) }),
  },
  ListAgentDefinitionVersions: {
    request: (f) => ({ params: envPath(f), query: { limit: '10' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body.data).toEqual([expect.objectContaining({ version: 1, current: true })]),
  },
  GetAgentDefinitionVersion: {
    request: (f) => ({ params: { ...envPath(f), version: '1' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body).toMatchObject({ version: 1, definition: { flows: expect.any(Array) } }),
  },
  // The stored version restored: the unchanged case, so the cell changes nothing the other cells read.
  RestoreAgentDefinitionVersion: {
    request: (f) => ({ params: { ...envPath(f), version: '1' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body).toMatchObject({ version: 1, unchanged: true }),
  },
  ValidateAgentDefinition: {
    request: (f) => ({ params: envPath(f), body: definition }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body).toMatchObject({ valid: true, problems: [] }),
  },
  ListSessions: {
    request: (f) => ({ params: envPath(f), query: { limit: '100' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(ids(body, 'sessionId')).toContain(f.sessionId),
  },
  GetSession: {
    request: (f) => ({ params: { ...envPath(f), sessionId: f.sessionId } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body.sessionId).toBe(f.sessionId),
  },
  ListModels: {
    request: () => ({}),
    success: 200,
    // The deployment's models, the same for every organization and token: nothing of anyone's.
    otherOrg: { status: 200, check: (body) => expect(ids(body, 'id')).toContain('offline') },
    restricted: {
      addresses: 'organization',
      status: 200,
      check: (body) => expect(ids(body, 'id')).toContain('offline'),
    },
    check: (body) => expect(ids(body, 'id')).toContain('offline'),
  },
  GetSessionTrace: {
    request: (f) => ({ params: { ...envPath(f), sessionId: f.sessionId } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body, f) => expect(body).toMatchObject({ sessionId: f.sessionId, truncated: false }),
  },
  InvokeWebhook: {
    request: (f) => ({ params: { ...envPath(f), triggerName: 'Start' }, body: { message: 'Hello there' } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body.status).toBe('completed'),
  },
  SendAppEvent: {
    request: (f) => ({ params: envPath(f), body: { appName: 'crm', eventName: 'ticket.created', payload: { id: 7 } } }),
    success: 200,
    otherOrg: notFound('AGENT_NOT_FOUND'),
    check: (body) => expect(body).toMatchObject({ status: 'completed', flowName: 'crm' }),
  },
  // One JSON-RPC message: the list of knowledge bases, which shows whose they are (docs/mcp.md).
  Mcp: {
    request: () => ({ body: MCP_LIST_KNOWLEDGE_BASES }),
    success: 200,
    otherOrg: {
      status: 200,
      check: (body) => expect(mcpKnowledgeBases(body).map((kb) => kb.agentId)).not.toContain(fx.a.agentId),
    },
    restricted: {
      addresses: 'organization',
      status: 200,
      check: (body) =>
        expect(new Set(mcpKnowledgeBases(body).map((kb) => kb.agentId))).toEqual(new Set([own.a.agentId])),
    },
    check: (body, f) => expect(mcpKnowledgeBases(body).map((kb) => kb.knowledgeBaseId)).toContain(f.a.knowledgeBaseId),
  },
  CreateToken: {
    request: () => ({ body: { scopes: ['analytics'], name: 'matrix' } }),
    // The agents are in the body; without agentIds it is the 403 of the minting matrix below.
    restricted: {
      addresses: 'agent',
      code: 'AGENT_NOT_FOUND',
      request: (f) => ({ body: { scopes: ['analytics'], name: 'matrix', agentIds: [f.a.agentId] } }),
    },
    success: 201,
    otherOrg: {
      status: 201,
      // The token belongs to org B: org A's agent is not found with it.
      check: async (body) => {
        const probe = await orgA('POST', '/api/v1/events/agent', {
          token: body.token as string,
          body: { agentId: fx.a.agentId },
        });
        expect(probe.status).toBe(404);
      },
    },
    check: (body) => expect(body.scopes).toEqual(['analytics']),
  },
  ListTokens: {
    request: () => ({}),
    // Managing tokens is the organization's: a restricted token would list tokens wider than itself.
    restricted: { addresses: 'organization', status: 403 },
    success: 200,
    otherOrg: {
      status: 200,
      // Org B's own tokens only.
      check: async (body) => {
        const listA = await orgA<Body>('GET', '/dashboard/tokens');
        const idsA = new Set(ids(listA.body, 'tokenId'));
        expect(ids(body, 'tokenId').length).toBeGreaterThan(0);
        for (const id of ids(body, 'tokenId')) expect(idsA.has(id)).toBe(false);
      },
    },
    check: (body) => {
      const data = body.data as Body[];
      expect(data.length).toBeGreaterThan(0);
      for (const token of data) {
        expect(Object.keys(token).sort()).toEqual(
          [
            'agentIds',
            'createdAt',
            'createdBy',
            'expiresAt',
            'lastUsedAt',
            'name',
            'prefix',
            'scopes',
            'status',
            'tokenId',
          ].sort(),
        );
      }
    },
  },
  RevokeToken: {
    request: (f) => ({ params: { tokenId: f.tokenToRevoke } }),
    restricted: { addresses: 'organization', status: 403 },
    success: 200,
    otherOrg: notFound('TOKEN_NOT_FOUND'),
    check: (body, f) => expect(body).toMatchObject({ tokenId: f.tokenToRevoke, revokedAt: expect.any(String) }),
  },
  GetOrganization: {
    request: () => ({}),
    success: 200,
    otherOrg: {
      status: 200,
      check: async (body) => {
        const a = await orgA<Body>('GET', '/dashboard/organization');
        expect(body.organizationId).toEqual(expect.any(String));
        expect(body.organizationId).not.toBe(a.body.organizationId);
      },
    },
    check: (body) => expect(body.caller).toEqual({ kind: 'token', email: null, role: 'owner' }),
    // It may read its organization; what it may manage there is a member's.
    restricted: {
      addresses: 'organization',
      status: 200,
      check: (body) => expect(body.caller).toEqual({ kind: 'token', email: null, role: 'member' }),
    },
  },
  InviteMember: {
    person: true,
    request: () => ({ body: { email: newEmail('invited'), role: 'member' } }),
    success: 201,
    otherOrg: {
      status: 201,
      // Invited into another organization: org A's people do not include them.
      check: async (body) => {
        const listA = await orgA<Body>('GET', '/dashboard/members');
        expect(ids(listA.body, 'email')).not.toContain(body.email);
      },
    },
    check: (body) => expect(body).toMatchObject({ role: 'member', status: 'invited', expiresAt: expect.any(String) }),
    restricted: { addresses: 'organization', status: 403 },
  },
  ListMembers: {
    request: () => ({}),
    success: 200,
    otherOrg: {
      status: 200,
      check: async (body) => {
        const listA = await orgA<Body>('GET', '/dashboard/members');
        expect(ids(listA.body, 'email')).toContain(sibling.memberToRemove);
        for (const email of ids(body, 'email')) expect(ids(listA.body, 'email')).not.toContain(email);
      },
    },
    check: (body) => {
      for (const member of body.data as Body[])
        expect(Object.keys(member).sort()).toEqual(['createdAt', 'email', 'expiresAt', 'role', 'status']);
    },
    restricted: { addresses: 'organization', status: 403 },
  },
  RemoveMember: {
    person: true,
    request: (f) => ({ params: { email: f.memberToRemove } }),
    success: 200,
    otherOrg: notFound('MEMBER_NOT_FOUND'),
    check: (body, f) =>
      expect(body).toMatchObject({
        email: f.memberToRemove,
        status: 'invitationCancelled',
        removedAt: expect.any(String),
      }),
    restricted: { addresses: 'organization', status: 403 },
  },
  GetMe: {
    person: true,
    request: () => ({}),
    success: 200,
    otherOrg: { status: 200, check: (body) => expect(body.email).not.toBe(ANN.email) },
    check: (body) =>
      expect(body.organizations).toContainEqual(expect.objectContaining({ organizationId: orgAId, role: 'owner' })),
    restricted: { addresses: 'organization', status: 403 },
  },
  AcceptInvitation: {
    person: true,
    request: () => ({ params: { organizationId: invitedBy.accept } }),
    success: 201,
    otherOrg: notFound('INVITATION_NOT_FOUND'),
    check: (body) => expect(body).toMatchObject({ organizationId: invitedBy.accept, role: 'member' }),
    restricted: { addresses: 'organization', status: 403 },
  },
  DeclineInvitation: {
    person: true,
    request: () => ({ params: { organizationId: invitedBy.decline } }),
    success: 200,
    otherOrg: notFound('INVITATION_NOT_FOUND'),
    check: (body) => expect(body).toMatchObject({ organizationId: invitedBy.decline }),
    restricted: { addresses: 'organization', status: 403 },
  },
  CreateOrganization: {
    person: true,
    request: () => ({ body: { name: 'Matrix founded' } }),
    success: 201,
    otherOrg: { status: 201, check: (body) => expect(body).toMatchObject({ role: 'owner', name: 'Matrix founded' }) },
    check: (body) => expect(body).toMatchObject({ role: 'owner', name: 'Matrix founded' }),
    restricted: { addresses: 'organization', status: 403 },
  },
};

function expectAgentA(body: Body) {
  expect(ids(body)).toContain(fx.a.agentId);
  expect(ids(body)).not.toContain(agentB);
}

/** A list of a token restricted to `own`: that agent and no other. */
function expectOwnAgentOnly(body: Body) {
  expect({ ids: ids(body), count: body.count }).toEqual({ ids: [own.a.agentId], count: 1 });
}

/** The route's path with its `{name}` parameters filled in; a missing one is an error of the row. */
function pathOf(route: HttpRoute, params: Record<string, string> = {}): string {
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`row ${route.id} gives no path parameter ${name}`);
    return encodeURIComponent(value);
  });
}

function tokenFor(route: HttpRoute, cell: Case): string | null {
  const row = ROWS[route.id];
  if (!row.public && row.person) {
    if (cell === 'right') return annToken;
    if (cell === 'other organization') return beaToken;
    // A token of org A, with every scope: the wrong kind of credential for a person's route.
    if (cell === 'wrong scope') return service.tokens[0];
  }
  switch (cell) {
    case 'no token':
      return null;
    case 'bad token':
      return BAD_TOKEN;
    case 'wrong scope':
      return typeof route.scope === 'string' ? allBut[route.scope] : (noneOf.get(String(route.scope)) ?? null);
    case 'other organization':
      return service.tokens[1];
    case 'right':
      return service.tokens[0];
  }
}

/**
 * Whether an answer is a success body: `success: true`, or a JSON-RPC result, which the MCP route sends as it is
 * (lambdas/handlers/http/responses.ts, RAW_RESPONSE_ROUTES).
 */
function succeeded(body: Body): boolean | undefined {
  if (body.jsonrpc === '2.0') return body.result !== undefined && body.error === undefined;
  return body.success as boolean | undefined;
}

function expectError(response: ApiResponse<Body>, status: number, code: string) {
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { success: false, error: { code, message: expect.any(String), details: expect.any(Array) } },
  });
}

/** Every cell's status, for the printed matrix. */
const observed = new Map<string, Map<Case, number>>();

const cells = ROUTES.flatMap((route) => CASES.map((cell) => [route.id, cell] as const));

/** An agent of org A with everything the rows address, made through the public API. */
async function makeFixtures(call: Call): Promise<Fixtures> {
  const a = await createDataset(call);
  const second = await call<{ knowledgeBaseId: string }>('POST', `/dashboard/agents/${a.agentId}/knowledge/bases`, {
    body: { name: 'To delete' },
  });
  const kbToDelete = second.body.knowledgeBaseId;
  const agentToDelete = (
    await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Gone' } })
  ).body.agentId;
  const tokenToRevoke = (
    await call<{ tokenId: string }>('POST', '/dashboard/tokens', { body: { scopes: ['analytics'], name: 'to revoke' } })
  ).body.tokenId;
  // Invited by org A's owner signed in (a token manages no people); the RemoveMember cell cancels the invitation.
  const memberToRemove = (
    await call<{ email: string }>('POST', '/dashboard/members', {
      token: annToken,
      headers: personHeaders(annToken),
      body: { email: newEmail('member'), role: 'member' },
    })
  ).body.email;
  const dashboardToDelete = (await uploadDocument(call, a, { fileName: 'delete-me-too.txt' }, 'Short lived too.')).link
    .s3Key;
  const dashboardFailed = (await uploadDocument(call, a, { fileName: 'empty-too.txt' }, Buffer.alloc(0))).link.s3Key;
  const dashboardPending = await call<UploadLink>('POST', `${DOCS}/upload-link`, {
    body: { ...a, fileName: 'pending-too.txt' },
  });
  expect((await putFile(dashboardPending.body, 'Waiting for the dashboard upload-complete.')).status).toBe(200);

  const main = await uploadDocument(call, a, { fileName: 'guide.txt' }, 'Hold the power button for five seconds.');
  const s3Key = main.link.s3Key;
  const toUpdate = await uploadDocument(call, a, { fileName: 'update-me.txt' }, 'Version one.');
  const s3KeyToDelete = (await uploadDocument(call, a, { fileName: 'delete-me.txt' }, 'Short lived.')).link.s3Key;
  const failedS3Key = (await uploadDocument(call, a, { fileName: 'empty.txt' }, Buffer.alloc(0))).link.s3Key;

  const pending = await call<UploadLink>('POST', `${DOCS}/upload-link`, {
    body: { ...a, fileName: 'pending.txt' },
  });
  expect((await putFile(pending.body, 'Waiting for upload-complete.')).status).toBe(200);
  const pendingUploadId = pending.body.uploadId;
  const pendingS3Key = pending.body.s3Key;
  const update = await call<UploadLink>('POST', `${DOCS}/update/upload-link`, {
    body: { ...a, s3Key: toUpdate.link.s3Key, fileName: 'update-me.txt' },
  });
  expect((await putFile(update.body, 'Version two.')).status).toBe(200);
  const pendingUpdateId = update.body.uploadId;

  // An empty archive (just its end record) is a valid ZIP import of no files.
  const zipJobId = (
    await uploadDocument(call, a, { fileName: 'batch.zip' }, Buffer.from('PK\u0005\u0006'.padEnd(22, '\u0000')))
  ).link.zipJobId as string;

  const stored = await call('PUT', `/dashboard/agents/${a.agentId}/definition/${a.environment}`, {
    body: definition,
  });
  expect(stored.status).toBe(200);
  const run = await call<{ sessionId: string; status: string }>(
    'POST',
    `/api/v1/webhooks/${a.agentId}/${a.environment}/Start`,
    { body: { message: 'First visit' } },
  );
  expect(run.body.status).toBe('completed');
  const sessionId = run.body.sessionId;

  // Query and generate have something to find.
  const ready = await pollUntil(
    () => call<{ status: string }>('GET', DOCS, { query: { ...a, s3Key } }),
    (response) => response.body.status !== 'uploaded',
  );
  expect(ready.body.status).toBe('ready');
  const failed = await pollUntil(
    () => call<{ status: string }>('GET', DOCS, { query: { ...a, s3Key: failedS3Key } }),
    (response) => response.body.status !== 'uploaded',
  );
  expect(failed.body.status).toBe('failed');
  const failedToo = await pollUntil(
    () => call<{ status: string }>('GET', DOCS, { query: { ...a, s3Key: dashboardFailed } }),
    (response) => response.body.status !== 'uploaded',
  );
  expect(failedToo.body.status).toBe('failed');
  // Status webhook endpoints of the agent, made last: the only event they take (its ZIP import's completion) is past.
  // A public address as a literal, so registering it needs no DNS; nothing is ever delivered to it.
  const endpoint = async () =>
    (
      await call<{ endpointId: string }>('POST', '/dashboard/webhook-endpoints', {
        body: { url: 'https://93.184.215.14/matrix', events: ['zip_import.completed'], agentId: a.agentId },
      })
    ).body.endpointId;
  const webhookEndpointId = await endpoint();
  const webhookEndpointToDelete = await endpoint();
  return {
    a,
    webhookEndpointId,
    webhookEndpointToDelete,
    kbToDelete,
    agentToDelete,
    s3Key,
    s3KeyToDelete,
    failedS3Key,
    pendingUploadId,
    pendingS3Key,
    pendingUpdateId,
    zipJobId,
    sessionId,
    tokenToRevoke,
    memberToRemove,
    dashboard: {
      s3KeyToDelete: dashboardToDelete,
      failedS3Key: dashboardFailed,
      pendingUploadId: dashboardPending.body.uploadId,
    },
  };
}

beforeAll(async () => {
  // People's accounts (cognito-local) for the sign-up, members and person rows; DEV_USER owns org A.
  [service, shortTtl] = await Promise.all([
    startService({ env: { COGNITO: 'on', DEV_USER: `${ANN.email}:${ANN.password}` } }),
    startService({ env: { UPLOAD_URL_TTL_SECONDS: '1' } }),
  ]);
  orgA = client(service, service.tokens[0]);
  orgB = client(service, service.tokens[1]);
  const cognito = cognitoOf(service);
  const signIn = (email: string, password: string) => signInWith(cognito, email, password);
  const signUp = async (email: string) => {
    const made = await orgA<{ organizationId: string; confirmed: boolean }>('POST', '/dashboard/signup', {
      token: null,
      body: { email, password: PASSWORD, organizationName: `Org of ${email}` },
    });
    expect(made.status).toBe(201);
    // A deployment e-mails a code; the matrix confirms the address as that code would, with the pool's admin calls.
    if (!made.body.confirmed) await confirmAddress(cognito, email);
    return { organizationId: made.body.organizationId, token: await signIn(email, PASSWORD) };
  };
  ANN = service.people?.owner ?? ANN;
  annToken = await signIn(ANN.email, ANN.password);
  orgAId = (await orgA<{ organizationId: string }>('GET', '/dashboard/organization')).body.organizationId;
  beaToken = (await signUp(newEmail('bea'))).token;
  const inviters = await Promise.all([signUp(newEmail('cyd')), signUp(newEmail('dee'))]);
  for (const inviter of inviters) {
    const invited = await orgA('POST', '/dashboard/members', {
      token: inviter.token,
      body: { email: ANN.email, role: 'member' },
    });
    expect(invited.status).toBe(201);
  }
  invitedBy = { accept: inviters[0].organizationId, decline: inviters[1].organizationId };
  cognito.client.destroy();

  // The short-TTL runtime's link first: its second runs out while the rest is made.
  const shortA = client(shortTtl, shortTtl.tokens[0]);
  const shortDataset = await createDataset(shortA);
  const expiring = await shortA<UploadLink>('POST', `${DOCS}/upload-link`, {
    body: { ...shortDataset, fileName: 'late.txt' },
  });
  expect(expiring.status).toBe(200);
  expect(expiring.body.expiresIn).toBe(1);
  expiringLink = { link: expiring.body, issuedAt: Date.now() };

  for (const scope of SCOPES) {
    const others = SCOPES.filter((s) => s !== scope);
    const token = await orgA<{ token: string; scopes: string[] }>('POST', '/dashboard/tokens', {
      body: { scopes: others, name: `all but ${scope}` },
    });
    expect(token.status).toBe(201);
    expect(token.body.scopes).toEqual(others);
    allBut[scope] = token.body.token;
  }
  for (const route of ROUTES) {
    if (!Array.isArray(route.scope)) continue;
    const others = SCOPES.filter((s) => !route.scope?.includes(s));
    const token = await orgA<{ token: string }>('POST', '/dashboard/tokens', {
      body: { scopes: others, name: `none of ${route.scope}` },
    });
    expect(token.status).toBe(201);
    noneOf.set(String(route.scope), token.body.token);
  }

  fx = await makeFixtures(orgA);
  const agentOfB = await orgB<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'B bot' } });
  agentB = agentOfB.body.agentId;

  own = await makeFixtures(orgA);
  sibling = await makeFixtures(orgA);
  const restricted = await orgA<{ token: string; agentIds: string[] }>('POST', '/dashboard/tokens', {
    body: { scopes: [...SCOPES], agentIds: [own.a.agentId], name: 'own agent only' },
  });
  expect(restricted.status).toBe(201);
  expect(restricted.body.agentIds).toEqual([own.a.agentId]);
  restrictedToken = restricted.body.token;
}, 90_000);

afterAll(async () => {
  await Promise.all([service?.stop(), shortTtl?.stop()]);
});

describe('the table', () => {
  it('has a row for every route of lib/routes.ts and none for a route that does not exist', () => {
    expect(Object.keys(ROWS).sort()).toEqual(ROUTES.map((route) => route.id).sort());
  });

  it('marks public exactly the routes that need no token', () => {
    const publicRows = Object.entries(ROWS)
      .filter(([, row]) => row.public)
      .map(([id]) => id)
      .sort();
    expect(publicRows).toEqual(
      ROUTES.filter((route) => route.scope === null)
        .map((route) => route.id)
        .sort(),
    );
  });
});

describe('access matrix', () => {
  it.each(cells)('%s with %s', async (routeId, cell) => {
    const route = routeById(routeId);
    const row = ROWS[routeId];
    expect(row).toBeDefined();
    const token = tokenFor(route, cell);
    let response: ApiResponse<Body>;
    if (row.public) {
      // No scope: every caller gets the same answer, whatever token it sends.
      expect(route.scope).toBeNull();
      response = await orgA<Body>(route.method, route.path, { token, body: row.request?.().body });
      expect(response.status).toBe(row.success ?? 200);
    } else {
      const request = row.request(fx);
      response = await orgA<Body>(route.method, pathOf(route, request.params), {
        token,
        headers: personHeaders(token),
        query: request.query,
        body: request.body,
      });
      if (cell === 'no token' || cell === 'bad token') expectError(response, 401, 'UNAUTHORIZED');
      else if (cell === 'wrong scope') expectError(response, 403, 'FORBIDDEN');
      else if (cell === 'other organization') {
        if (row.otherOrg.status === 404) expectError(response, 404, row.otherOrg.code);
        else {
          expect(response.status).toBe(row.otherOrg.status);
          expect(succeeded(response.body)).toBe(true);
          await row.otherOrg.check(response.body);
        }
      } else {
        expect({ status: response.status, success: succeeded(response.body) }).toEqual({
          status: row.success,
          success: true,
        });
        await row.check?.(response.body, fx);
      }
    }
    const statuses = observed.get(routeId) ?? new Map<Case, number>();
    statuses.set(cell, response.status);
    observed.set(routeId, statuses);
  });

  it('left org A as the right cells made it: nothing an other-organization cell sent changed it', async () => {
    const doc = await orgA<Body>('GET', DOCS, { query: { ...fx.a, s3Key: fx.s3Key } });
    expect(doc.body).toMatchObject({ label1: null, label2: 'checked:matrix' });
    const kb = await orgA<Body>('GET', `/dashboard/agents/${fx.a.agentId}/knowledge/bases/${fx.a.knowledgeBaseId}`);
    expect(kb.body).toMatchObject({ name: 'Manuals', description: 'Checked by the access matrix' });
    const gone = await orgA<Body>('GET', `/dashboard/agents/${fx.a.agentId}/knowledge/bases/${fx.kbToDelete}`);
    expectError(gone, 404, 'KNOWLEDGE_BASE_NOT_FOUND');
  });
});

/** The restricted token's answer for a row; undefined for a public row, or a row that forgot to say (the table fails). */
/**
 * The rows of the dashboard's mirrors of the document routes (lib/routes.ts, DASHBOARD_MIRRORS): each is its customer
 * route's row with the dataset moved into the path and, where a cell consumes something, the fixtures' `dashboard`
 * resources instead, so both routes' cells find theirs.
 */
const DATASET_FIELDS = ['agentId', 'environment', 'knowledgeBaseId'] as const;

function inPath(request: Request): Request {
  const params: Record<string, string> = { ...(request.params ?? {}) };
  const strip = (fields: Record<string, unknown> | undefined) => {
    if (!fields) return undefined;
    const rest = { ...fields };
    for (const name of DATASET_FIELDS) {
      if (rest[name] !== undefined) params[name] = String(rest[name]);
      delete rest[name];
    }
    return rest;
  };
  const query = strip(request.query) as Record<string, string> | undefined;
  const body = strip(request.body as Record<string, unknown> | undefined);
  return {
    params,
    ...(query && Object.keys(query).length ? { query } : {}),
    ...(body ? { body } : {}),
  };
}

function dashboardRow(row: Row): Row {
  if (row.public) throw new Error('a public route has no dashboard mirror');
  const view = (f: Fixtures): Fixtures => ({ ...f, ...f.dashboard });
  const { check } = row;
  const restricted = row.restricted;
  return {
    ...row,
    request: (f) => inPath(row.request(view(f))),
    ...(check ? { check: (body: Body, f: Fixtures) => check(body, view(f)) } : {}),
    ...(restricted?.addresses === 'agent' && restricted.request
      ? {
          restricted: {
            ...restricted,
            request: (f: Fixtures) => inPath((restricted.request as (x: Fixtures) => Request)(view(f))),
          },
        }
      : {}),
  };
}

for (const route of ROUTES) {
  const mirrored = /^Dashboard(.+)$/.exec(route.id)?.[1];
  if (mirrored && ROWS[mirrored] && !ROWS[route.id]) ROWS[route.id] = dashboardRow(ROWS[mirrored]);
}

function restrictedOf(row: Row): Restricted | undefined {
  if (row.public) return undefined;
  if (row.restricted) return row.restricted;
  return row.otherOrg.status === 404 ? { addresses: 'agent', code: row.otherOrg.code } : undefined;
}

const RESTRICTED_CASES = ['a sibling agent', 'its own agent', 'its organization'] as const;
type RestrictedCase = (typeof RESTRICTED_CASES)[number];

const restrictedCells = ROUTES.filter((route) => route.scope !== null).flatMap((route) => {
  const restricted = restrictedOf(ROWS[route.id]);
  const cases: RestrictedCase[] =
    restricted?.addresses === 'organization' ? ['its organization'] : ['a sibling agent', 'its own agent'];
  return cases.map((cell) => [route.id, cell] as const);
});

/** Every restricted cell's status, for the printed figures. */
const restrictedObserved = new Map<string, Map<RestrictedCase, number>>();
/** Lines of the minting and restriction figures. */
const tokenFigures: string[] = [];

/** How many tokens the local tokens table holds; null against a deployment, whose table this test cannot read. */
async function tokenCount(): Promise<number | null> {
  const table = tokenTable(service);
  if (!table) return null;
  try {
    return await table.count();
  } finally {
    table.close();
  }
}

describe('agent-restricted token (issue 22)', () => {
  let agentsBefore: number;

  beforeAll(async () => {
    agentsBefore = ((await orgA<Body>('GET', '/dashboard/agents')).body.data as unknown[]).length;
  });

  it('has an answer for every scoped row: agent rows by their 404, the others by name', () => {
    const missing = ROUTES.filter((route) => route.scope !== null && !restrictedOf(ROWS[route.id])).map((r) => r.id);
    expect(missing).toEqual([]);
  });

  it.each(restrictedCells)('%s with %s', async (routeId, cell) => {
    const route = routeById(routeId);
    const row = ROWS[routeId];
    if (row.public) throw new Error(`${routeId} is public: it has no restricted cell`);
    const restricted = restrictedOf(row);
    if (!restricted) throw new Error(`row ${routeId} says nothing of a restricted token`);
    const send = (request: Request) =>
      orgA<Body>(route.method, pathOf(route, request.params), {
        token: restrictedToken,
        query: request.query,
        body: request.body,
      });
    let response: ApiResponse<Body>;
    if (restricted.addresses === 'organization') {
      expect(cell).toBe('its organization');
      response = await send(row.request(own));
      if (restricted.status === 403) expectError(response, 403, 'FORBIDDEN');
      else {
        expect({ status: response.status, success: succeeded(response.body) }).toEqual({ status: 200, success: true });
        restricted.check(response.body);
      }
    } else {
      const requestOf = restricted.request ?? row.request;
      const code = restricted.code ?? (row.otherOrg.status === 404 ? row.otherOrg.code : undefined);
      if (cell === 'a sibling agent') {
        response = await send(requestOf(sibling));
        expectError(response, 404, code as string);
      } else {
        expect(cell).toBe('its own agent');
        response = await send(requestOf(own));
        expect({ status: response.status, success: succeeded(response.body) }).toEqual({
          status: row.success,
          success: true,
        });
        await row.check?.(response.body, own);
      }
    }
    const statuses = restrictedObserved.get(routeId) ?? new Map<RestrictedCase, number>();
    statuses.set(cell, response.status);
    restrictedObserved.set(routeId, statuses);
  });

  it('left the sibling agent as it was: nothing a restricted cell sent changed it', async () => {
    const { a } = sibling;
    const doc = await orgA<Body>('GET', DOCS, { query: { ...a, s3Key: sibling.s3Key } });
    expect(doc.body).toMatchObject({ status: 'ready', label1: null, label2: null });
    const kb = await orgA<Body>('GET', `/dashboard/agents/${a.agentId}/knowledge/bases/${a.knowledgeBaseId}`);
    expect(kb.body).toMatchObject({ name: 'Manuals', description: 'Product manuals' });
    const toDelete = await orgA<Body>('GET', `/dashboard/agents/${a.agentId}/knowledge/bases/${sibling.kbToDelete}`);
    expect(toDelete.status).toBe(200);
    expect((await orgA<Body>('GET', DOCS, { query: { ...a, s3Key: sibling.s3KeyToDelete } })).status).toBe(200);
    // Still reserved: the restricted upload-complete did not complete it.
    expectError(
      await orgA<Body>('GET', DOCS, { query: { ...a, s3Key: sibling.pendingS3Key } }),
      404,
      'DOCUMENT_NOT_FOUND',
    );
    const stored = await orgA<Body>('GET', `/dashboard/agents/${a.agentId}/definition/${a.environment}`);
    expect(stored.body.version).toBe(1);
    const retrieval = await orgA<Body>('GET', `/dashboard/agents/${a.agentId}/retrieval/${a.environment}`);
    expect(retrieval.body.enabled).toBe(false);
    // The restricted CreateAgent cell made no agent.
    expect(((await orgA<Body>('GET', '/dashboard/agents')).body.data as unknown[]).length).toBe(agentsBefore);
  });
});

/** Every non-empty subset of SCOPES, in SCOPES order. */
const SCOPE_SETS: Scope[][] = Array.from({ length: 2 ** SCOPES.length - 1 }, (_, i) =>
  SCOPES.filter((_, bit) => (i + 1) & (1 << bit)),
);
/** What a caller of POST /dashboard/tokens can hold: the route needs `dashboard`. */
const HELD_SETS = SCOPE_SETS.filter((set) => set.includes('dashboard'));
const key = (set: readonly string[]) => set.join('+');
const mintCells = HELD_SETS.flatMap((held) => SCOPE_SETS.map((asked) => [key(held), key(asked)] as const));

describe('minting tokens: a narrower caller never gets a wider token (issue 22)', () => {
  /** Org A tokens holding each HELD_SET, unrestricted and restricted to `own`. */
  const holders: Record<string, string> = {};
  const restrictedHolders: Record<string, string> = {};
  const outcome = { widening: 0, refused: 0, storedByRefused: 0, allowed: 0, created: 0 };

  beforeAll(async () => {
    for (const held of HELD_SETS) {
      const whole = await orgA<{ token: string }>('POST', '/dashboard/tokens', { body: { scopes: held } });
      const narrow = await orgA<{ token: string }>('POST', '/dashboard/tokens', {
        body: { scopes: held, agentIds: [own.a.agentId] },
      });
      expect([whole.status, narrow.status]).toEqual([201, 201]);
      holders[key(held)] = whole.body.token;
      restrictedHolders[key(held)] = narrow.body.token;
    }
  });

  afterAll(() => {
    tokenFigures.push(
      `minting: ${HELD_SETS.length} held scope sets × ${SCOPE_SETS.length} asked = ${mintCells.length} cells; ` +
        `${outcome.widening} widening → 403 × ${outcome.refused}, tokens stored by them: ${outcome.storedByRefused}; ` +
        `${outcome.allowed} within → 201 × ${outcome.created}`,
    );
  });

  it.each(mintCells)('a token with %s asking for %s', async (heldKey, askedKey) => {
    const held = heldKey.split('+');
    const asked = askedKey.split('+');
    const notHeld = asked.filter((scope) => !held.includes(scope));
    const before = await tokenCount();
    const response = await orgA<Body>('POST', '/dashboard/tokens', {
      token: holders[heldKey],
      body: { scopes: asked },
    });
    const after = await tokenCount();
    if (notHeld.length > 0) {
      outcome.widening += 1;
      expect({ status: response.status, body: response.body }).toEqual({
        status: 403,
        body: {
          success: false,
          error: {
            code: 'FORBIDDEN',
            message: `A token cannot create a token with a scope it does not hold: ${notHeld.join(', ')}`,
            details: notHeld.map((scope) => ({
              field: 'scopes',
              rule: 'scopes.notHeld',
              message: `this token does not hold scope ${scope}`,
            })),
          },
        },
      });
      outcome.refused += 1;
      expect(after).toBe(before);
      if (before !== null && after !== null) outcome.storedByRefused += after - before;
    } else {
      outcome.allowed += 1;
      expect({ status: response.status, scopes: response.body.scopes, agentIds: response.body.agentIds }).toEqual({
        status: 201,
        scopes: asked,
        agentIds: null,
      });
      outcome.created += 1;
      if (before !== null) expect(after).toBe(before + 1);
    }
  });

  it.each(HELD_SETS.map((held) => [key(held)]))(
    'a token with %s restricted to one agent: no unrestricted child (403), no other agent (404), its agent (201)',
    async (heldKey) => {
      const token = restrictedHolders[heldKey];
      const held = heldKey.split('+');
      const before = await tokenCount();
      const unrestricted = await orgA<Body>('POST', '/dashboard/tokens', { token, body: { scopes: held } });
      expectError(unrestricted, 403, 'FORBIDDEN');
      expect(unrestricted.body).toMatchObject({
        error: { details: [{ field: 'agentIds', rule: 'agentIds.notHeld' }] },
      });
      const wider = await orgA<Body>('POST', '/dashboard/tokens', {
        token,
        body: { scopes: held, agentIds: [own.a.agentId, sibling.a.agentId] },
      });
      expectError(wider, 404, 'AGENT_NOT_FOUND');
      // Scopes are checked first: a widening scope is the 403 whatever the agents.
      const widerScopes = await orgA<Body>('POST', '/dashboard/tokens', {
        token,
        body: { scopes: [...SCOPES], agentIds: [own.a.agentId] },
      });
      if (held.length < SCOPES.length) expectError(widerScopes, 403, 'FORBIDDEN');
      else expect(widerScopes.status).toBe(201);
      const within = await orgA<Body>('POST', '/dashboard/tokens', {
        token,
        body: { scopes: held, agentIds: [own.a.agentId] },
      });
      expect({ status: within.status, agentIds: within.body.agentIds }).toEqual({
        status: 201,
        agentIds: [own.a.agentId],
      });
      const after = await tokenCount();
      if (before !== null) expect(after).toBe(before + (held.length < SCOPES.length ? 1 : 2));
    },
  );
});

/** The S3 error code of an XML error body. */
async function s3Code(response: Response): Promise<{ status: number; code: string | undefined; message?: string }> {
  const text = await response.text();
  return {
    status: response.status,
    code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1],
    message: /<Message>([^<]*)<\/Message>/.exec(text)?.[1],
  };
}

/** Counts of pre-signed URL checks, for the printed figures. */
const urlFigures: string[] = [];

describe('pre-signed upload URLs', () => {
  it('refuse every tampered request with 403 and store nothing', async () => {
    const link = (
      await orgA<UploadLink>('POST', `${DOCS}/upload-link`, { body: { ...fx.a, fileName: 'tampered.txt' } })
    ).body;
    expect(link.requiredHeaders).toEqual({
      'Content-Type': 'text/plain',
      'If-None-Match': '*',
      'x-amz-tagging': 'upload=pending',
    });
    const guideBefore = await orgA<Body>('GET', DOCS, { query: { ...fx.a, s3Key: fx.s3Key } });
    const url = new URL(link.uploadUrl);
    const bucket = url.pathname.split('/')[1];
    const withParam = (name: string, change: (value: string) => string) => {
      const changed = new URL(url);
      changed.searchParams.set(name, change(url.searchParams.get(name) ?? ''));
      return changed.toString();
    };
    const flipLast = (value: string) => `${value.slice(0, -1)}${value.endsWith('0') ? '1' : '0'}`;
    // 20261122T131849Z → …50Z (the last digit only, so the day and the signing key stay the same).
    const nextSecond = (value: string) => value.replace(/(\d)Z$/, (_, digit: string) => `${(Number(digit) + 1) % 10}Z`);
    const otherKey = new URL(url);
    otherKey.pathname = `/${bucket}/${link.s3Key.replace('tampered.txt', 'other.txt')}`;
    const existingDocument = new URL(url);
    existingDocument.pathname = `/${bucket}/${fx.s3Key}`;
    const headers = link.requiredHeaders;
    const { 'If-None-Match': _condition, ...withoutCondition } = headers;
    const { 'x-amz-tagging': _tag, ...withoutTag } = headers;

    const attempts: [string, string, Record<string, string>, number, string][] = [
      ['another key', otherKey.toString(), headers, 403, 'SignatureDoesNotMatch'],
      ["another document's key", existingDocument.toString(), headers, 403, 'SignatureDoesNotMatch'],
      ['X-Amz-Signature, one character', withParam('X-Amz-Signature', flipLast), headers, 403, 'SignatureDoesNotMatch'],
      ['X-Amz-Expires longer', withParam('X-Amz-Expires', () => '604800'), headers, 403, 'SignatureDoesNotMatch'],
      ['X-Amz-Expires shorter', withParam('X-Amz-Expires', () => '60'), headers, 403, 'SignatureDoesNotMatch'],
      ['X-Amz-Date, one second', withParam('X-Amz-Date', nextSecond), headers, 403, 'SignatureDoesNotMatch'],
      [
        'X-Amz-Credential access key',
        withParam('X-Amz-Credential', (v) => `SOMEONE-ELSE${v.slice(v.indexOf('/'))}`),
        headers,
        403,
        'InvalidAccessKeyId',
      ],
      [
        'X-Amz-Credential region',
        withParam('X-Amz-Credential', (v) => v.replace(/\/[a-z]{2}-[a-z]+-\d\//, '/eu-west-3/')),
        headers,
        403,
        'AuthorizationQueryParametersError',
      ],
      [
        'X-Amz-SignedHeaders without content-type',
        withParam('X-Amz-SignedHeaders', () => 'host;if-none-match;x-amz-tagging'),
        headers,
        403,
        'SignatureDoesNotMatch',
      ],
      ['Content-Type', link.uploadUrl, { ...headers, 'Content-Type': 'text/html' }, 403, 'SignatureDoesNotMatch'],
      ['If-None-Match left out', link.uploadUrl, withoutCondition, 403, 'SignatureDoesNotMatch'],
      // Without its pending-upload tag the object would escape the lifecycle rule for abandoned uploads.
      ['x-amz-tagging left out', link.uploadUrl, withoutTag, 403, 'SignatureDoesNotMatch'],
      [
        'x-amz-tagging changed',
        link.uploadUrl,
        { ...headers, 'x-amz-tagging': 'upload=done' },
        403,
        'SignatureDoesNotMatch',
      ],
      ['unsigned x-amz-meta-owner', link.uploadUrl, { ...headers, 'x-amz-meta-owner': 'mallory' }, 403, 'AccessDenied'],
    ];
    const results: [string, number, string | undefined][] = [];
    for (const [name, target, sent] of attempts) {
      const answer = await s3Code(await fetch(target, { method: 'PUT', headers: sent, body: `tampered: ${name}` }));
      results.push([name, answer.status, answer.code]);
    }
    expect(results).toEqual(attempts.map(([name, , , status, code]) => [name, status, code]));

    // Nothing was stored: the upload is still not received, and the other document is as it was.
    const complete = await orgA<Body>('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.uploadId } });
    expectError(complete, 409, 'UPLOAD_NOT_RECEIVED');
    const guideAfter = await orgA<Body>('GET', DOCS, { query: { ...fx.a, s3Key: fx.s3Key } });
    expect(guideAfter.body).toEqual(guideBefore.body);
    // The untampered URL still works, so each refusal above was the tampering's.
    expect((await putFile(link, 'the real content')).status).toBe(200);
    expect((await orgA('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.uploadId } })).status).toBe(200);
    urlFigures.push(`tampered: ${attempts.length} variants → 403, nothing stored; the untampered URL → 200`);
  });

  it('refuse a PUT after expiresIn with 403, and nothing is stored', async () => {
    const { link, issuedAt } = expiringLink;
    // X-Amz-Date has whole seconds: two seconds after the link, its one second is over for sure.
    const wait = issuedAt + 2100 - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const late = await s3Code(await putFile(link, 'too late'));
    expect(late).toEqual({ status: 403, code: 'AccessDenied', message: 'Request has expired' });
    const complete = await client(shortTtl)<Body>('POST', `${DOCS}/upload-complete`, {
      body: { uploadId: link.uploadId },
    });
    expectError(complete, 409, 'UPLOAD_NOT_RECEIVED');
    urlFigures.push('expired: PUT after expiresIn → 403 AccessDenied, nothing stored');
  });

  describe('replayed after upload-complete', () => {
    let replayData: Dataset;
    const query = (text: string) =>
      orgA<{ results: { content: string; metadata: { documentId: string } }[] }>(
        'POST',
        `/dashboard/agents/${replayData.agentId}/knowledge/${replayData.environment}/kb/${replayData.knowledgeBaseId}/query`,
        { body: { query: text, numberOfResults: 20 } },
      );
    /**
     * The results that hold a replayed text. Not "no results": a vector index (Bedrock's, as deployed) answers its
     * nearest chunks whatever their relevance, so what matters is that no replayed text was ever indexed.
     */
    const replayedTexts = (response: Awaited<ReturnType<typeof query>>) =>
      response.body.results.map((r) => r.content).filter((content) => /giraffe/i.test(content));
    const getDoc = () => orgA<Body>('GET', DOCS, { query: { ...replayData, customDocumentId: 'replayed-1' } });
    const settled = () => pollUntil(getDoc, (response) => response.body.status !== 'uploaded');

    beforeAll(async () => {
      replayData = await createDataset(orgA);
    });

    it('answers 412 to the replay, before and after processing, and the document keeps its content', async () => {
      const original = 'Zebras are striped. The original upload names the zebra.';
      const { link } = await uploadDocument(
        orgA,
        replayData,
        { fileName: 'replayed.txt', customDocumentId: 'replayed-1' },
        original,
      );
      // At once, while the document is still `uploaded` and its processing may not have read the object yet.
      const early = await s3Code(await putFile(link, 'Giraffes replace zebras in the early replay.'));
      expect(early).toMatchObject({ status: 412, code: 'PreconditionFailed' });
      const ready = await settled();
      expect(ready.body).toMatchObject({ status: 'ready', fileSize: Buffer.byteLength(original) });

      const late = await s3Code(await putFile(link, 'Giraffes replace zebras in the late replay, a longer text.'));
      expect(late).toMatchObject({ status: 412, code: 'PreconditionFailed' });
      // The upload-complete of the consumed upload still answers what it answered.
      const again = await orgA<Body>('POST', `${DOCS}/upload-complete`, { body: { uploadId: link.uploadId } });
      expect(again.status).toBe(200);

      // Nothing to reprocess, no second document, no second set of chunks.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await getDoc()).body).toEqual(ready.body);
      const zebra = await query('zebra');
      expect(zebra.body.results.map((r) => r.content)).toEqual([original]);
      expect(replayedTexts(await query('giraffes'))).toEqual([]);
      urlFigures.push(
        'replayed after upload-complete: 412 PreconditionFailed (while uploaded and when ready), document unchanged',
      );
    });

    it('answers 412 to the replay of an update URL, and the document keeps the updated content', async () => {
      const update = await orgA<UploadLink>('POST', `${DOCS}/update/upload-link`, {
        body: { ...replayData, customDocumentId: 'replayed-1', fileName: 'replayed.txt' },
      });
      const second = 'Okapis are the second version of this document.';
      expect((await putFile(update.body, second)).status).toBe(200);
      const done = await orgA('POST', `${DOCS}/update/upload-complete`, { body: { uploadId: update.body.uploadId } });
      expect(done.status).toBe(200);
      const ready = await settled();
      expect(ready.body).toMatchObject({ status: 'ready', fileSize: Buffer.byteLength(second) });

      const replay = await s3Code(await putFile(update.body, 'Giraffes, replayed into the update.'));
      expect(replay).toMatchObject({ status: 412, code: 'PreconditionFailed' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await getDoc()).body).toEqual(ready.body);
      expect((await query('okapis')).body.results.map((r) => r.content)).toEqual([second]);
      expect(replayedTexts(await query('giraffes'))).toEqual([]);
      urlFigures.push('update URL replayed after update/upload-complete: 412, document unchanged');
    });
  });
});

/** The restricted matrix, one line per route, and its totals. */
function restrictedLines(): string[] {
  const lines = [`restricted to one agent: columns ${RESTRICTED_CASES.join(' | ')}`];
  const totals = new Map<RestrictedCase, Map<number, number>>();
  for (const route of ROUTES.filter((r) => r.scope !== null)) {
    const statuses = restrictedObserved.get(route.id);
    lines.push(`${route.id.padEnd(26)} ${RESTRICTED_CASES.map((cell) => statuses?.get(cell) ?? '—').join(' ')}`);
    for (const [cell, status] of statuses ?? []) {
      const counts = totals.get(cell) ?? new Map<number, number>();
      counts.set(status, (counts.get(status) ?? 0) + 1);
      totals.set(cell, counts);
    }
  }
  for (const [cell, counts] of totals) {
    lines.push(`${cell}: ${[...counts].map(([status, n]) => `${status} × ${n}`).join(', ')}`);
  }
  return lines;
}

afterAll(() => {
  const lines: string[] = [];
  /** Per column (public routes apart): how many cells answered each status. */
  const totals = new Map<string, Map<number, number>>();
  for (const route of ROUTES) {
    const statuses = observed.get(route.id);
    const row = CASES.map((cell) => statuses?.get(cell) ?? '—').join(' ');
    lines.push(`${route.id.padEnd(26)} ${route.method.padEnd(6)} ${String(route.scope ?? 'public').padEnd(20)} ${row}`);
    for (const [cell, status] of statuses ?? []) {
      const column = route.scope === null ? 'public (any token)' : cell;
      const counts = totals.get(column) ?? new Map<number, number>();
      counts.set(status, (counts.get(status) ?? 0) + 1);
      totals.set(column, counts);
    }
  }
  const scoped = ROUTES.filter((route) => route.scope !== null).length;
  const measured = [...observed.values()].reduce((sum, statuses) => sum + statuses.size, 0);
  printFigures('access', [
    `${ROUTES.length} routes (${scoped} scoped, ${ROUTES.length - scoped} public) × ${CASES.length} cases = ${
      ROUTES.length * CASES.length
    } cells, ${measured} measured`,
    `columns: ${CASES.join(' | ')}`,
    ...lines,
    ...[...totals].map(
      ([column, counts]) =>
        `${column}: ${[...counts]
          .sort(([a], [b]) => a - b)
          .map(([status, n]) => `${status} × ${n}`)
          .join(', ')}`,
    ),
    ...urlFigures,
    ...tokenFigures,
    ...restrictedLines(),
  ]);
});
