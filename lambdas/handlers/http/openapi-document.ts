/**
 * The OpenAPI 3.1 document of every route, generated from lib/routes.ts and the same zod schemas the handlers
 * validate with, so the document cannot describe a request the service would refuse.
 */
import * as z from 'zod';
import { definitionSchema } from '#core/flows/definition';
import { environment, uuid } from '#core/knowledge/fields';
import { ROUTES } from '../../../lib/routes';
import { queryEventsSchema, trackEventSchema } from './analytics/schemas';
import * as dashboard from './dashboard/schemas';
import { errorExample, errorStatusesOf, STATUS_DESCRIPTIONS } from './error-statuses';
import { RESPONSES_ACCEPTED } from './flows/responses';
import * as flows from './flows/schemas';
import * as knowledge from './knowledge/schemas';
import { mcpMessageSchema } from './mcp/schemas';
import { RAW_RESPONSE_ROUTES, responseSchemaOf } from './responses';
import * as retrievalConfig from './retrieval/config-schemas';
import * as retrieval from './retrieval/schemas';
import * as webhooks from './webhooks/schemas';

const REQUEST_SCHEMAS: Record<string, z.ZodType> = {
  Health: z.strictObject({}),
  OpenApi: z.strictObject({}),
  UploadLink: knowledge.uploadLinkSchema,
  UploadComplete: knowledge.uploadCompleteSchema,
  UpdateUploadLink: knowledge.updateUploadLinkSchema,
  UpdateUploadComplete: knowledge.uploadCompleteSchema,
  PatchMetadata: knowledge.patchMetadataSchema,
  GetDocument: knowledge.documentQuerySchema,
  DeleteDocument: knowledge.documentQuerySchema,
  RetryDocument: knowledge.documentQuerySchema,
  ListDocuments: knowledge.listDocumentsSchema,
  ListDocumentChunks: knowledge.listDocumentChunksSchema,
  CreateAgent: dashboard.createAgentSchema,
  ListAgents: dashboard.noInputSchema,
  GetAgent: dashboard.agentPathSchema,
  RenameAgent: dashboard.renameAgentSchema,
  DeleteAgent: dashboard.agentPathSchema,
  RotateCallbackSecret: dashboard.agentPathSchema,
  CreateWebhookEndpoint: webhooks.createWebhookEndpointSchema,
  ListWebhookEndpoints: webhooks.noWebhookInputSchema,
  GetWebhookEndpoint: webhooks.webhookEndpointPathSchema,
  UpdateWebhookEndpoint: webhooks.updateWebhookEndpointSchema,
  DeleteWebhookEndpoint: webhooks.webhookEndpointPathSchema,
  RotateWebhookEndpointSecret: webhooks.webhookEndpointPathSchema,
  ListWebhookDeliveries: webhooks.listWebhookDeliveriesSchema,
  AgentsList: dashboard.noInputSchema,
  QueryEvents: queryEventsSchema,
  TrackEvent: trackEventSchema,
  GetZipJob: knowledge.zipJobPathSchema,
  ListZipJobs: knowledge.listZipJobsSchema,
  QueryKnowledgeBase: retrieval.retrievalSchema,
  GenerateFromKnowledgeBase: retrieval.retrievalSchema,
  GetRetrievalConfig: retrievalConfig.configPathSchema,
  PutRetrievalConfig: retrievalConfig.putConfigSchema,
  PreviewDefaultRetrieval: retrievalConfig.previewSchema,
  CreateKnowledgeBase: dashboard.createKnowledgeBaseSchema,
  ListKnowledgeBases: dashboard.agentPathSchema,
  GetKnowledgeBase: dashboard.knowledgeBasePathSchema,
  UpdateKnowledgeBase: dashboard.updateKnowledgeBaseSchema,
  DeleteKnowledgeBase: dashboard.knowledgeBasePathSchema,
  ReindexKnowledgeBase: dashboard.reindexKnowledgeBaseSchema,
  GetKnowledgeBaseReindex: dashboard.knowledgeBasePathSchema,
  CreateToken: dashboard.createTokenSchema,
  ListTokens: dashboard.noInputSchema,
  RevokeToken: dashboard.tokenPathSchema,
  SignUp: dashboard.signUpSchema,
  GetOrganization: dashboard.noInputSchema,
  InviteMember: dashboard.inviteMemberSchema,
  ListMembers: dashboard.noInputSchema,
  RemoveMember: dashboard.memberPathSchema,
  GetMe: dashboard.noInputSchema,
  AcceptInvitation: dashboard.invitationPathSchema,
  DeclineInvitation: dashboard.invitationPathSchema,
  CreateOrganization: dashboard.createOrganizationSchema,
  // The handlers take the definition as it comes and report all its problems at once; the document shows its shape.
  PutAgentDefinition: definitionSchema.extend({ agentId: uuid, environment, expectedVersion: flows.expectedVersion }),
  ValidateAgentDefinition: definitionSchema.extend({ agentId: uuid, environment }),
  GetAgentDefinition: flows.definitionPathSchema,
  ListAgentDefinitionVersions: flows.listDefinitionVersionsSchema,
  GetAgentDefinitionVersion: flows.definitionVersionPathSchema,
  RestoreAgentDefinitionVersion: flows.restoreDefinitionVersionSchema,
  ListSessions: flows.listSessionsSchema,
  GetSession: flows.sessionPathSchema,
  GetSessionTrace: flows.sessionPathSchema,
  ListModels: flows.listModelsSchema,
  InvokeWebhook: flows.webhookSchema,
  SendAppEvent: flows.appEventSchema,
  Mcp: mcpMessageSchema,
};

