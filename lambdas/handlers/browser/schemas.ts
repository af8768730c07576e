/**
 * What the BrowserTask function accepts: a BrowserTaskRequest as the flow runtime's Lambda driver sends it. Only the
 * stack's flow functions may invoke it, so this is a second line: a malformed request is answered as a
 * VALIDATION_ERROR naming the field, never run.
 */
import * as z from 'zod';
import type { BrowserTaskRequest } from '#ports/flows';

/** Rendered prompts may be longer than a definition's 20,000 characters (placeholders filled in). */
const PROMPT_MAX_CHARS = 200_000;
const MESSAGES_MAX = 500;

export const browserTaskRequest = z.strictObject({
  prompt: z.string().max(PROMPT_MAX_CHARS),
  url: z.string().min(1).max(8_192).optional(),
  model: z.string().min(1).max(200).optional(),
  context: z
    .strictObject({
      system: z.string().max(PROMPT_MAX_CHARS).optional(),
      messages: z
        .array(z.strictObject({ role: z.enum(['user', 'assistant']), content: z.string().max(PROMPT_MAX_CHARS) }))
        .max(MESSAGES_MAX),
    })
    .optional(),
}) satisfies z.ZodType<BrowserTaskRequest>;
