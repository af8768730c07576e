/**
 * Success bodies of the flows routes (without the `success: true` every answer carries), one zod schema per route id
 * of lib/routes.ts: the OpenAPI document is generated from them, and the integration suites check every answer
 * against it. Handlers import these as types only (`satisfies`), so no bundle grows.
 *
 * A webhook or app event has two success bodies: the result (200, RESPONSES) and, once the run was handed over to
 * the flow runner, the session to follow (202, RESPONSES_ACCEPTED).
 */
import * as z from 'zod';
import { definitionSchema } from '#core/flows/definition';
import { LLM_CLASS_NAMES } from '#core/flows/llm-config';
import { environment } from '#core/knowledge/fields';
import { IMAGE_MEDIA_TYPES } from '#ports/model';
import { EMAIL_PATTERN } from '../dashboard/schemas';
import { type Answer, freeForm, id, instant, sessionStatus } from '../response-fields';

const AGENT_ID = '3f6c2a8e-8d1b-4c2e-9a57-0b6f1d2e4c10';
const SESSION_ID = 'c1a4e9d2-6b3f-4e70-8a15-9d2c7b0e3f68';
const INVOCATION_ID = '7e0b5c31-9a2d-4f86-b1c4-3d8e6f2a9b07';

const author = z
  .discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('person'), email: z.string().max(254).regex(EMAIL_PATTERN) }),
    z.strictObject({ kind: z.literal('token'), tokenId: id }),
  ])
  .nullable()
  .meta({ description: 'Who stored it: a person by e-mail, a token by id; null before versions recorded it' });

const version = z.int().min(1);
/** A trigger call's own id (a UUID), or a schedule fire's: `schedule:<sessionId>`. */
const invocationId = z
  .string()
  .meta({ description: 'The invocation: a UUID, or schedule:<sessionId> for a schedule fire' });
const restoredFrom = version.nullable().meta({ description: 'The version it is a copy of, when a restore stored it' });

const DEFINITION_EXAMPLE = {
  instructions: 'You are the support assistant of Acme. Answer briefly.',
  variables: {},
  tools: [],
  flows: [
    {
      name: 'support',
      nodes: [
        { name: 'Start', type: 'trigger', triggerType: 'webhook' },
        {
          name: 'Answer',
          type: 'promptNode',
          displayName: 'Answer',
          prompt: 'Answer: {memory.question}',
          sendAiMessage: true,
        },
      ],
      edges: [{ from: 'Start', to: 'Answer', type: 'stepForward' }],
    },
  ],
};

/** A stored definition as the definition routes answer it (core/flows/definitions.ts, definitionView). */
const storedDefinition = z.strictObject({
  agentId: id,
  environment,
  definition: definitionSchema,
  version,
  updatedAt: instant,
  updatedBy: author,
  restoredFrom,
});

const STORED_EXAMPLE = {
  agentId: AGENT_ID,
  environment: 'production',
  definition: DEFINITION_EXAMPLE,
  version: 3,
  updatedAt: '2026-11-28T15:42:07.615Z',
  updatedBy: { kind: 'person', email: 'owner@example.com' },
  restoredFrom: null,
};

export const definitionResponse = storedDefinition.meta({
  description: 'The stored definition and its version',
  examples: [STORED_EXAMPLE],
});

export const savedDefinitionResponse = storedDefinition
  .extend({
    unchanged: z
      .boolean()
      .meta({ description: 'true: it equals the current version, which is answered; nothing was stored' }),
  })
  .meta({
    description: 'The version stored, or the current one when the definition equals it',
    examples: [{ ...STORED_EXAMPLE, unchanged: false }],
  });

export const definitionVersionListResponse = z
  .strictObject({
    data: z.array(
      z.strictObject({
        version,
        updatedAt: instant,
        updatedBy: author,
        restoredFrom,
        flowCount: z.int().min(0),
        nodeCount: z.int().min(0),
        current: z.boolean(),
      }),
    ),
    count: z.int().min(0),
    nextToken: z.string().nullable().meta({ description: 'Pass it back for the next page; null: this is the last' }),
  })
  .meta({
    description: 'The versions, newest first, the current one at the top of the first page',
    examples: [
      {
        data: [
          {
            version: 3,
            updatedAt: '2026-11-28T15:42:07.615Z',
            updatedBy: { kind: 'person', email: 'owner@example.com' },
            restoredFrom: null,
            flowCount: 1,
            nodeCount: 2,
            current: true,
          },
          {
            version: 2,
            updatedAt: '2026-11-27T10:01:33.208Z',
            updatedBy: { kind: 'token', tokenId: '9b2e41d7-5c0a-4f3e-8e61-2d7c9a1b0f44' },
            restoredFrom: null,
            flowCount: 1,
            nodeCount: 2,
            current: false,
          },
        ],
        count: 2,
        nextToken: null,
      },
    ],
  });

