import { container } from '#composition/container';
import { deleteDocument } from '#core/knowledge/delete-document';
import { httpHandler } from '#shared/http';
import type { DeleteDocumentResponse } from './responses';
import { documentQuerySchema } from './schemas';

export const handler = httpHandler('DeleteDocument', documentQuerySchema, async (input, caller) => ({
  body: { ...(await deleteDocument(container, caller, input)) } satisfies DeleteDocumentResponse,
}));
