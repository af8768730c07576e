/**
 * The MCP server's tools (docs/mcp.md): each one the twin of a REST route, with that route's scope, request schema
 * and use case, so a tool can do nothing its route could not. The protocol around them is protocol.ts.
 */

import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { flowContainer } from '#composition/flow-container';
import type { Scope } from '#core/auth/scopes';
import { listVisibleKnowledgeBases } from '#core/dashboard/visible-knowledge-bases';
import { AppError } from '#core/errors';
import { invoke } from '#core/flows/runtime';
import { uuid } from '#core/knowledge/fields';
import { generateWithCitations } from '#core/retrieval/generate';
import { resultOf, retrieve } from '#core/retrieval/retrieve';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import { parseInput } from '#core/validation';
import { WEBHOOK_BODY_MAX_BYTES, webhookSchema } from '../flows/schemas';
import { retrievalSchema } from '../retrieval/schemas';
import { INPUT_SCHEMAS } from './input-schemas';

export interface McpTool {
  readonly name: string;
  /** The scope of its REST twin (lib/routes.ts); a token without it does not see the tool. */
  readonly scope: Scope;
  readonly description: string;
  readonly input: z.ZodType;
  /** Its input's JSON Schema in input-schemas.ts: tools that take the same input share one. */
  readonly inputName: keyof typeof INPUT_SCHEMAS;
  run(input: never, caller: Caller): Promise<Record<string, unknown>>;
}

const listInput = z.strictObject({ agentId: uuid.optional() });

const { agentId, environment, triggerName, sessionId, message } = webhookSchema.shape;
/** The webhook's request (lambdas/handlers/http/flows/schemas.ts) as named fields: the payload under `body`. */
const invokeInput = z.strictObject({
  agentId,
  environment,
  triggerName,
  sessionId,
  message,
  body: z
    .record(z.string(), z.unknown())
    .optional()
    .refine((body) => Buffer.byteLength(JSON.stringify(body ?? {}), 'utf8') <= WEBHOOK_BODY_MAX_BYTES, {
      message: `must be at most ${WEBHOOK_BODY_MAX_BYTES} bytes as JSON (it becomes session memory)`,
      params: { rule: 'maxBytes' },
    }),
});

const tool = <S extends z.ZodType>(
  spec: Omit<McpTool, 'input' | 'run'> & { input: S; run: (input: z.output<S>, caller: Caller) => Promise<object> },
) => spec as unknown as McpTool;

export const TOOLS: readonly McpTool[] = [
  tool({
    name: 'list_knowledge_bases',
    scope: 'dashboard',
    description:
      "The knowledge bases of the agents this token may use (or of agentId's), with their agent's id and name.",
    input: listInput,
    inputName: 'list',
    run: async (input, caller) => {
      const knowledgeBases = await listVisibleKnowledgeBases(flowContainer.knowledge, caller, input);
      return { knowledgeBases, count: knowledgeBases.length };
    },
  }),
  tool({
    name: 'search_knowledge_base',
    scope: 'dashboard',
    description:
      'The chunks of a knowledge base in an environment that best match a query, best first, with score (0..1), document and labels; filters on label1/label2.',
    input: retrievalSchema,
    inputName: 'retrieval',
    run: async (input, caller) => {
      const { results, explain } = await retrieve(flowContainer.knowledge, caller, input);
      return { results, ...(explain ? { explain } : {}) };
    },
  }),
  tool({
    name: 'generate_from_knowledge_base',
    scope: 'dashboard',
    description:
      'Answer a question from a knowledge base, with citations of the results it retrieved (citations[].resultIndex).',
    input: retrievalSchema,
    inputName: 'retrieval',
    run: async (input, caller) => {
      const { hits, explain } = await retrieve(flowContainer.knowledge, caller, input);
      const model = flowContainer.generateModel;
      const { answer, citations } = await generateWithCitations(model, input.query, hits);
      const results = hits.map(resultOf);
      return { answer, citations, results, model: model?.name ?? 'extractive', ...(explain ? { explain } : {}) };
    },
  }),
  tool({
    name: 'invoke_agent',
    scope: 'webhook',
    description:
      "Send a message to an agent's webhook trigger and get its AI messages; sessionId continues a session. A long run answers status running and the session to follow.",
    input: invokeInput,
    inputName: 'invoke',
    run: async ({ agentId, environment, triggerName, sessionId, message, body }, caller) => {
      // The webhook route's path (lambdas/handlers/http/flows/webhook.ts), minus its images.
      await requireAgent(flowContainer, caller, agentId);
      const result = await invoke(
        flowContainer,
        {
          agentId,
          environment,
          organizationId: caller.organizationId,
          trigger: { type: 'webhook', name: triggerName },
          sessionId,
          message,
          body: body ?? {},
          invocationId: flowContainer.ids.uuid(),
        },
        { budgetMs: flowContainer.syncBudgetMs },
      );
      return result.status === 'running'
        ? { sessionId: result.sessionId, status: result.status, aiMessages: result.aiMessages }
        : result;
    },
  }),
];

/** The tools a caller may call: those whose scope its token holds (docs/mcp.md, "Scopes"). */
export function toolsFor(caller: Caller): Tool[] {
  return TOOLS.filter((t) => caller.scopes.includes(t.scope)).map(({ name, description, inputName }) => ({
    name,
    description,
    inputSchema: INPUT_SCHEMAS[inputName] as Tool['inputSchema'],
  }));
}

/** A tool error: the core's code and message (and details) as the client's model reads them. */
export function toolError(error: AppError): CallToolResult {
  const body = { code: error.code, message: error.message, details: error.details };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: { error: body } };
}

/**
 * Runs one tool for the caller. Undefined for a name no tool has (a protocol error for the caller of this);
 * a tool its token may not call, arguments its schema refuses, and every AppError of the core are tool errors.
 */
export async function callTool(name: string, args: unknown, caller: Caller): Promise<CallToolResult | undefined> {
  const found = TOOLS.find((t) => t.name === name);
  if (!found) return undefined;
  try {
    if (!caller.scopes.includes(found.scope)) {
      throw new AppError(403, 'FORBIDDEN', `The tool ${name} needs a token with scope ${found.scope}`);
    }
    const output = await found.run(parseInput(found.input, args ?? {}) as never, caller);
    return { content: [{ type: 'text', text: JSON.stringify(output) }], structuredContent: output };
  } catch (error) {
    if (error instanceof AppError) return toolError(error);
    throw error;
  }
}
