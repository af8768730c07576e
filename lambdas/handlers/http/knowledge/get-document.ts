import { readContainer } from '#composition/container';
import { getDocument } from '#core/knowledge/get-document';
import { httpHandler } from '#shared/http';
import type { DocumentResponse } from './responses';
import { documentQuerySchema } from './schemas';

export const handler = httpHandler('GetDocument', documentQuerySchema, async (input, caller) => ({
  body: { ...(await getDocument(readContainer, caller, input)) } satisfies DocumentResponse,
}));
