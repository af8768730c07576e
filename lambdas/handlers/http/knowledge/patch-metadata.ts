import { container } from '#composition/container';
import { patchMetadata } from '#core/knowledge/patch-metadata';
import { httpHandler } from '#shared/http';
import type { DocumentResponse } from './responses';
import { patchMetadataSchema } from './schemas';

export const handler = httpHandler('PatchMetadata', patchMetadataSchema, async (input, caller) => ({
  body: { ...(await patchMetadata(container, caller, input)) } satisfies DocumentResponse,
}));