export function requestSchemaOf(routeId: string): z.ZodType {
  // A dashboard mirror (lib/routes.ts, DASHBOARD_MIRRORS) takes what its customer route takes, the dataset in its path.
  const schema = REQUEST_SCHEMAS[routeId] ?? REQUEST_SCHEMAS[routeId.replace(/^Dashboard(?=[A-Z])/, '')];
  if (!schema) throw new Error(`no request schema for route ${routeId}`);
  return schema;
}

type JsonSchema = { properties?: Record<string, JsonSchema>; required?: string[]; [key: string]: unknown };

/** The error body, its `error.code` one of `codes` (error-statuses.ts): a code not listed is not in the contract. */
function errorBody(codes: readonly string[]): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['success', 'error'],
    properties: {
      success: { const: false },
      error: {
        type: 'object',
        additionalProperties: false,
        required: ['code', 'message', 'details'],
        properties: {
          code: { type: 'string', enum: [...codes] },
          message: { type: 'string' },
          details: { type: 'array', items: { $ref: '#/components/schemas/ErrorDetail' } },
        },
      },
    },
  };
}

/** One field's problem in an error's `details` (core/errors.ts ErrorDetail; a definition's: DefinitionProblem). */
const ERROR_DETAIL: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['field', 'rule'],
  properties: {
    field: { type: 'string', description: 'Dot path of the offending field; empty for the request as a whole' },
    rule: { type: 'string', description: 'The rule the value broke' },
    message: { type: 'string' },
    flow: { type: 'string', description: 'A definition’s problem: the flow it is in' },
    node: { type: 'string', description: 'A definition’s problem: the node it is in' },
  },
};

/**
 * The name of the shared answer (components.responses) of `status` with `codes`: routes answering the same codes
 * share one, so the document (and the console's generated types) state each set once.
 */
function errorResponseName(status: number, codes: readonly string[]): string {
  return `Error${status}_${codes.join('_')}`;
}

/** The answer of an error status: its description, its codes as an enum, an example of its first code. */
function errorResponse(status: number, codes: readonly string[]): Record<string, unknown> {
  return {
    description: `${STATUS_DESCRIPTIONS[status] ?? 'Error'}. Codes: ${codes.join(', ')}`,
    content: {
      'application/json': { schema: errorBody(codes), example: errorExample(status, codes[0]) },
    },
  };
}

/**
 * A run handed over to the flow runner past the request's budget (flows/answer.ts, docs/flows.md "Long runs"): the
 * webhook and app event routes (and the dashboard's webhook) answer 202 with the session to follow, besides their 200
 * with the run's result.
 */
function handedOverSchemaOf(routeId: string): z.ZodType | undefined {
  return RESPONSES_ACCEPTED[routeId] ?? RESPONSES_ACCEPTED[routeId.replace(/^Dashboard(?=[A-Z])/, '')];
}

/**
 * A custom event whose `eventKey` was stored already: 200 with the body of its 201 (`duplicate: true`), nothing
 * stored again (analytics/track-event.ts).
 */
const REPEATABLE_ROUTES: readonly string[] = ['TrackEvent'];

