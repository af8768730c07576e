/**
 * The response schemas of the dashboard, flows and analytics routes (lambdas/handlers/http/{dashboard,flows,
 * analytics}/responses.ts) as the OpenAPI document carries them: each route and its dashboard mirrors has a strict
 * success body with a description and an example its own schema admits, under the status the handler answers. What
 * the routes really answer is checked against the document by every integration suite (lib/local/openapi-check.ts).
 */
import * as z from 'zod';
import { RESPONSES_REPEATED } from '#handlers/http/analytics/responses';
import { RESPONSES_ACCEPTED } from '#handlers/http/flows/responses';
import { buildOpenApiDocument } from '#handlers/http/openapi-document';
import { responseSchemaOf } from '#handlers/http/responses';
import { ROUTES } from '../../../lib/routes';

const DASHBOARD = [
  'CreateAgent',
  'ListAgents',
  'GetAgent',
  'RenameAgent',
  'DeleteAgent',
  'RotateCallbackSecret',
  'CreateToken',
  'ListTokens',
  'RevokeToken',
  'SignUp',
  'GetOrganization',
  'InviteMember',
  'ListMembers',
  'RemoveMember',
  'GetMe',
  'AcceptInvitation',
  'DeclineInvitation',
  'CreateOrganization',
];
const FLOWS = [
  'PutAgentDefinition',
  'GetAgentDefinition',
  'ListAgentDefinitionVersions',
  'GetAgentDefinitionVersion',
  'RestoreAgentDefinitionVersion',
  'ValidateAgentDefinition',
  'ListSessions',
  'GetSession',
  'GetSessionTrace',
  'ListModels',
  'InvokeWebhook',
  'SendAppEvent',
];
const ANALYTICS = ['AgentsList', 'QueryEvents', 'TrackEvent'];
const AREA = [...DASHBOARD, ...FLOWS, ...ANALYTICS];
const routes = ROUTES.filter((r) => AREA.includes(r.id.replace(/^Dashboard(?=[A-Z])/, '')));

type JsonSchema = {
  description?: string;
  examples?: unknown[];
  properties?: Record<string, unknown>;
  required?: string[];
  additionalProperties?: unknown;
};

const paths = buildOpenApiDocument().paths as Record<string, Record<string, { responses: object }>>;

function successOf(route: (typeof routes)[number]): { status: string; schema: JsonSchema | undefined } {
  const operation = paths[route.path][route.method.toLowerCase()];
  const [status, response] = Object.entries(operation.responses).find(([code]) => code.startsWith('2')) as [
    string,
    { content?: { 'application/json': { schema: JsonSchema } } },
  ];
  return { status, schema: response.content?.['application/json'].schema };
}

function examplesOf(schema: z.ZodType): unknown[] {
  return (z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema).examples ?? [];
}

it('covers the 33 routes of the three areas and their 2 dashboard mirrors', () => {
  expect(routes.filter((r) => AREA.includes(r.id))).toHaveLength(33);
  expect(routes.filter((r) => !AREA.includes(r.id)).map((r) => r.id)).toEqual([
    'DashboardQueryEvents',
    'DashboardInvokeWebhook',
  ]);
});

describe.each(routes.map((r) => [r.id, r] as const))('%s', (id, route) => {
  it('has a strict success body with success: true, a description and an example', () => {
    expect(successOf(route).schema).toMatchObject({
      additionalProperties: false,
      properties: { success: { const: true } },
      required: expect.arrayContaining(['success']),
      description: expect.any(String),
      examples: [expect.any(Object)],
    });
  });

  it('has examples its own schema admits', () => {
    const schema = responseSchemaOf(id) as z.ZodType;
    const examples = examplesOf(schema);
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) {
      const parsed = schema.safeParse(example);
      expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
    }
  });
});

it('describes the 202 of a run handed over to the flow runner, and the 200 of a repeated custom event', () => {
  const others = { ...RESPONSES_ACCEPTED, ...RESPONSES_REPEATED };
  expect(Object.keys(others).sort()).toEqual(['InvokeWebhook', 'SendAppEvent', 'TrackEvent']);
  for (const schema of Object.values(others)) {
    const examples = examplesOf(schema);
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) expect(schema.safeParse(example).success).toBe(true);
  }
  const accepted = RESPONSES_ACCEPTED.InvokeWebhook;
  expect(
    accepted.safeParse({ sessionId: '0b0a4f3e-6a51-4c1e-9d8a-2f7e3c1b5a90', status: 'running', aiMessages: [] })
      .success,
  ).toBe(true);
  // The result of a run that ended is not the hand-over's body, nor the other way round.
  expect(
    accepted.safeParse({ sessionId: '0b0a4f3e-6a51-4c1e-9d8a-2f7e3c1b5a90', status: 'completed', aiMessages: [] })
      .success,
  ).toBe(false);
  expect(responseSchemaOf('InvokeWebhook')?.safeParse(examplesOf(accepted)[0]).success).toBe(false);
});

it('refuses an answer with a field its schema does not name, but takes any memory a flow wrote', () => {
  const agent = responseSchemaOf('GetAgent') as z.ZodType;
  const answer = {
    agentId: '3f6c2a8e-8d1b-4c2e-9a57-0b6f1d2e4c10',
    displayName: 'Support',
    createdAt: '2026-11-20T09:15:02.481Z',
  };
  expect(agent.safeParse(answer).success).toBe(true);
  expect(agent.safeParse({ ...answer, organizationId: '5a1d7e2c-0b4f-4c69-a3e8-7f2b9d6c1e05' }).success).toBe(false);
  const result = responseSchemaOf('InvokeWebhook') as z.ZodType;
  const [example] = examplesOf(result) as Record<string, unknown>[];
  expect(result.safeParse({ ...example, memory: { anything: { nested: [1, 'two'] } } }).success).toBe(true);
  expect(result.safeParse({ ...example, leaseUntil: null }).success).toBe(false);
});

it('lists the statuses each handler answers a success with', () => {
  const statuses = (id: string) => {
    const route = routes.find((r) => r.id === id) as (typeof routes)[number];
    return Object.keys(paths[route.path][route.method.toLowerCase()].responses).filter((code) => code.startsWith('2'));
  };
  expect(statuses('CreateAgent')).toEqual(['201']);
  expect(statuses('DeleteAgent')).toEqual(['202']);
  expect(statuses('RotateCallbackSecret')).toEqual(['201']);
  expect(statuses('AcceptInvitation')).toEqual(['201']);
  expect(statuses('PutAgentDefinition')).toEqual(['200']);
  // A repeated eventKey answers 200, a new one 201; a run handed over to the flow runner 202.
  expect(statuses('TrackEvent')).toEqual(['200', '201']);
  for (const id of ['InvokeWebhook', 'SendAppEvent', 'DashboardInvokeWebhook']) {
    expect(statuses(id)).toEqual(['200', '202']);
  }
});
