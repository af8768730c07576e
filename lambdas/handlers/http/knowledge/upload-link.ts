import { container } from '#composition/container';
import { createUploadLink } from '#core/knowledge/create-upload-link';
import { httpHandler } from '#shared/http';
import type { UploadLinkResponse } from './responses';
import { uploadLinkSchema } from './schemas';

export const handler = httpHandler('UploadLink', uploadLinkSchema, async (input, caller) => ({
  body: { ...(await createUploadLink(container, caller, input)) } satisfies UploadLinkResponse,
}));
