import { patchMetadata } from '../../../core/knowledge/documents';
import { container } from '../../../shared/container';
import { httpHandler } from '../../../shared/http';
import { patchMetadataSchema } from './schemas';

export const handler = httpHandler('PatchMetadata', patchMetadataSchema, async (input, caller) => ({
  body: { ...(await patchMetadata(container, caller, input)) },
}));
