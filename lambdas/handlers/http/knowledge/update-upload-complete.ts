import { container } from '#composition/container';
import { completeUpdateUpload } from '#core/knowledge/complete-update-upload';
import { httpHandler } from '#shared/http';
import type { UpdateUploadCompleteResponse } from './responses';
import { uploadCompleteSchema } from './schemas';

export const handler = httpHandler('UpdateUploadComplete', uploadCompleteSchema, async (input, caller) => ({
  body: { ...(await completeUpdateUpload(container, caller, input.uploadId)) } satisfies UpdateUploadCompleteResponse,
}));