export const validateDefinitionResponse = z
  .strictObject({
    valid: z.boolean(),
    problems: z.array(
      z.strictObject({
        field: z.string().meta({ description: 'Dot path of the field (flows.0.nodes.1.prompt); empty for the whole' }),
        rule: z.string(),
        message: z.string().optional(),
        flow: z.string().optional(),
        node: z.string().optional(),
      }),
    ),
  })
  .meta({
    description: 'Whether the definition would be stored, and every problem it has; nothing is stored',
    examples: [
      {
        valid: false,
        problems: [
          {
            field: 'flows.0.edges.0.to',
            rule: 'edge.unknownNode',
            flow: 'support',
            node: 'Start',
            message: 'Answr is not a node of flow support (use a jumpToNode across flows)',
          },
        ],
      },
    ],
  });

const attachment = z.strictObject({
  id: z.string(),
  type: z.literal('image'),
  mediaType: z.enum(IMAGE_MEDIA_TYPES),
  bytes: z.int().min(0),
  source: z.enum(['data', 'url']),
});

const sessionMessage = z.strictObject({
  role: z.enum(['user', 'assistant', 'system', 'tool']),
  content: z.string(),
  node: z.string().optional(),
  tool: z.strictObject({ name: z.string(), input: z.unknown(), output: z.unknown() }).optional(),
  attachments: z.array(attachment).optional(),
  at: instant,
});

const aiMessage = z.strictObject({
  node: z.string(),
  displayName: z.string(),
  content: z.string(),
  model: z
    .string()
    .meta({ description: 'The model that wrote it: bedrock-converse:<id>, openai-compatible:<name>, offline' }),
  invocationId,
  at: instant,
  callback: z
    .strictObject({
      delivered: z.boolean(),
      status: z.int().optional(),
      error: z.string().optional(),
      retrying: z.literal(true).optional(),
    })
    .optional()
    .meta({ description: 'Its delivery to the callback URL (or the agent’s code); absent when there is none' }),
});

const sessionError = z.strictObject({ code: z.string(), message: z.string(), node: z.string().nullable() });

const AI_MESSAGE_EXAMPLE = {
  node: 'Answer',
  displayName: 'Answer',
  content: 'You can return an item within 30 days of delivery.',
  model: 'offline',
  invocationId: INVOCATION_ID,
  at: '2026-11-29T07:20:01.337Z',
};

export const invocationResponse = z
  .strictObject({
    sessionId: id,
    status: sessionStatus,
    currentNode: z.string().nullable().meta({ description: 'While paused: the node waiting for the next message' }),
    flowName: z.string().nullable(),
    aiMessages: z.array(aiMessage).meta({ description: 'The AI messages this invocation produced' }),
    memory: freeForm,
    outputs: freeForm.meta({ description: 'The outputs of the nodes run, by node name' }),
    error: sessionError.nullable(),
  })
  .meta({
    description: 'The session’s result once the run ended, paused or failed (a failed flow is a 200 too)',
    examples: [
      {
        sessionId: SESSION_ID,
        status: 'completed',
        currentNode: null,
        flowName: 'support',
        aiMessages: [AI_MESSAGE_EXAMPLE],
        memory: { question: 'How long do I have to return an item?' },
        outputs: { Answer: { message: 'You can return an item within 30 days of delivery.' } },
        error: null,
      },
    ],
  });

export const invocationAcceptedResponse = z
  .strictObject({
    sessionId: id,
    status: z.literal('running'),
    aiMessages: z.array(aiMessage).meta({ description: 'The AI messages produced before the hand-over' }),
  })
  .meta({
    description:
      'The run outlived the request and goes on in the flow runner (docs/flows.md, "Long runs"): follow the session',
    examples: [{ sessionId: SESSION_ID, status: 'running', aiMessages: [] }],
  });

