import { completeUpdateUpload } from '../../../core/knowledge/documents';
import { container } from '../../../shared/container';
import { httpHandler } from '../../../shared/http';
import { uploadCompleteSchema } from './schemas';

export const handler = httpHandler('UpdateUploadComplete', uploadCompleteSchema, async (input, caller) => ({
  body: { ...(await completeUpdateUpload(container, caller, input.uploadId)) },
}));
