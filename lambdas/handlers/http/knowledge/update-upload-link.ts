import { container } from '#composition/container';
import { createUpdateUploadLink } from '#core/knowledge/create-update-upload-link';
import { httpHandler } from '#shared/http';
import type { UpdateUploadLinkResponse } from './responses';
import { updateUploadLinkSchema } from './schemas';

export const handler = httpHandler('UpdateUploadLink', updateUploadLinkSchema, async (input, caller) => ({
  body: { ...(await createUpdateUploadLink(container, caller, input)) } satisfies UpdateUploadLinkResponse,
}));
