/** Request schemas of the definition, session, webhook and app-event endpoints. */
import * as z from 'zod';
import { environment, uuid } from '../../../core/knowledge/fields';

/** A webhook's payload becomes session memory; it is stored with the session, so it is kept small. */
export const WEBHOOK_BODY_MAX_BYTES = 64 * 1024;
const MESSAGE_MAX_LENGTH = 10_000;
const name = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must be a node name');

export const definitionPathSchema = z.strictObject({ agentId: uuid, environment });
/** The body is the definition itself; it is checked by validateDefinition, which reports every problem at once. */
export const definitionBodySchema = z.object({ agentId: uuid, environment }).catchall(z.unknown());
export const sessionPathSchema = z.strictObject({ agentId: uuid, environment, sessionId: uuid });

function boundedPayload(value: Record<string, unknown>, ctx: z.RefinementCtx) {
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > WEBHOOK_BODY_MAX_BYTES) {
    ctx.addIssue({
      code: 'custom',
      message: `must be at most ${WEBHOOK_BODY_MAX_BYTES} bytes as JSON (it becomes session memory), got ${bytes}`,
      params: { rule: 'maxBytes' },
    });
  }
}

/**
 * Any JSON object. `sessionId` resumes or continues a session and `message` is the user's message; every other
 * field is the trigger's payload, merged into memory. `agentId`, `environment` and `triggerName` come from the path.
 */
export const webhookSchema = z
  .object({
    agentId: uuid,
    environment,
    triggerName: name,
    sessionId: uuid.optional(),
    message: z.string().max(MESSAGE_MAX_LENGTH).optional(),
  })
  .catchall(z.unknown())
  .superRefine(boundedPayload);

export const appEventSchema = z
  .strictObject({
    agentId: uuid,
    environment,
    appName: name,
    eventName: z.string().min(1).max(100),
    payload: z.record(z.string(), z.unknown()).default({}),
    sessionId: uuid.optional(),
    message: z.string().max(MESSAGE_MAX_LENGTH).optional(),
  })
  .superRefine(boundedPayload);
