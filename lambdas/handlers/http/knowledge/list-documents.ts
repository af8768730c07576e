import { readContainer } from '#composition/container';
import { listDocuments } from '#core/knowledge/list-documents';
import { httpHandler } from '#shared/http';
import type { ListDocumentsResponse } from './responses';
import { listDocumentsSchema } from './schemas';

/** GET /api/v1/knowledge/documents/list */
export const handler = httpHandler('ListDocuments', listDocumentsSchema, async (input, caller) => ({
  body: (await listDocuments(readContainer, caller, input)) satisfies ListDocumentsResponse,
}));