/** A person signed in names the organization a dashboard request acts in (core/auth/people.ts); a token never needs it. */
const ORGANIZATION_PARAMETER = {
  name: 'X-Organization-Id',
  in: 'header',
  required: false,
  description:
    'With a person’s ID token: the organization the request acts in, one of theirs (required when they belong to several). Ignored with an organization token.',
  schema: { type: 'string', format: 'uuid' },
};

/**
 * The success answer of a route: its body schema (responses.ts) with the `success: true` every answer but the raw
 * ones (this document) carries.
 */
function successResponse(
  routeId: string,
  schema = responseSchemaOf(routeId),
  description = 'Success',
): Record<string, unknown> {
  if (routeId === 'OpenApi') {
    return {
      description: 'This document',
      content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'paths'] } } },
    };
  }
  if (!schema) return { description };
  const { $schema: _ignored, ...body } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
  if (RAW_RESPONSE_ROUTES.has(routeId)) {
    return { description: 'Success', content: { 'application/json': { schema: body } } };
  }
  return {
    description,
    content: {
      'application/json': {
        schema: {
          ...body,
          properties: { success: { const: true }, ...(body.properties ?? {}) },
          required: ['success', ...(body.required ?? [])],
          // An example is a whole answer: the envelope's `success: true` too.
          ...(Array.isArray(body.examples)
            ? { examples: body.examples.map((example) => ({ success: true, ...(example as object) })) }
            : {}),
        },
      },
    },
  };
}

function pathParameterNames(path: string): string[] {
  return [...path.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]);
}

export function buildOpenApiDocument() {
  const paths: Record<string, Record<string, unknown>> = {};
  const sharedResponses: Record<string, unknown> = {};
  for (const route of ROUTES) {
    const schema = z.toJSONSchema(requestSchemaOf(route.id), { io: 'input', unrepresentable: 'any' }) as JsonSchema;
    const pathNames = pathParameterNames(route.path);
    const properties = { ...(schema.properties ?? {}) };
    for (const name of pathNames) delete properties[name];
    const required = (schema.required ?? []).filter((name) => !pathNames.includes(name));
    const parameters: unknown[] = pathNames.map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (route.scope && route.path.startsWith('/dashboard') && !route.personal) parameters.push(ORGANIZATION_PARAMETER);
    let requestBody: unknown;
    if (route.method === 'GET' || route.method === 'DELETE') {
      for (const [name, property] of Object.entries(properties)) {
        parameters.push({ name, in: 'query', required: required.includes(name), schema: property });
      }
    }
    if (route.method !== 'GET' && Object.keys(properties).length > 0) {
      const { $schema: _ignored, ...bodySchema } = { ...schema, properties, required } as JsonSchema;
      requestBody = { required: route.method !== 'DELETE', content: { 'application/json': { schema: bodySchema } } };
    }
    const errors = Object.entries(errorStatusesOf(route)).map(([status, codes]) => {
      const name = errorResponseName(Number(status), codes);
      sharedResponses[name] ??= errorResponse(Number(status), codes);
      return [status, { $ref: `#/components/responses/${name}` }];
    });
    paths[route.path] ??= {};
    paths[route.path][route.method.toLowerCase()] = {
      operationId: route.id,
      summary: route.summary,
      ...(route.scope ? { security: [{ bearerToken: [] }], 'x-required-scope': route.scope } : { security: [] }),
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses: {
        [route.successStatus ?? (route.method === 'POST' && route.id.startsWith('Create') ? 201 : 200)]:
          successResponse(route.id),
        ...(handedOverSchemaOf(route.id)
          ? {
              '202': successResponse(
                route.id,
                handedOverSchemaOf(route.id),
                'The run goes on in the flow runner: follow the session',
              ),
            }
          : {}),
        ...(REPEATABLE_ROUTES.includes(route.id)
          ? { '200': successResponse(route.id, undefined, 'Stored already under this eventKey: nothing stored again') }
          : {}),
        ...Object.fromEntries(errors),
        // The MCP server (docs/mcp.md): a notification or a client's response gets no body.
        ...(route.id === 'Mcp'
          ? { '202': { description: 'A notification or a client response, accepted: no body' } }
          : {}),
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Agent Platform Service', version: '1.0.0' },
    components: {
      schemas: { ErrorDetail: ERROR_DETAIL },
      responses: Object.fromEntries(Object.entries(sharedResponses).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        bearerToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'An organization token; on /dashboard also a person’s Cognito ID token',
        },
      },
    },
    security: [{ bearerToken: [] }],
    paths,
  };
}