const sessionRun = z.strictObject({
  invocationId,
  next: z
    .strictObject({ node: z.string(), phase: z.enum(['run', 'route']) })
    .nullable()
    .meta({ description: 'Where the run goes on; null once it ended' }),
  step: z.int().min(0),
  steps: z.array(z.strictObject({ step: z.int().min(0), node: z.string(), at: instant })),
  handedOverAt: instant,
  runner: z.string().nullable(),
  takeovers: z.int().min(0),
  start: z.strictObject({ body: freeForm }).optional(),
});

const SESSION_SUMMARY_EXAMPLE = {
  sessionId: SESSION_ID,
  status: 'completed',
  flowName: 'support',
  currentNode: null,
  trigger: { name: 'Start', type: 'webhook' },
  createdAt: '2026-11-29T07:20:00.912Z',
  updatedAt: '2026-11-29T07:20:01.402Z',
};

export const sessionResponse = z
  .strictObject({
    agentId: id,
    environment,
    sessionId: id,
    status: sessionStatus,
    flowName: z.string().nullable(),
    currentNode: z.string().nullable(),
    memory: freeForm,
    messages: z.array(sessionMessage),
    outputs: freeForm,
    aiMessages: z.array(aiMessage),
    error: sessionError.nullable(),
    trigger: z.strictObject({ name: z.string(), type: z.string() }).meta({ description: 'Of the latest invocation' }),
    invocations: z.int().min(0),
    run: sessionRun
      .nullable()
      .optional()
      .meta({ description: 'The latest invocation, when it was handed over to the flow runner' }),
    version: z.int().min(0),
    createdAt: instant,
    updatedAt: instant,
  })
  .meta({
    description: 'The session whole: memory, messages, node outputs and AI messages',
    examples: [
      {
        ...SESSION_SUMMARY_EXAMPLE,
        agentId: AGENT_ID,
        environment: 'production',
        memory: { question: 'How long do I have to return an item?' },
        messages: [
          { role: 'user', content: 'How long do I have to return an item?', at: '2026-11-29T07:20:00.912Z' },
          {
            role: 'assistant',
            content: 'You can return an item within 30 days of delivery.',
            node: 'Answer',
            at: '2026-11-29T07:20:01.337Z',
          },
        ],
        outputs: { Answer: { message: 'You can return an item within 30 days of delivery.' } },
        aiMessages: [AI_MESSAGE_EXAMPLE],
        error: null,
        invocations: 1,
        version: 2,
      },
    ],
  });

export const sessionListResponse = z
  .strictObject({
    data: z.array(
      z.strictObject({
        sessionId: id,
        status: sessionStatus,
        flowName: z.string().nullable(),
        currentNode: z.string().nullable(),
        trigger: z.strictObject({ name: z.string(), type: z.string() }),
        createdAt: instant,
        updatedAt: instant,
      }),
    ),
    count: z.int().min(0),
    nextToken: z.string().nullable().meta({
      description: 'Pass it back for the next page; null: this is the last (a page may hold fewer than limit)',
    }),
  })
  .meta({
    description: 'Sessions, newest first',
    examples: [{ data: [SESSION_SUMMARY_EXAMPLE], count: 1, nextToken: null }],
  });

const traceStep = z.strictObject({
  index: z.int().min(1),
  kind: z.enum(['node', 'invocation', 'agentCode']),
  node: z.string().nullable(),
  nodeType: z.string().nullable(),
  displayName: z.string().nullable(),
  status: z.enum(['succeeded', 'paused', 'failed', 'running']),
  startedAt: instant,
  durationMs: z.number().min(0).nullable(),
  model: z.string().nullable(),
  tokens: z.strictObject({ input: z.int().min(0), output: z.int().min(0) }).nullable(),
  input: z
    .unknown()
    .meta({ description: 'What the node ran with: the rendered prompt and model, a tool’s parameters, …' }),
  output: z.unknown(),
  toolCalls: z.array(freeForm).meta({ description: 'A prompt node’s scoped tool calls, in order' }),
  browserSteps: z.array(freeForm).meta({ description: 'A browser task’s steps, in order' }),
  edge: z.strictObject({ to: z.string().nullable(), reason: z.string() }).nullable(),
  error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
});

