/** Request schemas of the definition, session, webhook and app-event endpoints. */
import * as z from 'zod';
import {
  ATTACHMENT_MAX_BYTES,
  type AttachmentInput,
  decodedBase64Bytes,
  IMAGE_MEDIA_TYPES,
  isBase64,
  MAX_ATTACHMENTS,
} from '#core/flows/attachments';
import { SESSION_STATUSES } from '#core/flows/session';
import { environment, uuid } from '#core/knowledge/fields';
import { pageLimit } from '#core/paging/pages';

/** A webhook's payload becomes session memory; it is stored with the session, so it is kept small. */
export const WEBHOOK_BODY_MAX_BYTES = 64 * 1024;
const MESSAGE_MAX_LENGTH = 10_000;
const name = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must be a node name');

export const definitionPathSchema = z.strictObject({ agentId: uuid, environment });
/** The body is the definition itself; it is checked by validateDefinition, which reports every problem at once. */
export const definitionBodySchema = z.object({ agentId: uuid, environment }).catchall(z.unknown());

/**
 * The version a save is made on (0: none stored yet): a save finding another current version is refused with 409
 * VERSION_CONFLICT instead of replacing it unseen. Not part of the definition (whose top level takes no other field).
 */
export const expectedVersion = z
  .int()
  .min(0)
  .max(9_999_999_999)
  .optional()
  .meta({ description: 'The current version the save was edited from (0: none yet); another one answers 409' });
/** PUT: the definition, and the version it was edited from. */
export const putDefinitionSchema = definitionBodySchema.extend({ expectedVersion });

/** A version number in a path: 1, 2, … */
const versionNumber = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, 'must be a version number: 1, 2, …')
  .transform(Number)
  .meta({ description: 'A version of the definition: 1, 2, …' });

export const listDefinitionVersionsSchema = z.strictObject({
  agentId: uuid,
  environment,
  limit: pageLimit('Versions'),
  nextToken: z.string().min(1).max(1000).optional(),
});
export const definitionVersionPathSchema = z.strictObject({ agentId: uuid, environment, version: versionNumber });
export const restoreDefinitionVersionSchema = definitionVersionPathSchema.extend({ expectedVersion });
export const sessionPathSchema = z.strictObject({ agentId: uuid, environment, sessionId: uuid });

/** GET /dashboard/models takes nothing. */
export const listModelsSchema = z.strictObject({});

export const listSessionsSchema = z.strictObject({
  agentId: uuid,
  environment,
  status: z.enum(SESSION_STATUSES).optional(),
  limit: pageLimit('Sessions'),
  nextToken: z.string().min(1).max(1000).optional(),
});

/** Longest URL of an attachment (what browsers and CDNs commonly accept). */
const ATTACHMENT_URL_MAX_LENGTH = 2048;

/**
 * `{ type: "image", mediaType, data }` (base64) or `{ type: "image", mediaType?, url }` (http(s), fetched through
 * the outbound guard). What needs no bytes is checked here; the bytes' signature and a URL's size when the runtime
 * reads them (core/flows/attachments.ts).
 */
const attachmentSchema = z
  .strictObject({
    type: z.literal('image'),
    mediaType: z
      .string()
      .meta({ enum: [...IMAGE_MEDIA_TYPES], description: 'required with data; with url the bytes decide' })
      .optional(),
    data: z
      .string()
      .meta({ description: `base64, at most ${ATTACHMENT_MAX_BYTES} bytes decoded` })
      .optional(),
    url: z.string().max(ATTACHMENT_URL_MAX_LENGTH).meta({ format: 'uri' }).optional(),
  })
  .superRefine((value, ctx) => {
    const problem = (path: string, rule: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [path], message, params: { rule } });
    if ((value.data === undefined) === (value.url === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'must have either data or url', params: { rule: 'attachment.source' } });
    }
    if (value.mediaType !== undefined && !(IMAGE_MEDIA_TYPES as readonly string[]).includes(value.mediaType)) {
      problem('mediaType', 'attachment.mediaType', `must be one of ${IMAGE_MEDIA_TYPES.join(', ')}`);
    } else if (value.mediaType === undefined && value.data !== undefined) {
      problem('mediaType', 'required', 'is required with data');
    }
    if (value.data !== undefined) {
      if (!isBase64(value.data)) {
        problem('data', 'attachment.base64', 'must be standard base64 with padding (no data: prefix, no line breaks)');
      } else if (decodedBase64Bytes(value.data) > ATTACHMENT_MAX_BYTES) {
        problem('data', 'attachment.maxBytes', `must decode to at most ${ATTACHMENT_MAX_BYTES} bytes`);
      } else if (value.data === '') {
        problem('data', 'attachment.mediaType', 'must hold an image');
      }
    }
    if (value.url !== undefined && !/^https?:\/\/[^/]/i.test(value.url)) {
      problem('url', 'attachment.url', 'must be an http(s) URL');
    }
  })
  .transform((value) => value as AttachmentInput);

const attachments = z.array(attachmentSchema).max(MAX_ATTACHMENTS).optional();

function boundedPayload(value: Record<string, unknown>, ctx: z.RefinementCtx) {
  // Attachments are not memory: they are stored apart, and bounded by their own rules.
  const { attachments: _attachments, ...payload } = value;
  const bytes = Buffer.byteLength(JSON.stringify(payload), 'utf8');
  if (bytes > WEBHOOK_BODY_MAX_BYTES) {
    ctx.addIssue({
      code: 'custom',
      message: `must be at most ${WEBHOOK_BODY_MAX_BYTES} bytes as JSON (it becomes session memory), got ${bytes}`,
      params: { rule: 'maxBytes' },
    });
  }
}

/**
 * Any JSON object. `sessionId` resumes or continues a session, `message` is the user's message and `attachments` the
 * images attached to it; every other field is the trigger's payload, merged into memory. `agentId`, `environment`
 * and `triggerName` come from the path.
 */
export const webhookSchema = z
  .object({
    agentId: uuid,
    environment,
    triggerName: name,
    sessionId: uuid.optional(),
    message: z.string().max(MESSAGE_MAX_LENGTH).optional(),
    attachments,
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
    attachments,
  })
  .superRefine(boundedPayload);
