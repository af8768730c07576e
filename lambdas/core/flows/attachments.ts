/**
 * Images attached to a user message (the `attachments` of a webhook or app-event body). Primary course: each image
 * is read (inline base64 `data`, or fetched from `url` through the outbound guard, its size counted as it arrives),
 * checked (PNG, JPEG, GIF or WebP by the bytes' own signature, at most ATTACHMENT_MAX_BYTES), stored in the
 * documents bucket under `attachments/<agentId>/<environment>/<sessionId>/<id>` and referenced from the user's
 * message by id; before the nodes run, the newest images of the conversation are read back for the model context.
 * Every problem of the caller's attachments is one 400 naming each field and rule (docs/flows.md, "Attachments").
 */

import { AppError, type ErrorDetail, ValidationError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import { DownloadTooLargeError, type ImageDownloader } from '#ports/attachments';
import { OutboundError } from '#ports/flows';
import { IMAGE_MEDIA_TYPES, type ImageMediaType, type ModelImage } from '#ports/model';
import type { BlobStore } from '#ports/services';
import type { MessageAttachment, SessionMessage } from './session';

/** Images per message. */
export const MAX_ATTACHMENTS = 4;
/** Bytes per image, decoded (5 MiB: OpenAI's and Anthropic's per-image limit is of that order). */
export const ATTACHMENT_MAX_BYTES = 5 * 1024 * 1024;
/**
 * Images one model request carries: the newest of the conversation. Older ones stay referenced on the session but
 * are not sent again, so a long conversation with images does not grow every model request (and the function's
 * memory) without bound.
 */
export const MODEL_CONTEXT_MAX_IMAGES = 4;
/** Key prefix of every attachment in the documents bucket; the flow functions may write only under it. */
export const ATTACHMENTS_PREFIX = 'attachments/';
/**
 * Days an attachment object is kept after it was written (the bucket's lifecycle rule `SessionAttachments`): the
 * default SESSION_RETENTION_DAYS, after which an idle session is removed. A session lives that long after its LAST
 * invocation, so it may outlive its images, never the reverse.
 */
export const ATTACHMENT_RETENTION_DAYS = 30;

export { IMAGE_MEDIA_TYPES };

/** An attachment as the request schema (handlers/http/flows/schemas.ts) lets it through. */
export interface AttachmentInput {
  readonly type: 'image';
  readonly mediaType?: ImageMediaType;
  readonly data?: string;
  readonly url?: string;
}

/** An attachment read and checked: its bytes, and the media type its signature proves. */
export interface ReceivedImage {
  readonly mediaType: ImageMediaType;
  readonly bytes: Buffer;
  readonly source: 'data' | 'url';
}

/** Where the attachments of one session live. */
export interface AttachmentScope {
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId: string;
}

export interface AttachmentDeps {
  readonly blobs: BlobStore;
  readonly downloads: ImageDownloader;
}

/**
 * The model refused a request that carried images with a 4xx of its own (it reads no images, or not these): the
 * node fails with this code, whose message says how to declare such a model text-only.
 */
export class ImagesRefusedError extends AppError {
  constructor(model: string, images: number, status: number) {
    super(
      422,
      'MODEL_IMAGES_REFUSED',
      `The model ${model} refused a request with ${images} image(s) (HTTP ${status}). If it cannot read images, ` +
        'the deployment declares it text-only (MODEL_IMAGE_INPUT=false, or BEDROCK_IMAGE_INPUT=false for Bedrock)',
    );
  }
}

/** The media type of an image by its first bytes (its signature), or undefined when it is none of the four. */
export function imageTypeOf(bytes: Uint8Array): ImageMediaType | undefined {
  const starts = (signature: readonly number[], offset = 0) =>
    bytes.length >= offset + signature.length && signature.every((byte, i) => bytes[offset + i] === byte);
  const ascii = (text: string) => [...text].map((char) => char.charCodeAt(0));
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts([0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (starts(ascii('GIF87a')) || starts(ascii('GIF89a'))) return 'image/gif';
  if (starts(ascii('RIFF')) && starts(ascii('WEBP'), 8)) return 'image/webp';
  return undefined;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Whether `text` is standard base64 with its padding (no data: prefix, no line breaks). */
export function isBase64(text: string): boolean {
  return text.length % 4 === 0 && BASE64.test(text);
}

/** The size `text` decodes to, from its length alone (valid base64 assumed). */
export function decodedBase64Bytes(text: string): number {
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  return (text.length / 4) * 3 - padding;
}

/**
 * Reads and checks every attachment: base64 `data` is decoded, a `url` is fetched through the outbound guard (all
 * of them at once). The bytes' signature decides the media type; a declared `mediaType` must agree with it. All
 * problems are reported together as one ValidationError (the request schema has checked the shape already).
 */
export async function receiveAttachments(
  downloads: ImageDownloader,
  inputs: readonly AttachmentInput[],
): Promise<ReceivedImage[]> {
  const problems: ErrorDetail[] = [];
  const received = await Promise.all(
    inputs.map(async (input, index): Promise<ReceivedImage | undefined> => {
      const field = `attachments.${index}.${input.data === undefined ? 'url' : 'data'}`;
      const problem = (rule: string, message: string) => {
        problems.push({ field, rule, message: `${field} ${message}` });
        return undefined;
      };
      let bytes: Buffer;
      if (input.data !== undefined) {
        bytes = Buffer.from(input.data, 'base64');
      } else {
        try {
          bytes = await downloads.download(input.url ?? '', ATTACHMENT_MAX_BYTES);
        } catch (error) {
          if (error instanceof DownloadTooLargeError) {
            return problem('attachment.maxBytes', `must be an image of at most ${ATTACHMENT_MAX_BYTES} bytes`);
          }
          if (error instanceof OutboundError && error.code === 'TARGET_REFUSED') {
            return problem('attachment.refused', `was refused: ${error.message}`);
          }
          if (error instanceof OutboundError) return problem('attachment.fetch', `could not be read: ${error.message}`);
          throw error;
        }
      }
      if (bytes.length > ATTACHMENT_MAX_BYTES) {
        return problem('attachment.maxBytes', `must be an image of at most ${ATTACHMENT_MAX_BYTES} bytes`);
      }
      const mediaType = imageTypeOf(bytes);
      if (mediaType === undefined) {
        return problem('attachment.mediaType', `must be a ${IMAGE_MEDIA_TYPES.join(', ')} image (by its bytes)`);
      }
      if (input.mediaType !== undefined && input.mediaType !== mediaType) {
        return problem('attachment.mediaType', `holds ${mediaType}, not the ${input.mediaType} its mediaType says`);
      }
      return { mediaType, bytes, source: input.data === undefined ? 'url' : 'data' };
    }),
  );
  if (problems.length > 0) {
    problems.sort((a, b) => a.field.localeCompare(b.field, 'en', { numeric: true }));
    throw new ValidationError(problems);
  }
  return received.filter((image): image is ReceivedImage => image !== undefined);
}

export function attachmentKey(scope: AttachmentScope, id: string): string {
  return `${ATTACHMENTS_PREFIX}${scope.agentId}/${scope.environment}/${scope.sessionId}/${id}`;
}

/** Writes each image under the session's prefix; the references go on the user's message. */
export async function storeAttachments(
  blobs: BlobStore,
  scope: AttachmentScope,
  images: readonly ReceivedImage[],
  newId: () => string,
): Promise<{ attachments: MessageAttachment[]; loaded: Map<string, ModelImage> }> {
  const attachments = images.map(
    (image): MessageAttachment => ({
      id: newId(),
      type: 'image',
      mediaType: image.mediaType,
      bytes: image.bytes.length,
      source: image.source,
    }),
  );
  await Promise.all(
    attachments.map((attachment, i) =>
      blobs.put(attachmentKey(scope, attachment.id), images[i].bytes, attachment.mediaType),
    ),
  );
  const loaded = new Map(
    attachments.map((attachment, i) => [
      attachment.id,
      { mediaType: attachment.mediaType, data: images[i].bytes } satisfies ModelImage,
    ]),
  );
  return { attachments, loaded };
}

/** Deletes what storeAttachments wrote when no session came to reference it (the claim was refused). */
export async function forgetAttachments(
  blobs: BlobStore,
  scope: AttachmentScope,
  attachments: readonly MessageAttachment[],
): Promise<void> {
  if (attachments.length > 0) await blobs.delete(attachments.map((a) => attachmentKey(scope, a.id)));
}

/**
 * How long an image is shown to the model after its message: a day less than the lifecycle rule keeps it, so no
 * read ever looks for an object the rule may have removed (the flow functions may not list the bucket, so S3 would
 * answer such a read 403, not 404).
 */
export const ATTACHMENT_SHOWN_MS = (ATTACHMENT_RETENTION_DAYS - 1) * 86_400_000;

/**
 * The images the model context shows: the newest MODEL_CONTEXT_MAX_IMAGES of the conversation's messages sent
 * within ATTACHMENT_SHOWN_MS, read from the bucket unless `loaded` (this invocation's own) has them. An object
 * that is gone all the same is left out.
 */
export async function loadContextImages(
  blobs: BlobStore,
  scope: AttachmentScope,
  messages: readonly SessionMessage[],
  loaded: ReadonlyMap<string, ModelImage>,
  now: Date,
): Promise<Map<string, ModelImage>> {
  const newest = messages
    .filter((message) => now.getTime() - Date.parse(message.at) < ATTACHMENT_SHOWN_MS)
    .flatMap((message) => message.attachments ?? [])
    .slice(-MODEL_CONTEXT_MAX_IMAGES);
  const images = new Map<string, ModelImage>();
  await Promise.all(
    newest.map(async (attachment) => {
      const data = loaded.get(attachment.id)?.data ?? (await blobs.get(attachmentKey(scope, attachment.id)));
      if (data !== undefined) images.set(attachment.id, { mediaType: attachment.mediaType, data });
    }),
  );
  return images;
}