export const sessionTraceResponse = z
  .strictObject({
    sessionId: id,
    status: sessionStatus,
    steps: z.array(traceStep),
    truncated: z
      .boolean()
      .meta({ description: 'true: the session has more events than a trace reads; its oldest steps are left out' }),
  })
  .meta({
    description: 'The session’s steps across its invocations, oldest first (docs/flows.md, "The trace")',
    examples: [
      {
        sessionId: SESSION_ID,
        status: 'completed',
        steps: [
          {
            index: 1,
            kind: 'node',
            node: 'Start',
            nodeType: 'trigger',
            displayName: null,
            status: 'succeeded',
            startedAt: '2026-11-29T07:20:00.950Z',
            durationMs: 1,
            model: null,
            tokens: null,
            input: {},
            output: null,
            toolCalls: [],
            browserSteps: [],
            edge: { to: 'Answer', reason: 'stepForward' },
            error: null,
          },
          {
            index: 2,
            kind: 'node',
            node: 'Answer',
            nodeType: 'promptNode',
            displayName: 'Answer',
            status: 'succeeded',
            startedAt: '2026-11-29T07:20:00.953Z',
            durationMs: 384,
            model: 'offline',
            tokens: null,
            input: { prompt: 'Answer: How long do I have to return an item?', model: 'offline' },
            output: { message: 'You can return an item within 30 days of delivery.' },
            toolCalls: [],
            browserSteps: [],
            edge: { to: null, reason: 'no edge leaves this node: the flow ends' },
            error: null,
          },
        ],
        truncated: false,
      },
    ],
  });

export const modelListResponse = z
  .strictObject({
    data: z.array(
      z.strictObject({
        id: z.string().meta({ description: 'What llmConfig.properties.model names (offline: the offline model)' }),
        provider: z.enum(['bedrock', 'openai-compatible', 'offline']),
        llmConfigName: z.enum(LLM_CLASS_NAMES),
        kind: z.enum(['foundation-model', 'inference-profile']).optional().meta({ description: 'Bedrock only' }),
        default: z.boolean(),
        imageInput: z.boolean(),
        tools: z.boolean(),
        languageModel: z.boolean(),
      }),
    ),
  })
  .meta({
    description: 'The models this deployment may call, the default marked',
    examples: [
      {
        data: [
          {
            id: 'eu.anthropic.claude-sonnet-4-20250514-v1:0',
            provider: 'bedrock',
            llmConfigName: 'ChatBedrockConverse',
            kind: 'inference-profile',
            default: true,
            imageInput: true,
            tools: true,
            languageModel: true,
          },
          {
            id: 'offline',
            provider: 'offline',
            llmConfigName: 'ChatOffline',
            default: false,
            imageInput: false,
            tools: true,
            languageModel: false,
          },
        ],
      },
    ],
  });

export type DefinitionResponse = Answer<typeof definitionResponse>;
export type SavedDefinitionResponse = Answer<typeof savedDefinitionResponse>;
export type DefinitionVersionListResponse = Answer<typeof definitionVersionListResponse>;
export type ValidateDefinitionResponse = Answer<typeof validateDefinitionResponse>;
export type InvocationResponse = Answer<typeof invocationResponse>;
export type InvocationAcceptedResponse = Answer<typeof invocationAcceptedResponse>;
export type SessionResponse = Answer<typeof sessionResponse>;
export type SessionListResponse = Answer<typeof sessionListResponse>;
export type SessionTraceResponse = Answer<typeof sessionTraceResponse>;
export type ModelListResponse = Answer<typeof modelListResponse>;

export const RESPONSES: Readonly<Record<string, z.ZodType>> = {
  PutAgentDefinition: savedDefinitionResponse,
  GetAgentDefinition: definitionResponse,
  ListAgentDefinitionVersions: definitionVersionListResponse,
  GetAgentDefinitionVersion: definitionResponse,
  RestoreAgentDefinitionVersion: savedDefinitionResponse,
  ValidateAgentDefinition: validateDefinitionResponse,
  ListSessions: sessionListResponse,
  GetSession: sessionResponse,
  GetSessionTrace: sessionTraceResponse,
  ListModels: modelListResponse,
  InvokeWebhook: invocationResponse,
  SendAppEvent: invocationResponse,
};

/**
 * The 202 body of the routes that hand a run over to the flow runner (webhook, app event, and the dashboard's webhook
 * by its mirror), by route id as RESPONSES is.
 */
export const RESPONSES_ACCEPTED: Readonly<Record<string, z.ZodType>> = {
  InvokeWebhook: invocationAcceptedResponse,
  SendAppEvent: invocationAcceptedResponse,
};
