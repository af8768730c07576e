import { chunkListContainer } from '#composition/chunk-listing';
import { listDocumentChunks } from '#core/knowledge/list-document-chunks';
import { httpHandler } from '#shared/http';
import type { ListDocumentChunksResponse } from './responses';
import { listDocumentChunksSchema } from './schemas';

/** GET /api/v1/knowledge/documents/chunks (and its dashboard mirror): a document's chunks, a page at a time. */
export const handler = httpHandler('ListDocumentChunks', listDocumentChunksSchema, async (input, caller) => ({
  body: (await listDocumentChunks(chunkListContainer, caller, input)) satisfies ListDocumentChunksResponse,
}));
