/**
 * What the platform sends an agent's code and what the code may answer (docs/agent-code.md): the schemas of the
 * TRIGGER_EVENT, of the AI message and of a trigger handler's answer. The runtime builds the events as these
 * schemas' input types and checks each answer with the answer schema; the agent SDK's event types are generated
 * from them (`npm run sdk:types`, packages/agent-sdk/src/generated/events.ts), so the two cannot drift.
 */
import * as z from 'zod';
import { environment } from '#core/knowledge/fields';
import { TRIGGER_TYPES } from './definition-parts';

/** The most messages and memory keys one answer may add; past them it is a failed handler (AGENT_CODE_FAILED). */
export const MAX_ANSWER_MESSAGES = 20;
export const MAX_ANSWER_MEMORY_KEYS = 50;

const at = z.string().describe('When the platform sent it (ISO 8601).');

export const triggerEventSchema = z
  .strictObject({
    event: z.literal('TRIGGER_EVENT'),
    agentId: z.string(),
    environment,
    sessionId: z.string(),
    invocationId: z.string(),
    trigger: z.strictObject({ name: z.string(), type: z.enum(TRIGGER_TYPES) }),
    body: z.unknown().describe("The trigger's body (a large one as { truncated, bytes, preview })."),
    message: z.string().optional().describe("The user's message, when the trigger carried one."),
    memory: z.record(z.string(), z.unknown()).describe("The session's memory before the run."),
    at,
  })
  .describe('Sent when a trigger starts (or a message resumes) a run of the agent, before default retrieval.');

export const aiMessageEventSchema = z
  .strictObject({
    event: z.literal('AgentEvents.AI_MESSAGE'),
    agentId: z.string(),
    environment,
    sessionId: z.string(),
    node: z.string().describe('The prompt node that produced it.'),
    displayName: z.string(),
    content: z.string(),
    model: z.string(),
    invocationId: z.string(),
    at,
  })
  .describe('Sent for each AI message of a run (a prompt node with sendAiMessage).');

export const triggerAnswerSchema = z
  .strictObject({
    memory: z
      .record(z.string().min(1).max(100), z.unknown())
      .refine((memory) => Object.keys(memory).length <= MAX_ANSWER_MEMORY_KEYS, {
        message: `at most ${MAX_ANSWER_MEMORY_KEYS} keys`,
      })
      .optional()
      .describe(`Merged into the session's memory (at most ${MAX_ANSWER_MEMORY_KEYS} keys).`),
    messages: z
      .array(z.strictObject({ role: z.enum(['system', 'user', 'assistant']), content: z.string().min(1).max(20_000) }))
      .max(MAX_ANSWER_MESSAGES)
      .optional()
      .describe(
        `Added to the conversation before default retrieval's system message (at most ${MAX_ANSWER_MESSAGES}).`,
      ),
    stop: z.boolean().optional().describe('true: the run ends, completed, before any node.'),
  })
  .describe('What a trigger handler may answer: memory to merge, messages to add, or a decision to stop.');

export type TriggerEventPayload = z.input<typeof triggerEventSchema>;
export type AiMessageEventPayload = z.input<typeof aiMessageEventSchema>;
export type TriggerAnswer = z.output<typeof triggerAnswerSchema>;
