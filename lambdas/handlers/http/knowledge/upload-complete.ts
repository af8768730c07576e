import { container } from '#composition/container';
import { completeUpload } from '#core/knowledge/complete-upload';
import { httpHandler } from '#shared/http';
import type { UploadCompleteResponse } from './responses';
import { uploadCompleteSchema } from './schemas';

export const handler = httpHandler('UploadComplete', uploadCompleteSchema, async (input, caller) => ({
  body: { ...(await completeUpload(container, caller, input.uploadId)) } satisfies UploadCompleteResponse,
}));
